package orphanmetricsconnector // import "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"

import (
	"context"

	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
)

// connectorAttribute is the attribute of every measurement that names the connector instance.
const connectorAttribute = "connector"

// resultAttribute is the attribute of otelcol_connector_orphanmetrics_flushes: success or
// failure, whether the metrics pipeline accepted the flush.
const resultAttribute = "result"

// telemetry is the connector's internal telemetry: the instruments of metadata.yaml
// (metadata.TelemetryBuilder, in mdatagen's shape) and the `connector=<component ID>`
// attribute every measurement carries, so that two instances in one collector
// (`orphanmetrics`, `orphanmetrics/other`) read apart.
type telemetry struct {
	*metadata.TelemetryBuilder
	id attribute.KeyValue
	// flushOK and flushFailed are the measurement options of a successful and a failed flush.
	flushOK, flushFailed metric.MeasurementOption
}

// newTelemetry creates the instruments of the connector instance set.ID; rec's limited labels'
// admitted values are read on collection (otelcol_connector_orphanmetrics_label_values).
func newTelemetry(set connector.Settings, rec *orphanmetrics.Recorder) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	id := attribute.String(connectorAttribute, set.ID.String())
	t := &telemetry{
		TelemetryBuilder: tb,
		id:               id,
		flushOK:          metric.WithAttributeSet(attribute.NewSet(id, attribute.String(resultAttribute, "success"))),
		flushFailed:      metric.WithAttributeSet(attribute.NewSet(id, attribute.String(resultAttribute, "failure"))),
	}
	if err := rec.RegisterLabelValues(tb.RegisterConnectorOrphanmetricsLabelValuesCallback, id); err != nil {
		tb.Shutdown()
		return nil, err
	}
	return t, nil
}

// flushed counts one flush with its result.
func (t *telemetry) flushed(ctx context.Context, ok bool) {
	opt := t.flushOK
	if !ok {
		opt = t.flushFailed
	}
	t.ConnectorOrphanmetricsFlushes.Add(ctx, 1, opt)
}

// observing returns observe mode for rec (cfg.Mode observe) reporting through the connector's
// otelcol_connector_orphanmetrics_* instruments: records, traces, open_runs, held_roots,
// evictions, spans_judged, spans_without_verdict (read on collection, as the exporter's) and
// verdict_latency.
func (t *telemetry) observing(cfg *orphanmetrics.Settings, rec *orphanmetrics.Recorder, logger *zap.Logger) (*orphanmetrics.Observing, error) {
	one := metric.WithAttributes(t.id)
	latency := func(s float64) { t.ConnectorOrphanmetricsVerdictLatency.Record(context.Background(), s, one) }
	obs, err := orphanmetrics.NewObserving(cfg, rec, logger, latency, nil)
	if err != nil {
		return nil, err
	}
	err = obs.RegisterTelemetry(orphanmetrics.ObserveTelemetry{
		Records:             t.RegisterConnectorOrphanmetricsRecordsCallback,
		Traces:              t.RegisterConnectorOrphanmetricsTracesCallback,
		OpenRuns:            t.RegisterConnectorOrphanmetricsOpenRunsCallback,
		HeldRoots:           t.RegisterConnectorOrphanmetricsHeldRootsCallback,
		Evictions:           t.RegisterConnectorOrphanmetricsEvictionsCallback,
		SpansJudged:         t.RegisterConnectorOrphanmetricsSpansJudgedCallback,
		SpansWithoutVerdict: t.RegisterConnectorOrphanmetricsSpansWithoutVerdictCallback,
	}, t.id)
	if err != nil {
		return nil, err
	}
	return obs, nil
}
