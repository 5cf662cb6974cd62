package orphanmetricsconnector // import "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"

import (
	"context"

	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

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
	// flushOK and flushFailed are the measurement options of a successful and a failed flush.
	flushOK, flushFailed metric.MeasurementOption
}

// newTelemetry creates the instruments of the connector instance set.ID and, with them, the
// Recorder and, in observe mode, the Observing of cfg (telemetrybuilder.Observe.Recording):
// rec's limited labels' admitted values are read on collection
// (otelcol_connector_orphanmetrics_label_values), and obs reports through the connector's
// otelcol_connector_orphanmetrics_* instruments: records, traces, open_runs, held_roots,
// evictions, spans_judged, spans_without_verdict (read on collection, as the exporter's) and
// verdict_latency.
func newTelemetry(set connector.Settings, cfg *orphanmetrics.Settings) (*telemetry, *orphanmetrics.Recorder, *orphanmetrics.Observing, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, nil, nil, err
	}
	id := attribute.String(connectorAttribute, set.ID.String())
	rec, obs, err := tb.Recording(cfg, set.Logger, id)
	if err != nil {
		return nil, nil, nil, err
	}
	return &telemetry{
		TelemetryBuilder: tb,
		flushOK:          metric.WithAttributeSet(attribute.NewSet(id, attribute.String(resultAttribute, "success"))),
		flushFailed:      metric.WithAttributeSet(attribute.NewSet(id, attribute.String(resultAttribute, "failure"))),
	}, rec, obs, nil
}

// flushed counts one flush with its result.
func (t *telemetry) flushed(ctx context.Context, ok bool) {
	opt := t.flushOK
	if !ok {
		opt = t.flushFailed
	}
	t.ConnectorOrphanmetricsFlushes.Add(ctx, 1, opt)
}
