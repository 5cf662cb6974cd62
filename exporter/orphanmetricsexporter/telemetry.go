package orphanmetricsexporter

import (
	"context"

	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
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
