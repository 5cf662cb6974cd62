package orphanmetricsexporter

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/keyshare"
	"github.com/orphanwatch/orphanwatch/internal/metricsrecording"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
)

// exporterAttribute is the attribute of every measurement that names the exporter instance.
const exporterAttribute = "exporter"

// newTelemetry creates the exporter's internal telemetry (metadata.yaml, in mdatagen's shape)
// for the instance set.ID and, reporting through it, the exporter's recording of cfg
// (metricsrecording.New): rec's limited labels' admitted values are read on collection
// (otelcol_exporter_orphanmetrics_label_values) and, in observe mode, what it keeps and counts
// (otelcol_exporter_orphanmetrics_*). Every measurement carries `exporter=<component ID>`, as
// the collector's own exporter metrics do, so two instances in one collector read apart.
func newTelemetry(set exporter.Settings, cfg *orphanmetrics.Settings) (*metadata.TelemetryBuilder, metricsrecording.Recording, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, metricsrecording.Recording{}, err
	}
	rec, err := metricsrecording.New(cfg, set.Logger, tb.RecordingTelemetry(attribute.String(exporterAttribute, set.ID.String())))
	if err != nil {
		tb.Shutdown()
		return nil, metricsrecording.Recording{}, err
	}
	return tb, rec, nil
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
	if err := e.rec.Observing.ShareKeys(host, *e.cfg.Keys, lookups); err != nil {
		return err
	}
	// Registered with the exporter's other instruments: unregistered by their Shutdown.
	return e.tel.RegisterExporterOrphanmetricsKeyTracesWaitingCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(int64(e.rec.Observing.KeyTracesWaiting()), id)
		return nil
	})
}
