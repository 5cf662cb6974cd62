package metadata

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"go.opentelemetry.io/collector/component"

	"github.com/orphanwatch/orphanwatch/internal/telemetrybuilder"
)

// Meter returns the connector's meter, whose instrumentation scope is ScopeName.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// Tracer returns the connector's tracer, whose instrumentation scope is ScopeName.
func Tracer(settings component.TelemetrySettings) trace.Tracer {
	return settings.TracerProvider.Tracer(ScopeName)
}

// TelemetryBuilder holds the instruments of metadata.yaml's telemetry section, a field each, as
// mdatagen's generated builder does; those the connector shares with the orphanmetrics exporter are
// Observe's.
type TelemetryBuilder struct {
	b *telemetrybuilder.Builder
	// Observe holds the instruments the connector shares with the orphanmetrics exporter
	// (otelcol_connector_orphanmetrics_{evictions, held_roots, label_values, open_runs, records,
	// spans_judged, spans_without_verdict, traces, verdict_latency}).
	telemetrybuilder.Observe
	ConnectorOrphanmetricsFlushes metric.Int64Counter
}

// Shutdown unregisters every callback registered.
func (builder *TelemetryBuilder) Shutdown() { builder.b.Shutdown() }

// NewTelemetryBuilder creates the instruments of metadata.yaml on the connector's meter; the error
// joins those of every instrument.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	b := telemetrybuilder.New(Meter(settings))
	builder := &TelemetryBuilder{
		b:       b,
		Observe: telemetrybuilder.NewObserve(b, "otelcol_connector_orphanmetrics_"),
		ConnectorOrphanmetricsFlushes: b.Int64Counter("otelcol_connector_orphanmetrics_flushes", "{flushes}",
			"Flushes of the accumulated metrics to the metrics pipeline, by result; a failed flush is retried by the next one, the sums being cumulative. [Alpha]"),
	}
	return builder, b.Err()
}
