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

// Meter returns the connector's meter, whose instrumentation scope is ScopeName.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// Tracer returns the connector's tracer, whose instrumentation scope is ScopeName.
func Tracer(settings component.TelemetrySettings) trace.Tracer {
	return settings.TracerProvider.Tracer(ScopeName)
}

// TelemetryBuilder holds the instruments of metadata.yaml's telemetry section, a field each, as
// mdatagen's generated builder does.
type TelemetryBuilder struct {
	b                                         *telemetrybuilder.Builder
	ConnectorOrphanmetricsEvictions           metric.Int64ObservableCounter
	ConnectorOrphanmetricsFlushes             metric.Int64Counter
	ConnectorOrphanmetricsHeldRoots           metric.Int64ObservableGauge
	ConnectorOrphanmetricsLabelValues         metric.Int64ObservableGauge
	ConnectorOrphanmetricsOpenRuns            metric.Int64ObservableGauge
	ConnectorOrphanmetricsRecords             metric.Int64ObservableGauge
	ConnectorOrphanmetricsSpansJudged         metric.Int64ObservableCounter
	ConnectorOrphanmetricsSpansWithoutVerdict metric.Int64ObservableCounter
	ConnectorOrphanmetricsTraces              metric.Int64ObservableGauge
	ConnectorOrphanmetricsVerdictLatency      metric.Float64Histogram
}

// RegisterConnectorOrphanmetricsLabelValuesCallback sets the callback of the observable ConnectorOrphanmetricsLabelValues.
func (builder *TelemetryBuilder) RegisterConnectorOrphanmetricsLabelValuesCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ConnectorOrphanmetricsLabelValues, cb)
}

// RegisterConnectorOrphanmetricsEvictionsCallback sets the callback of the observable ConnectorOrphanmetricsEvictions.
func (builder *TelemetryBuilder) RegisterConnectorOrphanmetricsEvictionsCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ConnectorOrphanmetricsEvictions, cb)
}

// RegisterConnectorOrphanmetricsHeldRootsCallback sets the callback of the observable ConnectorOrphanmetricsHeldRoots.
func (builder *TelemetryBuilder) RegisterConnectorOrphanmetricsHeldRootsCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ConnectorOrphanmetricsHeldRoots, cb)
}

// RegisterConnectorOrphanmetricsOpenRunsCallback sets the callback of the observable ConnectorOrphanmetricsOpenRuns.
func (builder *TelemetryBuilder) RegisterConnectorOrphanmetricsOpenRunsCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ConnectorOrphanmetricsOpenRuns, cb)
}

// RegisterConnectorOrphanmetricsRecordsCallback sets the callback of the observable ConnectorOrphanmetricsRecords.
func (builder *TelemetryBuilder) RegisterConnectorOrphanmetricsRecordsCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ConnectorOrphanmetricsRecords, cb)
}

// RegisterConnectorOrphanmetricsSpansJudgedCallback sets the callback of the observable ConnectorOrphanmetricsSpansJudged.
func (builder *TelemetryBuilder) RegisterConnectorOrphanmetricsSpansJudgedCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ConnectorOrphanmetricsSpansJudged, cb)
}

// RegisterConnectorOrphanmetricsSpansWithoutVerdictCallback sets the callback of the observable ConnectorOrphanmetricsSpansWithoutVerdict.
func (builder *TelemetryBuilder) RegisterConnectorOrphanmetricsSpansWithoutVerdictCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ConnectorOrphanmetricsSpansWithoutVerdict, cb)
}

// RegisterConnectorOrphanmetricsTracesCallback sets the callback of the observable ConnectorOrphanmetricsTraces.
func (builder *TelemetryBuilder) RegisterConnectorOrphanmetricsTracesCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ConnectorOrphanmetricsTraces, cb)
}

