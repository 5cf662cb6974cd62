package metadata

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Meter returns the processor's meter.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// TelemetryBuilder holds the processor's internal metrics. Names follow the collector's
// convention (otelcol_processor_<type>_...); the Prometheus exposition of the collector's own
// telemetry adds `_total` to counters. Each is documented in documentation.md.
//
// Every measurement carries `processor=<component ID>` (as the core batch and memory_limiter
// processors do), so that two instances in one collector (`orphan`, `orphan/custom`) are told
// apart: record with the ID option, or With for a measurement with one more attribute.
type TelemetryBuilder struct {
	// ID is the measurement option carrying only the processor's component ID.
	ID metric.MeasurementOption
	id attribute.KeyValue
	// with caches the options of With, keyed by attribute key and value.
	with sync.Map

	// ProcessorOrphanTracesHeld is the number of traces whose spans are held, waiting.
	ProcessorOrphanTracesHeld metric.Int64UpDownCounter
	// ProcessorOrphanSpansHeld is the number of spans held.
	ProcessorOrphanSpansHeld metric.Int64UpDownCounter
	// ProcessorOrphanSpansProcessed counts spans that passed through (attribute decision).
	ProcessorOrphanSpansProcessed metric.Int64Counter
	// ProcessorOrphanSpansOrphaned counts spans judged orphaned.
	ProcessorOrphanSpansOrphaned metric.Int64Counter
	// ProcessorOrphanSpansWithoutVerdict counts spans that got no verdict or only "unknown",
	// by reason (attribute `reason`).
	ProcessorOrphanSpansWithoutVerdict metric.Int64Counter
	// ProcessorOrphanAttributesIgnored counts attribute values present but unusable, by reason.
	ProcessorOrphanAttributesIgnored metric.Int64Counter
	// ProcessorOrphanTracesRootMissing counts traces decided without their root span ever seen.
	ProcessorOrphanTracesRootMissing metric.Int64Counter
	// ProcessorOrphanRunsUnknownRoot counts runs given the unknown_root outcome.
	ProcessorOrphanRunsUnknownRoot metric.Int64Counter
	// ProcessorOrphanSpansLate counts spans arriving for a trace already decided.
	ProcessorOrphanSpansLate metric.Int64Counter
	// ProcessorOrphanEvictions counts state evicted to stay in bounds, by `state`
	// (traces, spans_per_trace, root_records, idempotency_keys).
	ProcessorOrphanEvictions metric.Int64Counter
	// ProcessorOrphanDecisionWait is the time from a trace's first span to its decision, seconds.
	ProcessorOrphanDecisionWait metric.Float64Histogram
	// ProcessorOrphanDownstreamErrors counts spans the next consumer refused after a decision.
	ProcessorOrphanDownstreamErrors metric.Int64Counter
	// ProcessorOrphanSpansDropped counts spans lost because the next consumer refused them when
	// nobody could be told (the release loop, shutdown), by `reason`.
	ProcessorOrphanSpansDropped metric.Int64Counter
	// ProcessorOrphanRootRecords and ProcessorOrphanIdempotencyKeys are observed gauges of the
	// cross-trace memory.
	ProcessorOrphanRootRecords     metric.Int64ObservableGauge
	ProcessorOrphanIdempotencyKeys metric.Int64ObservableGauge
	// ProcessorOrphanSpansDeferred counts spans that left before their root arrived, marked
	// deferred; their verdicts are carried later.
	ProcessorOrphanSpansDeferred metric.Int64Counter
	// ProcessorOrphanCarrierSpans counts spans made only to carry verdicts.
	ProcessorOrphanCarrierSpans metric.Int64Counter
	// ProcessorOrphanPendingSpans, ProcessorOrphanOpenRuns and ProcessorOrphanContextSpans are
	// observed gauges of the time model's memory (records of spans waiting for their root,
	// runs left open, records of released spans).
	ProcessorOrphanPendingSpans metric.Int64ObservableGauge
	ProcessorOrphanOpenRuns     metric.Int64ObservableGauge
	ProcessorOrphanContextSpans metric.Int64ObservableGauge

	registrations []metric.Registration
}

// ProcessorAttribute is the attribute of every measurement that names the processor instance.
const ProcessorAttribute = "processor"

// Kept is what the processor's correlator keeps, reported on collection.
type Kept struct {
	Roots, Keys, Pending, OpenRuns, Context int64
}

