package orphanmetrics // import "github.com/orphanwatch/orphanwatch/internal/orphanmetrics"

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/orphanwatch/orphanwatch/internal/observe"
)

// ObserveTelemetry is how observe mode's observable instruments take their callbacks: each
// field registers one with its instrument, as mdatagen's Register<Metric>Callback does (the
// exporter's otelcol_exporter_orphanmetrics_*, the connector's
// otelcol_connector_orphanmetrics_*; metadata.yaml of each). A nil field is not reported.
type ObserveTelemetry struct {
	Records             func(metric.Int64Callback) error // gauge by state: waiting, kept, pending
	Traces              func(metric.Int64Callback) error // gauge
	OpenRuns            func(metric.Int64Callback) error // gauge
	HeldRoots           func(metric.Int64Callback) error // gauge
	Evictions           func(metric.Int64Callback) error // cumulative counter by state
	SpansJudged         func(metric.Int64Callback) error // cumulative counter
	SpansWithoutVerdict func(metric.Int64Callback) error // cumulative counter by reason
}

// RegisterTelemetry reports o's state through t's instruments, read from o's observer on
// collection; every measurement carries id (`exporter=<component ID>`,
// `connector=<component ID>`). It returns the registrations' errors joined.
func (o *Observing) RegisterTelemetry(t ObserveTelemetry, id attribute.KeyValue) error {
	return registerObserve(t, id, o.Observer())
}

// registerObserve reports observe mode's state through t's instruments, read from obs on
// collection; every measurement carries id.
func registerObserve(t ObserveTelemetry, id attribute.KeyValue, obs *observe.Observer) error {
	one := metric.WithAttributes(id)
	by := func(key string, read func() map[string]int64) func(context.Context, metric.Int64Observer) error {
		return func(_ context.Context, o metric.Int64Observer) error {
			for v, n := range read() {
				o.Observe(n, metric.WithAttributes(id, attribute.String(key, v)))
			}
			return nil
		}
	}
	gauge := func(read func() int64) func(context.Context, metric.Int64Observer) error {
		return func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(read(), one)
			return nil
		}
	}
	var errs []error
	register := func(reg func(metric.Int64Callback) error, cb metric.Int64Callback) {
		if reg != nil {
			errs = append(errs, reg(cb))
		}
	}
	register(t.Records, by("state", func() map[string]int64 {
		waiting, _, kept, pending, _, _ := obs.Kept()
		return map[string]int64{"waiting": int64(waiting), "kept": int64(kept), "pending": int64(pending)}
	}))
	register(t.Traces, gauge(func() int64 { _, n, _, _, _, _ := obs.Kept(); return int64(n) }))
	register(t.OpenRuns, gauge(func() int64 { _, _, _, _, n, _ := obs.Kept(); return int64(n) }))
	register(t.HeldRoots, gauge(func() int64 { _, _, _, _, _, n := obs.Kept(); return int64(n) }))
	register(t.SpansJudged, gauge(func() int64 { return obs.Stats().Spans }))
	register(t.Evictions, by("state", func() map[string]int64 {
		out := map[string]int64{}
		for state, n := range obs.Evictions() {
			out[state] = int64(n)
		}
		return out
	}))
	register(t.SpansWithoutVerdict, by("reason", func() map[string]int64 { return obs.Stats().WithoutVerdict }))
	return errors.Join(errs...)
}
