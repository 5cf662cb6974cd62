package metadata // import "github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ExporterAttribute is the attribute of every measurement that names the exporter instance.
const ExporterAttribute = "exporter"

// TelemetryBuilder holds the exporter's internal telemetry (documentation.md), written by hand
// in the shape mdatagen generates. Every measurement carries `exporter=<component ID>`, as
// the collector's own exporter metrics do, so two instances in one collector read apart.
type TelemetryBuilder struct {
	// ExporterOrphanmetricsLabelValues is the number of distinct values admitted per limited
	// label (attribute `label`).
	ExporterOrphanmetricsLabelValues metric.Int64ObservableGauge

	registrations []metric.Registration
}

// NewTelemetryBuilder creates the instruments of the exporter instance id. labelValues, when
// not nil, is called on collection with a function to report each label's admitted values.
func NewTelemetryBuilder(settings component.TelemetrySettings, id component.ID, labelValues func(report func(label string, n int64))) (*TelemetryBuilder, error) {
	m := settings.MeterProvider.Meter(ScopeName)
	tb := &TelemetryBuilder{}
	var err error
	tb.ExporterOrphanmetricsLabelValues, err = m.Int64ObservableGauge("otelcol_exporter_orphanmetrics_label_values",
		metric.WithDescription("Distinct values admitted for a label taken from span data; at label_limits, later new values are exported as other."),
		metric.WithUnit("{values}"))
	if err != nil || labelValues == nil {
		return tb, err
	}
	idAttr := attribute.String(ExporterAttribute, id.String())
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		labelValues(func(label string, n int64) {
			o.ObserveInt64(tb.ExporterOrphanmetricsLabelValues, n, metric.WithAttributes(idAttr, attribute.String("label", label)))
		})
		return nil
	}, tb.ExporterOrphanmetricsLabelValues)
	if reg != nil {
		tb.registrations = append(tb.registrations, reg)
	}
	return tb, err
}

// Shutdown unregisters the observed gauge's callback.
func (tb *TelemetryBuilder) Shutdown() {
	for _, r := range tb.registrations {
		_ = r.Unregister()
	}
	tb.registrations = nil
}
