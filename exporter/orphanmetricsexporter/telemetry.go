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

// registerObserve reports observe mode's state through tb's observable instruments, read from
// obs on collection; every measurement carries id (`exporter=<component ID>`).
func registerObserve(tb *metadata.TelemetryBuilder, id attribute.KeyValue, obs *observe.Observer) error {
	one := metric.WithAttributes(id)
	gauge := func(reg func(metric.Int64Callback) error, read func() int64) error {
		return reg(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(read(), one)
			return nil
		})
	}
	return errors.Join(
		tb.RegisterExporterOrphanmetricsRecordsCallback(func(_ context.Context, o metric.Int64Observer) error {
			waiting, _, kept, pending, _, _ := obs.Kept()
			for state, n := range map[string]int{"waiting": waiting, "kept": kept, "pending": pending} {
				o.Observe(int64(n), metric.WithAttributes(id, attribute.String("state", state)))
			}
			return nil
		}),
		gauge(tb.RegisterExporterOrphanmetricsTracesCallback, func() int64 { _, t, _, _, _, _ := obs.Kept(); return int64(t) }),
		gauge(tb.RegisterExporterOrphanmetricsOpenRunsCallback, func() int64 { _, _, _, _, r, _ := obs.Kept(); return int64(r) }),
		gauge(tb.RegisterExporterOrphanmetricsHeldRootsCallback, func() int64 { _, _, _, _, _, h := obs.Kept(); return int64(h) }),
		gauge(tb.RegisterExporterOrphanmetricsSpansJudgedCallback, func() int64 { return obs.Stats().Spans }),
		tb.RegisterExporterOrphanmetricsEvictionsCallback(func(_ context.Context, o metric.Int64Observer) error {
			for state, n := range obs.Evictions() {
				o.Observe(int64(n), metric.WithAttributes(id, attribute.String("state", state)))
			}
			return nil
		}),
		tb.RegisterExporterOrphanmetricsSpansWithoutVerdictCallback(func(_ context.Context, o metric.Int64Observer) error {
			for reason, n := range obs.Stats().WithoutVerdict {
				o.Observe(n, metric.WithAttributes(id, attribute.String("reason", reason)))
			}
			return nil
		}),
	)
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
