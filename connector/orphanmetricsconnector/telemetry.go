package orphanmetricsconnector // import "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"

import (
	"context"

	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/metricsrecording"
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

// newTelemetry creates the instruments of the connector instance set.ID and, reporting through
// them, the connector's recording of cfg (metricsrecording.New): rec's limited labels' admitted
// values are read on collection (otelcol_connector_orphanmetrics_label_values) and, in observe
// mode, what it keeps and counts (records, traces, open_runs, held_roots, evictions,
// spans_judged, spans_without_verdict: read on collection, as the exporter's) and
// verdict_latency.
func newTelemetry(set connector.Settings, cfg *orphanmetrics.Settings) (*telemetry, metricsrecording.Recording, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, metricsrecording.Recording{}, err
	}
	id := attribute.String(connectorAttribute, set.ID.String())
	rec, err := metricsrecording.New(cfg, set.Logger, tb.RecordingTelemetry(id))
	if err != nil {
		tb.Shutdown()
		return nil, metricsrecording.Recording{}, err
	}
	return &telemetry{
		TelemetryBuilder: tb,
		flushOK:          metric.WithAttributeSet(attribute.NewSet(id, attribute.String(resultAttribute, "success"))),
		flushFailed:      metric.WithAttributeSet(attribute.NewSet(id, attribute.String(resultAttribute, "failure"))),
	}, rec, nil
}

// flushed counts one flush with its result.
func (t *telemetry) flushed(ctx context.Context, ok bool) {
	opt := t.flushOK
	if !ok {
		opt = t.flushFailed
	}
	t.ConnectorOrphanmetricsFlushes.Add(ctx, 1, opt)
}