// RecordingTelemetry is what the connector's recording reports through (metricsrecording.New): the
// label_values gauge, the observe-mode instruments and verdict_latency, every measurement
// carrying id.
func (builder *TelemetryBuilder) RecordingTelemetry(id attribute.KeyValue) metricsrecording.Telemetry {
	return metricsrecording.Telemetry{
		ID:          id,
		LabelValues: builder.RegisterConnectorOrphanmetricsLabelValuesCallback,
		Observe: orphanmetrics.ObserveTelemetry{
			Records:             builder.RegisterConnectorOrphanmetricsRecordsCallback,
			Traces:              builder.RegisterConnectorOrphanmetricsTracesCallback,
			OpenRuns:            builder.RegisterConnectorOrphanmetricsOpenRunsCallback,
			HeldRoots:           builder.RegisterConnectorOrphanmetricsHeldRootsCallback,
			Evictions:           builder.RegisterConnectorOrphanmetricsEvictionsCallback,
			SpansJudged:         builder.RegisterConnectorOrphanmetricsSpansJudgedCallback,
			SpansWithoutVerdict: builder.RegisterConnectorOrphanmetricsSpansWithoutVerdictCallback,
		},
		VerdictLatency: builder.ConnectorOrphanmetricsVerdictLatency,
	}
}

// Shutdown unregisters every callback registered.
func (builder *TelemetryBuilder) Shutdown() { builder.b.Shutdown() }

// NewTelemetryBuilder creates the instruments of metadata.yaml on the connector's meter; the error
// joins those of every instrument.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	b := telemetrybuilder.New(Meter(settings))
	builder := &TelemetryBuilder{
		b: b,
		ConnectorOrphanmetricsEvictions: b.Int64ObservableCounter("otelcol_connector_orphanmetrics_evictions", "{items}",
			"Observe mode: state evicted to stay within the configured limits, by state. [Alpha]"),
		ConnectorOrphanmetricsFlushes: b.Int64Counter("otelcol_connector_orphanmetrics_flushes", "{flushes}",
			"Flushes of the accumulated metrics to the metrics pipeline, by result; a failed flush is retried by the next one, the sums being cumulative. [Alpha]"),
		ConnectorOrphanmetricsHeldRoots: b.Int64ObservableGauge("otelcol_connector_orphanmetrics_held_roots", "{spans}",
			"Observe mode: verdicts of abandoned roots held until abandoned_root_hold (unset: decision_wait) after they arrived, so that later orphans deepen their reach. [Alpha]"),
		ConnectorOrphanmetricsLabelValues: b.Int64ObservableGauge("otelcol_connector_orphanmetrics_label_values", "{values}",
			"Distinct values admitted for a label taken from span data; at label_limits, later new values are exported as other. [Alpha]"),
		ConnectorOrphanmetricsOpenRuns: b.Int64ObservableGauge("otelcol_connector_orphanmetrics_open_runs", "{runs}",
			"Observe mode: runs left open by a decision (their final attempt so far not terminal). [Alpha]"),
		ConnectorOrphanmetricsRecords: b.Int64ObservableGauge("otelcol_connector_orphanmetrics_records", "{records}",
			"Observe mode: span records kept, by state: waiting (for their trace's decision), kept (between decisions, for later spans of their trace), pending (of those, waiting for their root or chain). [Alpha]"),
		ConnectorOrphanmetricsSpansJudged: b.Int64ObservableCounter("otelcol_connector_orphanmetrics_spans_judged", "{spans}",
			"Observe mode: spans whose verdicts were decided and counted. [Alpha]"),
		ConnectorOrphanmetricsSpansWithoutVerdict: b.Int64ObservableCounter("otelcol_connector_orphanmetrics_spans_without_verdict", "{spans}",
			"Observe mode: spans that got no verdict or liveness unknown, by reason. [Alpha]"),
		ConnectorOrphanmetricsTraces: b.Int64ObservableGauge("otelcol_connector_orphanmetrics_traces", "{traces}",
			"Observe mode: traces whose records wait for their decision. [Alpha]"),
		ConnectorOrphanmetricsVerdictLatency: b.Float64Histogram("otelcol_connector_orphanmetrics_verdict_latency", "s",
			"Observe mode: time from a request's root span arriving to the last verdict counted for the request, observed once nothing more can come for it. [Alpha]",
			0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600),
	}
	return builder, b.Err()
}
