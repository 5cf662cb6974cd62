package orphanmetricsexporter

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/keyshare"
	"github.com/orphanwatch/orphanwatch/internal/observe"
)

// exporterAttribute is the attribute of every measurement that names the exporter instance.
const exporterAttribute = "exporter"

// newTelemetry creates the exporter's internal telemetry (metadata.yaml, in mdatagen's shape)
// for the instance set.ID. labelValues, when not nil, is called on collection with a function
// to report each limited label's admitted values; every measurement carries
// `exporter=<component ID>`, as the collector's own exporter metrics do, so two instances in
// one collector read apart.
func newTelemetry(set exporter.Settings, labelValues func(report func(label string, n int64))) (*metadata.TelemetryBuilder, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil || labelValues == nil {
		return tb, err
	}
	id := attribute.String(exporterAttribute, set.ID.String())
	err = tb.RegisterExporterOrphanmetricsLabelValuesCallback(func(_ context.Context, o metric.Int64Observer) error {
		labelValues(func(label string, n int64) {
			o.Observe(n, metric.WithAttributes(id, attribute.String("label", label)))
		})
		return nil
	})
	if err != nil {
		tb.Shutdown()
		return nil, err
	}
	return tb, nil
}

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

// observeTelemetry is the exporter's ObserveTelemetry: its otelcol_exporter_orphanmetrics_*.
func observeTelemetry(tb *metadata.TelemetryBuilder) ObserveTelemetry {
	return ObserveTelemetry{
		Records:             tb.RegisterExporterOrphanmetricsRecordsCallback,
		Traces:              tb.RegisterExporterOrphanmetricsTracesCallback,
		OpenRuns:            tb.RegisterExporterOrphanmetricsOpenRunsCallback,
		HeldRoots:           tb.RegisterExporterOrphanmetricsHeldRootsCallback,
		Evictions:           tb.RegisterExporterOrphanmetricsEvictionsCallback,
		SpansJudged:         tb.RegisterExporterOrphanmetricsSpansJudgedCallback,
		SpansWithoutVerdict: tb.RegisterExporterOrphanmetricsSpansWithoutVerdictCallback,
	}
}

// shareKeys starts key sharing in observe mode through the extension named by `keys`, its
// look-ups counted in key_lookups{outcome} and the traces waiting for a record in
// key_traces_waiting.
func (e *metricsExporter) shareKeys(host component.Host) error {
	exp := attribute.String(exporterAttribute, e.id.String())
	id := metric.WithAttributes(exp)
	byOutcome := map[string]metric.AddOption{}
	for _, o := range []string{keyshare.OutcomeLocal, keyshare.OutcomeRemote, keyshare.OutcomeMissed, keyshare.OutcomeLate} {
		byOutcome[o] = metric.WithAttributes(exp, attribute.String("outcome", o))
	}
	lookups := func(ctx context.Context, outcome string, n int64) {
		e.tel.ExporterOrphanmetricsKeyLookups.Add(ctx, n, byOutcome[outcome])
	}
	if err := e.obs.ShareKeys(host, *e.cfg.Keys, lookups); err != nil {
		return err
	}
	// Registered with the exporter's other instruments: unregistered by their Shutdown.
	return e.tel.RegisterExporterOrphanmetricsKeyTracesWaitingCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(int64(e.obs.KeyTracesWaiting()), id)
		return nil
	})
}
