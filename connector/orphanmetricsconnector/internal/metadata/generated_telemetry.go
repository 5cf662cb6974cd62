package metadata // import "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ConnectorAttribute is the attribute of every measurement that names the connector instance.
const ConnectorAttribute = "connector"

// TelemetryBuilder holds the connector's internal telemetry (documentation.md), written by hand
// in the shape mdatagen generates. Every measurement carries `connector=<component ID>`, so
// two instances in one collector read apart.
type TelemetryBuilder struct {
	// ConnectorOrphanmetricsLabelValues is the number of distinct values admitted per limited
	// label (attribute `label`).
	ConnectorOrphanmetricsLabelValues metric.Int64ObservableGauge
	// ConnectorOrphanmetricsFlushes counts the flushes of the accumulated metrics to the next
	// consumer, by result (attribute `result`: success, failure).
	ConnectorOrphanmetricsFlushes metric.Int64Counter

	id            attribute.KeyValue
	registrations []metric.Registration
}

// NewTelemetryBuilder creates the instruments of the connector instance id. labelValues, when
// not nil, is called on collection with a function to report each label's admitted values.
func NewTelemetryBuilder(settings component.TelemetrySettings, id component.ID, labelValues func(report func(label string, n int64))) (*TelemetryBuilder, error) {
	m := settings.MeterProvider.Meter(ScopeName)
	tb := &TelemetryBuilder{id: attribute.String(ConnectorAttribute, id.String())}
	var err error
	tb.ConnectorOrphanmetricsFlushes, err = m.Int64Counter("otelcol_connector_orphanmetrics_flushes",
		metric.WithDescription("Flushes of the accumulated metrics to the metrics pipeline, by result; a failed flush is retried by the next one, the sums being cumulative."),
		metric.WithUnit("{flushes}"))
	if err != nil {
		return tb, err
	}
	tb.ConnectorOrphanmetricsLabelValues, err = m.Int64ObservableGauge("otelcol_connector_orphanmetrics_label_values",
		metric.WithDescription("Distinct values admitted for a label taken from span data; at label_limits, later new values are exported as other."),
		metric.WithUnit("{values}"))
	if err != nil || labelValues == nil {
		return tb, err
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		labelValues(func(label string, n int64) {
			o.ObserveInt64(tb.ConnectorOrphanmetricsLabelValues, n, metric.WithAttributes(tb.id, attribute.String("label", label)))
		})
		return nil
	}, tb.ConnectorOrphanmetricsLabelValues)
	if reg != nil {
		tb.registrations = append(tb.registrations, reg)
	}
	return tb, err
}

// Flushed counts one flush with its result.
func (tb *TelemetryBuilder) Flushed(ctx context.Context, ok bool) {
	result := "success"
	if !ok {
		result = "failure"
	}
	tb.ConnectorOrphanmetricsFlushes.Add(ctx, 1, metric.WithAttributes(tb.id, attribute.String("result", result)))
}

// Shutdown unregisters the observed gauge's callback.
func (tb *TelemetryBuilder) Shutdown() {
	for _, r := range tb.registrations {
		_ = r.Unregister()
	}
	tb.registrations = nil
}
