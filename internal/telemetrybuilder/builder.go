// Package telemetrybuilder is the code the components' internal/metadata packages share to
// create the instruments their metadata.yaml declares (mdatagen's schema), in the shape
// mdatagen's generated TelemetryBuilder has: instruments created on the component's meter with
// their errors joined, callbacks of observable instruments registered and unregistered at
// Shutdown. Each metadata package keeps only its own list: the fields, names, units and
// descriptions; TestMetadataMatchesTelemetry of each component checks the list against
// metadata.yaml and documentation.md.
package telemetrybuilder

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
)

// Builder creates instruments on one meter and keeps the registrations of their callbacks.
// Its methods are safe for concurrent use.
type Builder struct {
	meter metric.Meter

	mu            sync.Mutex
	errs          error
	registrations []metric.Registration
}

// New returns a builder creating instruments on meter.
func New(meter metric.Meter) *Builder { return &Builder{meter: meter} }

// Err returns the errors of the instruments created so far, joined (nil when there were none).
func (b *Builder) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.errs
}

func (b *Builder) fail(err error) {
	if err == nil {
		return
	}
	b.mu.Lock()
	b.errs = errors.Join(b.errs, err)
	b.mu.Unlock()
}

// Int64Counter creates a monotonic int sum named name, with its unit and description.
func (b *Builder) Int64Counter(name, unit, description string) metric.Int64Counter {
	return create(b, b.meter.Int64Counter, name, unit, description)
}

// Int64UpDownCounter creates a non-monotonic int sum.
func (b *Builder) Int64UpDownCounter(name, unit, description string) metric.Int64UpDownCounter {
	return create(b, b.meter.Int64UpDownCounter, name, unit, description)
}

// Int64ObservableGauge creates an int gauge read by a callback (Register).
func (b *Builder) Int64ObservableGauge(name, unit, description string) metric.Int64ObservableGauge {
	return create(b, b.meter.Int64ObservableGauge, name, unit, description)
}

// Int64ObservableCounter creates a monotonic int sum read by a callback (Register).
func (b *Builder) Int64ObservableCounter(name, unit, description string) metric.Int64ObservableCounter {
	return create(b, b.meter.Int64ObservableCounter, name, unit, description)
}

// Float64Histogram creates a double histogram with the explicit bucket boundaries bounds.
func (b *Builder) Float64Histogram(name, unit, description string, bounds ...float64) metric.Float64Histogram {
	return create(b, b.meter.Float64Histogram, name, unit, description,
		metric.Float64HistogramOption(metric.WithExplicitBucketBoundaries(bounds...)))
}

// create makes an instrument with one of the meter's methods (newInstrument), its unit,
// description and further options, and joins its error to b's. The unit and description
// options (metric.InstrumentOption) are options of every kind of instrument.
func create[I, O any](b *Builder, newInstrument func(string, ...O) (I, error), name, unit, description string, more ...O) I {
	opts := append([]O{any(metric.WithUnit(unit)).(O), any(metric.WithDescription(description)).(O)}, more...)
	i, err := newInstrument(name, opts...)
	b.fail(err)
	return i
}

// Register sets cb as the callback of the observable instrument inst, called on every
// collection until Shutdown, as mdatagen's Register<Metric>Callback does (an error cb returns
// is dropped there too: what it observed is reported).
func (b *Builder) Register(inst metric.Int64Observable, cb metric.Int64Callback) error {
	reg, err := b.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		_ = cb(ctx, &observerInt64{inst: inst, obs: o})
		return nil
	}, inst)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.registrations = append(b.registrations, reg)
	return nil
}

// Shutdown unregisters every callback registered so far.
func (b *Builder) Shutdown() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, reg := range b.registrations {
		_ = reg.Unregister()
	}
	b.registrations = nil
}

// observerInt64 observes into one instrument of a multi-instrument callback.
type observerInt64 struct {
	embedded.Int64Observer
	inst metric.Int64Observable
	obs  metric.Observer
}

func (oi *observerInt64) Observe(value int64, opts ...metric.ObserveOption) {
	oi.obs.ObserveInt64(oi.inst, value, opts...)
}
