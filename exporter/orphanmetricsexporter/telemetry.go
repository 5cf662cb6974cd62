package orphanmetricsexporter

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/keyshare"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
)

// exporterAttribute is the attribute of every measurement that names the exporter instance.
const exporterAttribute = "exporter"

// newTelemetry creates the exporter's internal telemetry (metadata.yaml, in mdatagen's shape)
// for the instance set.ID and, with it, the Recorder and, in observe mode, the Observing of cfg
// (telemetrybuilder.Observe.Recording): rec's limited labels' admitted values are read on
// collection (otelcol_exporter_orphanmetrics_label_values), and obs reports through the
// exporter's otelcol_exporter_orphanmetrics_* instruments. Every measurement carries
// `exporter=<component ID>`, as the collector's own exporter metrics do, so two instances in
// one collector read apart.
func newTelemetry(set exporter.Settings, cfg *orphanmetrics.Settings) (*metadata.TelemetryBuilder, *orphanmetrics.Recorder, *orphanmetrics.Observing, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, nil, nil, err
	}
	rec, obs, err := tb.Recording(cfg, set.Logger, attribute.String(exporterAttribute, set.ID.String()))
	if err != nil {
		return nil, nil, nil, err
	}
	return tb, rec, obs, nil
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
