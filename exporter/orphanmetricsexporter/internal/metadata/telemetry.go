package metadata

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"go.opentelemetry.io/collector/component"

	"github.com/orphanwatch/orphanwatch/internal/metricsrecording"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
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
// mdatagen's generated builder does.
type TelemetryBuilder struct {
	b                                        *telemetrybuilder.Builder
	ExporterOrphanmetricsEvictions           metric.Int64ObservableCounter
	ExporterOrphanmetricsHeldRoots           metric.Int64ObservableGauge
	ExporterOrphanmetricsKeyLookups          metric.Int64Counter
	ExporterOrphanmetricsKeyTracesWaiting    metric.Int64ObservableGauge
	ExporterOrphanmetricsLabelValues         metric.Int64ObservableGauge
	ExporterOrphanmetricsOpenRuns            metric.Int64ObservableGauge
	ExporterOrphanmetricsRecords             metric.Int64ObservableGauge
	ExporterOrphanmetricsSpansJudged         metric.Int64ObservableCounter
	ExporterOrphanmetricsSpansWithoutVerdict metric.Int64ObservableCounter
	ExporterOrphanmetricsTraces              metric.Int64ObservableGauge
	ExporterOrphanmetricsVerdictLatency      metric.Float64Histogram
}

// RegisterExporterOrphanmetricsEvictionsCallback sets the callback of the observable ExporterOrphanmetricsEvictions.
func (builder *TelemetryBuilder) RegisterExporterOrphanmetricsEvictionsCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ExporterOrphanmetricsEvictions, cb)
}

// RegisterExporterOrphanmetricsHeldRootsCallback sets the callback of the observable ExporterOrphanmetricsHeldRoots.
func (builder *TelemetryBuilder) RegisterExporterOrphanmetricsHeldRootsCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ExporterOrphanmetricsHeldRoots, cb)
}

// RegisterExporterOrphanmetricsKeyTracesWaitingCallback sets the callback of the observable ExporterOrphanmetricsKeyTracesWaiting.
func (builder *TelemetryBuilder) RegisterExporterOrphanmetricsKeyTracesWaitingCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ExporterOrphanmetricsKeyTracesWaiting, cb)
}

// RegisterExporterOrphanmetricsOpenRunsCallback sets the callback of the observable ExporterOrphanmetricsOpenRuns.
func (builder *TelemetryBuilder) RegisterExporterOrphanmetricsOpenRunsCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ExporterOrphanmetricsOpenRuns, cb)
}

// RegisterExporterOrphanmetricsRecordsCallback sets the callback of the observable ExporterOrphanmetricsRecords.
func (builder *TelemetryBuilder) RegisterExporterOrphanmetricsRecordsCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ExporterOrphanmetricsRecords, cb)
}

// RegisterExporterOrphanmetricsSpansJudgedCallback sets the callback of the observable ExporterOrphanmetricsSpansJudged.
func (builder *TelemetryBuilder) RegisterExporterOrphanmetricsSpansJudgedCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ExporterOrphanmetricsSpansJudged, cb)
}

// RegisterExporterOrphanmetricsSpansWithoutVerdictCallback sets the callback of the observable ExporterOrphanmetricsSpansWithoutVerdict.
func (builder *TelemetryBuilder) RegisterExporterOrphanmetricsSpansWithoutVerdictCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ExporterOrphanmetricsSpansWithoutVerdict, cb)
}

// RegisterExporterOrphanmetricsTracesCallback sets the callback of the observable ExporterOrphanmetricsTraces.
func (builder *TelemetryBuilder) RegisterExporterOrphanmetricsTracesCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ExporterOrphanmetricsTraces, cb)
}

// RegisterExporterOrphanmetricsLabelValuesCallback sets the callback of the observable ExporterOrphanmetricsLabelValues.
func (builder *TelemetryBuilder) RegisterExporterOrphanmetricsLabelValuesCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ExporterOrphanmetricsLabelValues, cb)
}

