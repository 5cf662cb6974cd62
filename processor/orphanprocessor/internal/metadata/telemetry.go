package metadata

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"go.opentelemetry.io/collector/component"

	"github.com/orphanwatch/orphanwatch/internal/telemetrybuilder"
)

// Meter returns the processor's meter, whose instrumentation scope is ScopeName.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// Tracer returns the processor's tracer, whose instrumentation scope is ScopeName.
func Tracer(settings component.TelemetrySettings) trace.Tracer {
	return settings.TracerProvider.Tracer(ScopeName)
}

// TelemetryBuilder holds the instruments of metadata.yaml's telemetry section, a field each, as
// mdatagen's generated builder does.
type TelemetryBuilder struct {
	b                                  *telemetrybuilder.Builder
	ProcessorOrphanAttributesIgnored   metric.Int64Counter
	ProcessorOrphanCarrierSpans        metric.Int64Counter
	ProcessorOrphanContextSpans        metric.Int64ObservableGauge
	ProcessorOrphanDecisionWait        metric.Float64Histogram
	ProcessorOrphanDownstreamErrors    metric.Int64Counter
	ProcessorOrphanEvictions           metric.Int64Counter
	ProcessorOrphanHeldBytes           metric.Int64ObservableGauge
	ProcessorOrphanIdempotencyKeys     metric.Int64ObservableGauge
	ProcessorOrphanKeyLookups          metric.Int64Counter
	ProcessorOrphanKeyTracesWaiting    metric.Int64ObservableGauge
	ProcessorOrphanOpenRuns            metric.Int64ObservableGauge
	ProcessorOrphanPendingSpans        metric.Int64ObservableGauge
	ProcessorOrphanRootRecords         metric.Int64ObservableGauge
	ProcessorOrphanRunsUnknownRoot     metric.Int64Counter
	ProcessorOrphanSpansDeferred       metric.Int64Counter
	ProcessorOrphanSpansDropped        metric.Int64Counter
	ProcessorOrphanSpansHeld           metric.Int64UpDownCounter
	ProcessorOrphanSpansLate           metric.Int64Counter
	ProcessorOrphanSpansOrphaned       metric.Int64Counter
	ProcessorOrphanSpansProcessed      metric.Int64Counter
	ProcessorOrphanSpansWithoutVerdict metric.Int64Counter
	ProcessorOrphanTracesHeld          metric.Int64UpDownCounter
	ProcessorOrphanTracesRootMissing   metric.Int64Counter
	ProcessorOrphanVerdictLatency      metric.Float64Histogram
}

// RegisterProcessorOrphanContextSpansCallback sets the callback of the observable ProcessorOrphanContextSpans.
func (builder *TelemetryBuilder) RegisterProcessorOrphanContextSpansCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ProcessorOrphanContextSpans, cb)
}

// RegisterProcessorOrphanHeldBytesCallback sets the callback of the observable ProcessorOrphanHeldBytes.
func (builder *TelemetryBuilder) RegisterProcessorOrphanHeldBytesCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ProcessorOrphanHeldBytes, cb)
}

// RegisterProcessorOrphanIdempotencyKeysCallback sets the callback of the observable ProcessorOrphanIdempotencyKeys.
func (builder *TelemetryBuilder) RegisterProcessorOrphanIdempotencyKeysCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ProcessorOrphanIdempotencyKeys, cb)
}

// RegisterProcessorOrphanKeyTracesWaitingCallback sets the callback of the observable ProcessorOrphanKeyTracesWaiting.
func (builder *TelemetryBuilder) RegisterProcessorOrphanKeyTracesWaitingCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ProcessorOrphanKeyTracesWaiting, cb)
}

// RegisterProcessorOrphanOpenRunsCallback sets the callback of the observable ProcessorOrphanOpenRuns.
func (builder *TelemetryBuilder) RegisterProcessorOrphanOpenRunsCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ProcessorOrphanOpenRuns, cb)
}

// RegisterProcessorOrphanPendingSpansCallback sets the callback of the observable ProcessorOrphanPendingSpans.
func (builder *TelemetryBuilder) RegisterProcessorOrphanPendingSpansCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ProcessorOrphanPendingSpans, cb)
}

// RegisterProcessorOrphanRootRecordsCallback sets the callback of the observable ProcessorOrphanRootRecords.
func (builder *TelemetryBuilder) RegisterProcessorOrphanRootRecordsCallback(cb metric.Int64Callback) error {
	return builder.b.Register(builder.ProcessorOrphanRootRecords, cb)
}

// Shutdown unregisters every callback registered.
func (builder *TelemetryBuilder) Shutdown() { builder.b.Shutdown() }

