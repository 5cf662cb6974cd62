package metadata

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"go.opentelemetry.io/collector/component"

	"github.com/orphanwatch/orphanwatch/internal/telemetrybuilder"
)

// Meter returns the exporter's meter, whose instrumentation scope is ScopeName.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// Tracer returns the exporter's tracer, whose instrumentation scope is ScopeName.
func Tracer(settings component.TelemetrySettings) trace.Tracer {
	return settings.TracerProvider.Tracer(ScopeName)
}

// TelemetryBuilder holds the instruments of metadata.yaml's telemetry section, a field each, as
// mdatagen's generated builder does; those the exporter shares with the orphanmetrics connector are
// Observe's.
type TelemetryBuilder struct {
	b *telemetrybuilder.Builder
	// Observe holds the instruments the exporter shares with the orphanmetrics connector
	// (otelcol_exporter_orphanmetrics_{evictions, held_roots, label_values, open_runs, records,
	// spans_judged, spans_without_verdict, traces, verdict_latency}).
	telemetrybuilder.Observe
	ExporterOrphanmetricsKeyLookups       metric.Int64Counter
	ExporterOrphanmetricsKeyTracesWaiting metric.Int64ObservableGauge
}

// RegisterExporterOrphanmetricsKeyTracesWaitingCallback sets the callback of the observable ExporterOrphanmetricsKeyTracesWaiting.
func (builder *TelemetryBuilder) RegisterExporterOrphanmetricsKeyTracesWaitingCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ExporterOrphanmetricsKeyTracesWaiting, cb)
}

// Shutdown unregisters every callback registered.
func (builder *TelemetryBuilder) Shutdown() { builder.b.Shutdown() }

// NewTelemetryBuilder creates the instruments of metadata.yaml on the exporter's meter; the error
// joins those of every instrument.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	b := telemetrybuilder.New(Meter(settings))
	builder := &TelemetryBuilder{
		b:       b,
		Observe: telemetrybuilder.NewObserve(b, "otelcol_exporter_orphanmetrics_"),
		ExporterOrphanmetricsKeyLookups: b.Int64Counter("otelcol_exporter_orphanmetrics_key_lookups", "{keys}",
			"Observe mode with keys: idempotency keys of decided traces, by where they bound: local, remote (another member's record), missed (none within the orphan_keys extension's wait); late: a record that came after its key was missed. [Alpha]"),
		ExporterOrphanmetricsKeyTracesWaiting: b.Int64ObservableGauge("otelcol_exporter_orphanmetrics_key_traces_waiting", "{traces}",
			"Observe mode with keys: traces waiting for a key record (the orphan_keys extension's wait). [Alpha]"),
	}
	return builder, b.Err()
}