// RecordingTelemetry is what the exporter's recording reports through (metricsrecording.New): the
// label_values gauge, the observe-mode instruments and verdict_latency, every measurement
// carrying id.
func (builder *TelemetryBuilder) RecordingTelemetry(id attribute.KeyValue) metricsrecording.Telemetry {
	return metricsrecording.Telemetry{
		ID:          id,
		LabelValues: builder.RegisterExporterOrphanmetricsLabelValuesCallback,
		Observe: orphanmetrics.ObserveTelemetry{
			Records:             builder.RegisterExporterOrphanmetricsRecordsCallback,
			Traces:              builder.RegisterExporterOrphanmetricsTracesCallback,
			OpenRuns:            builder.RegisterExporterOrphanmetricsOpenRunsCallback,
			HeldRoots:           builder.RegisterExporterOrphanmetricsHeldRootsCallback,
			Evictions:           builder.RegisterExporterOrphanmetricsEvictionsCallback,
			SpansJudged:         builder.RegisterExporterOrphanmetricsSpansJudgedCallback,
			SpansWithoutVerdict: builder.RegisterExporterOrphanmetricsSpansWithoutVerdictCallback,
		},
		VerdictLatency: builder.ExporterOrphanmetricsVerdictLatency,
	}
}

// Shutdown unregisters every callback registered.
func (builder *TelemetryBuilder) Shutdown() { builder.b.Shutdown() }

// NewTelemetryBuilder creates the instruments of metadata.yaml on the exporter's meter; the error
// joins those of every instrument.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	b := telemetrybuilder.New(Meter(settings))
	builder := &TelemetryBuilder{
		b: b,
		ExporterOrphanmetricsEvictions: b.Int64ObservableCounter("otelcol_exporter_orphanmetrics_evictions", "{items}",
			"Observe mode: state evicted to stay within the configured limits, by state. [Alpha]"),
		ExporterOrphanmetricsHeldRoots: b.Int64ObservableGauge("otelcol_exporter_orphanmetrics_held_roots", "{spans}",
			"Observe mode: verdicts of abandoned roots held until abandoned_root_hold (unset: decision_wait) after they arrived, so that later orphans deepen their reach. [Alpha]"),
		ExporterOrphanmetricsKeyLookups: b.Int64Counter("otelcol_exporter_orphanmetrics_key_lookups", "{keys}",
			"Observe mode with keys: idempotency keys of decided traces, by where they bound: local, remote (another member's record), missed (none within the orphan_keys extension's wait); late: a record that came after its key was missed. [Alpha]"),
		ExporterOrphanmetricsKeyTracesWaiting: b.Int64ObservableGauge("otelcol_exporter_orphanmetrics_key_traces_waiting", "{traces}",
			"Observe mode with keys: traces waiting for a key record (the orphan_keys extension's wait). [Alpha]"),
		ExporterOrphanmetricsLabelValues: b.Int64ObservableGauge("otelcol_exporter_orphanmetrics_label_values", "{values}",
			"Distinct values admitted for a label taken from span data; at label_limits, later new values are exported as other. [Alpha]"),
		ExporterOrphanmetricsOpenRuns: b.Int64ObservableGauge("otelcol_exporter_orphanmetrics_open_runs", "{runs}",
			"Observe mode: runs left open by a decision (their final attempt so far not terminal). [Alpha]"),
		ExporterOrphanmetricsRecords: b.Int64ObservableGauge("otelcol_exporter_orphanmetrics_records", "{records}",
			"Observe mode: span records kept, by state: waiting (for their trace's decision), kept (between decisions, for later spans of their trace), pending (of those, waiting for their root or chain). [Alpha]"),
		ExporterOrphanmetricsSpansJudged: b.Int64ObservableCounter("otelcol_exporter_orphanmetrics_spans_judged", "{spans}",
			"Observe mode: spans whose verdicts were decided and counted. [Alpha]"),
		ExporterOrphanmetricsSpansWithoutVerdict: b.Int64ObservableCounter("otelcol_exporter_orphanmetrics_spans_without_verdict", "{spans}",
			"Observe mode: spans that got no verdict or liveness unknown, by reason. [Alpha]"),
		ExporterOrphanmetricsTraces: b.Int64ObservableGauge("otelcol_exporter_orphanmetrics_traces", "{traces}",
			"Observe mode: traces whose records wait for their decision. [Alpha]"),
		ExporterOrphanmetricsVerdictLatency: b.Float64Histogram("otelcol_exporter_orphanmetrics_verdict_latency", "s",
			"Observe mode: time from a request's root span arriving to the last verdict counted for the request, observed once nothing more can come for it. [Alpha]",
			0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600),
	}
	return builder, b.Err()
}