// NewTelemetryBuilder creates the instruments of metadata.yaml on the processor's meter; the error
// joins those of every instrument.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	b := telemetrybuilder.New(Meter(settings))
	builder := &TelemetryBuilder{
		b: b,
		ProcessorOrphanAttributesIgnored: b.Int64Counter("otelcol_processor_orphan_attributes_ignored", "{attributes}",
			"Attribute values present but unusable (wrong type, negative token count, malformed deadline), by reason. [Alpha]"),
		ProcessorOrphanCarrierSpans: b.Int64Counter("otelcol_processor_orphan_carrier_spans", "{spans}",
			"Spans made only to carry verdicts when no span of their trace passes any more. [Alpha]"),
		ProcessorOrphanContextSpans: b.Int64ObservableGauge("otelcol_processor_orphan_context_spans", "{spans}",
			"Records of released spans kept so that later spans of their trace are judged with them. [Alpha]"),
		ProcessorOrphanDecisionWait: b.Float64Histogram("otelcol_processor_orphan_decision_wait", "s",
			"Time from a trace's first span to its decision. [Alpha]",
			0.001, 0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60),
		ProcessorOrphanDownstreamErrors: b.Int64Counter("otelcol_processor_orphan_downstream_errors", "{spans}",
			"Spans the next consumer refused after their decision. [Alpha]"),
		ProcessorOrphanEvictions: b.Int64Counter("otelcol_processor_orphan_evictions", "{items}",
			"State evicted to stay within the configured limits, by state. [Alpha]"),
		ProcessorOrphanHeldBytes: b.Int64ObservableGauge("otelcol_processor_orphan_held_bytes", "By",
			"Estimated size of the spans held, in bytes of their OTLP protobuf encoding (limits.max_held_bytes). [Alpha]"),
		ProcessorOrphanIdempotencyKeys: b.Int64ObservableGauge("otelcol_processor_orphan_idempotency_keys", "{keys}",
			"Idempotency-key hashes remembered for binding work across traces. [Alpha]"),
		ProcessorOrphanKeyLookups: b.Int64Counter("otelcol_processor_orphan_key_lookups", "{keys}",
			"Idempotency keys of decided traces, by where they bound: local, remote (another member's record), missed (none within the orphan_keys extension's wait); late: a record that came after its key was missed. [Alpha]"),
		ProcessorOrphanKeyTracesWaiting: b.Int64ObservableGauge("otelcol_processor_orphan_key_traces_waiting", "{traces}",
			"Traces waiting for a key record (the orphan_keys extension's wait). [Alpha]"),
		ProcessorOrphanOpenRuns: b.Int64ObservableGauge("otelcol_processor_orphan_open_runs", "{runs}",
			"Runs left open by a decision, waiting for a further attempt, their loop or their run timeout. [Alpha]"),
		ProcessorOrphanPendingSpans: b.Int64ObservableGauge("otelcol_processor_orphan_pending_spans", "{spans}",
			"Records of spans that left before their root arrived, waiting for it. [Alpha]"),
		ProcessorOrphanRootRecords: b.Int64ObservableGauge("otelcol_processor_orphan_root_records", "{records}",
			"Root records kept for late spans and key-bound traces. [Alpha]"),
		ProcessorOrphanRunsUnknownRoot: b.Int64Counter("otelcol_processor_orphan_runs_unknown_root", "{runs}",
			"Runs given the unknown_root outcome because their root was never seen. [Alpha]"),
		ProcessorOrphanSpansDeferred: b.Int64Counter("otelcol_processor_orphan_spans_deferred", "{spans}",
			"Spans that left before their root arrived, marked deferred; their verdicts are carried when it comes. [Alpha]"),
		ProcessorOrphanSpansDropped: b.Int64Counter("otelcol_processor_orphan_spans_dropped", "{spans}",
			"Decided spans lost because the next consumer refused them where no caller could be told (the release loop, shutdown), by reason. [Alpha]"),
		ProcessorOrphanSpansHeld: b.Int64UpDownCounter("otelcol_processor_orphan_spans_held", "{spans}",
			"Spans held: waiting for their trace's decision, or being decided and handed on. [Alpha]"),
		ProcessorOrphanSpansLate: b.Int64Counter("otelcol_processor_orphan_spans_late", "{spans}",
			"Spans that arrived after their trace had been decided; judged against the retained root record. [Alpha]"),
		ProcessorOrphanSpansOrphaned: b.Int64Counter("otelcol_processor_orphan_spans_orphaned", "{spans}",
			"Spans judged orphaned: they ended after their root request was gone. [Alpha]"),
		ProcessorOrphanSpansProcessed: b.Int64Counter("otelcol_processor_orphan_spans_processed", "{spans}",
			"Spans decided and passed on. [Alpha]"),
		ProcessorOrphanSpansWithoutVerdict: b.Int64Counter("otelcol_processor_orphan_spans_without_verdict", "{spans}",
			"Spans that got no verdict or only liveness unknown, by reason. [Alpha]"),
		ProcessorOrphanTracesHeld: b.Int64UpDownCounter("otelcol_processor_orphan_traces_held", "{traces}",
			"Traces whose spans are held: waiting for their decision, or being decided and handed on. [Alpha]"),
		ProcessorOrphanTracesRootMissing: b.Int64Counter("otelcol_processor_orphan_traces_root_missing", "{traces}",
			"Traces decided without their root span: their spans get liveness unknown and their runs unknown_root. [Alpha]"),
		ProcessorOrphanVerdictLatency: b.Float64Histogram("otelcol_processor_orphan_verdict_latency", "s",
			"Time from a request's root span arriving to the last verdict counted for the request (written on its spans or carried), observed once nothing more can come for it. [Alpha]",
			0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600),
	}
	return builder, b.Err()
}