// NewTelemetryBuilder creates the instruments of the processor instance id. observe, when not
// nil, is called on collection to report what the correlator keeps.
func NewTelemetryBuilder(settings component.TelemetrySettings, id component.ID, observe func() Kept) (*TelemetryBuilder, error) {
	m := Meter(settings)
	tb := &TelemetryBuilder{id: attribute.String(ProcessorAttribute, id.String())}
	tb.ID = metric.WithAttributeSet(attribute.NewSet(tb.id))
	var errs, err error
	tb.ProcessorOrphanTracesHeld, err = m.Int64UpDownCounter("otelcol_processor_orphan_traces_held",
		metric.WithDescription("Traces whose spans are held: waiting for their decision, or being decided and handed on."), metric.WithUnit("{traces}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanSpansHeld, err = m.Int64UpDownCounter("otelcol_processor_orphan_spans_held",
		metric.WithDescription("Spans held: waiting for their trace's decision, or being decided and handed on."), metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanSpansProcessed, err = m.Int64Counter("otelcol_processor_orphan_spans_processed",
		metric.WithDescription("Spans decided and passed on."), metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanSpansOrphaned, err = m.Int64Counter("otelcol_processor_orphan_spans_orphaned",
		metric.WithDescription("Spans judged orphaned: they ended after their root request was gone."), metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanSpansWithoutVerdict, err = m.Int64Counter("otelcol_processor_orphan_spans_without_verdict",
		metric.WithDescription("Spans that got no verdict or only liveness unknown, by reason."), metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanAttributesIgnored, err = m.Int64Counter("otelcol_processor_orphan_attributes_ignored",
		metric.WithDescription("Attribute values present but unusable (wrong type, negative token count, malformed deadline), by reason."), metric.WithUnit("{attributes}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanTracesRootMissing, err = m.Int64Counter("otelcol_processor_orphan_traces_root_missing",
		metric.WithDescription("Traces decided without their root span: their spans get liveness unknown and their runs unknown_root."), metric.WithUnit("{traces}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanRunsUnknownRoot, err = m.Int64Counter("otelcol_processor_orphan_runs_unknown_root",
		metric.WithDescription("Runs given the unknown_root outcome because their root was never seen."), metric.WithUnit("{runs}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanSpansLate, err = m.Int64Counter("otelcol_processor_orphan_spans_late",
		metric.WithDescription("Spans that arrived after their trace had been decided; judged against the retained root record."), metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanEvictions, err = m.Int64Counter("otelcol_processor_orphan_evictions",
		metric.WithDescription("State evicted to stay within the configured limits, by state."), metric.WithUnit("{items}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanDecisionWait, err = m.Float64Histogram("otelcol_processor_orphan_decision_wait",
		metric.WithDescription("Time from a trace's first span to its decision."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.001, 0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanDownstreamErrors, err = m.Int64Counter("otelcol_processor_orphan_downstream_errors",
		metric.WithDescription("Spans the next consumer refused after their decision."), metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanSpansDropped, err = m.Int64Counter("otelcol_processor_orphan_spans_dropped",
		metric.WithDescription("Decided spans lost because the next consumer refused them where no caller could be told (the release loop, shutdown), by reason."), metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanRootRecords, err = m.Int64ObservableGauge("otelcol_processor_orphan_root_records",
		metric.WithDescription("Root records kept for late spans and key-bound traces."), metric.WithUnit("{records}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanIdempotencyKeys, err = m.Int64ObservableGauge("otelcol_processor_orphan_idempotency_keys",
		metric.WithDescription("Idempotency-key hashes remembered for binding work across traces."), metric.WithUnit("{keys}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanSpansDeferred, err = m.Int64Counter("otelcol_processor_orphan_spans_deferred",
		metric.WithDescription("Spans that left before their root arrived, marked deferred; their verdicts are carried when it comes."), metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanCarrierSpans, err = m.Int64Counter("otelcol_processor_orphan_carrier_spans",
		metric.WithDescription("Spans made only to carry verdicts when no span of their trace passes any more."), metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanPendingSpans, err = m.Int64ObservableGauge("otelcol_processor_orphan_pending_spans",
		metric.WithDescription("Records of spans that left before their root arrived, waiting for it."), metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanOpenRuns, err = m.Int64ObservableGauge("otelcol_processor_orphan_open_runs",
		metric.WithDescription("Runs left open by a decision, waiting for a further attempt, their loop or their run timeout."), metric.WithUnit("{runs}"))
	errs = errors.Join(errs, err)
	tb.ProcessorOrphanContextSpans, err = m.Int64ObservableGauge("otelcol_processor_orphan_context_spans",
		metric.WithDescription("Records of released spans kept so that later spans of their trace are judged with them."), metric.WithUnit("{spans}"))
	errs = errors.Join(errs, err)
	if errs == nil && observe != nil {
		reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			k := observe()
			o.ObserveInt64(tb.ProcessorOrphanRootRecords, k.Roots, tb.ID)
			o.ObserveInt64(tb.ProcessorOrphanIdempotencyKeys, k.Keys, tb.ID)
			o.ObserveInt64(tb.ProcessorOrphanPendingSpans, k.Pending, tb.ID)
			o.ObserveInt64(tb.ProcessorOrphanOpenRuns, k.OpenRuns, tb.ID)
			o.ObserveInt64(tb.ProcessorOrphanContextSpans, k.Context, tb.ID)
			return nil
		}, tb.ProcessorOrphanRootRecords, tb.ProcessorOrphanIdempotencyKeys, tb.ProcessorOrphanPendingSpans, tb.ProcessorOrphanOpenRuns, tb.ProcessorOrphanContextSpans)
		errs = errors.Join(errs, err)
		if reg != nil {
			tb.registrations = append(tb.registrations, reg)
		}
	}
	return tb, errs
}

// With returns the measurement option carrying the processor's ID and key=value.
func (tb *TelemetryBuilder) With(key, value string) metric.MeasurementOption {
	k := key + "\x00" + value
	if o, ok := tb.with.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	o, _ := tb.with.LoadOrStore(k, metric.WithAttributeSet(attribute.NewSet(tb.id, attribute.String(key, value))))
	return o.(metric.MeasurementOption)
}

// Shutdown unregisters the observed gauges' callback.
func (tb *TelemetryBuilder) Shutdown() {
	for _, r := range tb.registrations {
		_ = r.Unregister()
	}
	tb.registrations = nil
}
