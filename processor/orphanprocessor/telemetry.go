package orphanprocessor

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// processorAttribute is the attribute of every measurement that names the processor instance.
const processorAttribute = "processor"

// telemetry is the processor's internal telemetry: the instruments of metadata.yaml
// (metadata.TelemetryBuilder, in mdatagen's shape) and the `processor=<component ID>`
// attribute every measurement carries, as the core batch and memory_limiter processors do, so
// that two instances in one collector (`orphan`, `orphan/custom`) read apart. Record with the
// ID option, or With for a measurement with one more attribute.
type telemetry struct {
	*metadata.TelemetryBuilder
	// ID is the measurement option carrying only the processor's component ID.
	ID metric.MeasurementOption
	id attribute.KeyValue
	// with caches the options of With, keyed by attribute key and value.
	with sync.Map
}

// kept is what the processor's correlator keeps, reported on collection.
type kept struct {
	Roots, Keys, Pending, OpenRuns, Context int64
}

// newTelemetry creates the instruments of the processor instance set.ID. observe, when not
// nil, is called on collection to report what the correlator keeps (the observed gauges).
func newTelemetry(set processor.Settings, observe func() kept) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	t := &telemetry{TelemetryBuilder: tb, id: attribute.String(processorAttribute, set.ID.String())}
	t.ID = metric.WithAttributeSet(attribute.NewSet(t.id))
	if observe == nil {
		return t, nil
	}
	gauge := func(v func(kept) int64) metric.Int64Callback {
		return func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(v(observe()), t.ID)
			return nil
		}
	}
	errs := errors.Join(
		tb.RegisterProcessorOrphanRootRecordsCallback(gauge(func(k kept) int64 { return k.Roots })),
		tb.RegisterProcessorOrphanIdempotencyKeysCallback(gauge(func(k kept) int64 { return k.Keys })),
		tb.RegisterProcessorOrphanPendingSpansCallback(gauge(func(k kept) int64 { return k.Pending })),
		tb.RegisterProcessorOrphanOpenRunsCallback(gauge(func(k kept) int64 { return k.OpenRuns })),
		tb.RegisterProcessorOrphanContextSpansCallback(gauge(func(k kept) int64 { return k.Context })),
	)
	if errs != nil {
		tb.Shutdown()
		return nil, errs
	}
	return t, nil
}

// With returns the measurement option carrying the processor's ID and key=value.
func (t *telemetry) With(key, value string) metric.MeasurementOption {
	k := key + "\x00" + value
	if o, ok := t.with.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	o, _ := t.with.LoadOrStore(k, metric.WithAttributeSet(attribute.NewSet(t.id, attribute.String(key, value))))
	return o.(metric.MeasurementOption)
}
