package orphanprocessor

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// processorAttribute is the attribute of every measurement that names the processor instance.
const processorAttribute = "processor"

// telemetry is the processor's internal telemetry: the instruments of metadata.yaml
// (metadata.TelemetryBuilder, in mdatagen's shape) and the `processor=<component ID>`
// attribute every measurement carries, as the core batch and memory_limiter processors do, so
// that two instances in one collector (`orphan`, `orphan/custom`) read apart. Record with the
// ID option, or With for a measurement with one more attribute.
type telemetry struct {
	*metadata.TelemetryBuilder
	// ID is the measurement option carrying only the processor's component ID.
	ID metric.MeasurementOption
	id attribute.KeyValue
	// with caches the options of With, keyed by attribute key and value.
	with sync.Map
}

// kept is what the processor's correlator keeps, reported on collection.
type kept struct {
	Roots, Keys, Pending, OpenRuns, Context int64
	HeldBytes                               int64 // heldBytes (limits.max_held_bytes)
}

// newTelemetry creates the instruments of the processor instance set.ID. observe, when not
// nil, is called on collection to report what the correlator keeps (the observed gauges).
func newTelemetry(set processor.Settings, observe func() kept) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	t := &telemetry{TelemetryBuilder: tb, id: attribute.String(processorAttribute, set.ID.String())}
	t.ID = metric.WithAttributeSet(attribute.NewSet(t.id))
	t.zero()
	if observe == nil {
		return t, nil
	}
	gauge := func(v func(kept) int64) metric.Int64Callback {
		return func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(v(observe()), t.ID)
			return nil
		}
	}
	errs := errors.Join(
		tb.RegisterProcessorOrphanRootRecordsCallback(gauge(func(k kept) int64 { return k.Roots })),
		tb.RegisterProcessorOrphanIdempotencyKeysCallback(gauge(func(k kept) int64 { return k.Keys })),
		tb.RegisterProcessorOrphanPendingSpansCallback(gauge(func(k kept) int64 { return k.Pending })),
		tb.RegisterProcessorOrphanOpenRunsCallback(gauge(func(k kept) int64 { return k.OpenRuns })),
		tb.RegisterProcessorOrphanContextSpansCallback(gauge(func(k kept) int64 { return k.Context })),
		tb.RegisterProcessorOrphanHeldBytesCallback(gauge(func(k kept) int64 { return k.HeldBytes })),
	)
	if errs != nil {
		tb.Shutdown()
		return nil, errs
	}
	return t, nil
}

// evictionStates are the values of evictions{state} (documentation.md).
var evictionStates = []string{"traces", "spans_per_trace", "root_records", "idempotency_keys",
	"multi_root_spans", "context_spans", "pending_spans", "request_duration", "open_runs", "held_roots"}

// zero adds 0 to the counters of what goes wrong or happens rarely (evictions by state, spans
// dropped by reason, downstream errors, late spans, missing roots, carriers), so that their
// series exist from the start, at 0: an alert's rate() and a dashboard's increase() then see
// the first occurrence (a series that appears at 1 shows no increase), and alert rules and
// dashboards find the series whether scraped or pushed (docs/monitoring.md). The counters by
// reason of bad input (spans_without_verdict, attributes_ignored) appear with their reason.
func (t *telemetry) zero() {
	ctx := context.Background()
	for _, c := range []metric.Int64Counter{t.ProcessorOrphanSpansProcessed, t.ProcessorOrphanSpansOrphaned,
		t.ProcessorOrphanSpansDeferred, t.ProcessorOrphanCarrierSpans, t.ProcessorOrphanSpansLate,
		t.ProcessorOrphanTracesRootMissing, t.ProcessorOrphanRunsUnknownRoot, t.ProcessorOrphanDownstreamErrors} {
		c.Add(ctx, 0, t.ID)
	}
	for _, s := range evictionStates {
		t.ProcessorOrphanEvictions.Add(ctx, 0, t.With("state", s))
	}
	for _, r := range []string{dropRefused, dropPermanent} {
		t.ProcessorOrphanSpansDropped.Add(ctx, 0, t.With("reason", r))
	}
}

// With returns the measurement option carrying the processor's ID and key=value.
func (t *telemetry) With(key, value string) metric.MeasurementOption {
	k := key + "\x00" + value
	if o, ok := t.with.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	o, _ := t.with.LoadOrStore(k, metric.WithAttributeSet(attribute.NewSet(t.id, attribute.String(key, value))))
	return o.(metric.MeasurementOption)
}

// The processor's telemetry call sites and the accounting of refused spans.

// refusedError is the next consumer's refusal of n decided spans.
type refusedError struct {
	err   error
	spans int
}

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// dropped counts, and logs at a bounded rate, the spans of a refused release that had nowhere
// to go back to: the release loop and shutdown have no caller to return the error to. It
// returns err.
func (p *orphanProcessor) dropped(ctx context.Context, err error) error {
	var re *refusedError
	if !errors.As(err, &re) {
		return err
	}
	reason := dropRefused
	if consumererror.IsPermanent(re.err) {
		reason = dropPermanent
	}
	p.tel.ProcessorOrphanSpansDropped.Add(ctx, int64(re.spans), p.tel.With("reason", reason))
	if n, ok := p.dropLog.allow(p.clock.Now(), re.spans); ok {
		p.logger.Warn("Next consumer refused decided spans; they are dropped",
			zap.Int("dropped_spans", n), zap.String("reason", reason), zap.Error(re.err),
			zap.Duration("log_interval", dropLogInterval))
	}
	return err
}

// Reasons of otelcol_processor_orphan_spans_dropped.
const (
	dropRefused   = "downstream_refused"         // a retryable refusal (memory_limiter, a full queue)
	dropPermanent = "downstream_permanent_error" // a permanent error: the data itself was rejected
)

// dropLogInterval bounds the warnings about dropped spans: one per interval, with the spans
// dropped since the previous one.
const dropLogInterval = 10 * time.Second

// logLimiter lets one log line through per dropLogInterval and counts what it held back.
type logLimiter struct {
	mu      sync.Mutex
	last    time.Time
	pending int
}

// allow adds n to the pending count; when a line may be logged at now it returns the count
// since the last line and true.
func (l *logLimiter) allow(now time.Time, n int) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending += n
	if !l.last.IsZero() && now.Sub(l.last) < dropLogInterval {
		return 0, false
	}
	n, l.pending, l.last = l.pending, 0, now
	return n, true
}

// countDecision counts what a decision (or a sweep) made final in the processor's telemetry.
func (p *orphanProcessor) countDecision(ctx context.Context, verdicts []verdict.Verdict, carried []verdict.Carried, st *verdict.Stats) {
	orphaned := int64(0)
	for i := range verdicts {
		if verdicts[i].Liveness == verdict.LivenessOrphaned && !verdicts[i].Provisional {
			orphaned++
		}
	}
	for i := range carried {
		if carried[i].Part == verdict.PartAll && carried[i].Verdict.Liveness == verdict.LivenessOrphaned {
			orphaned++
		}
	}
	if orphaned > 0 {
		p.tel.ProcessorOrphanSpansOrphaned.Add(ctx, orphaned, p.tel.ID)
	}
	for r, n := range st.Invalid {
		if r != int(verdict.Valid) && n > 0 {
			p.withoutVerdict(ctx, verdict.Invalid(r).String(), int64(n))
		}
	}
	if st.AmbiguousRoot > 0 {
		p.tel.ProcessorOrphanSpansWithoutVerdict.Add(ctx, int64(st.AmbiguousRoot), p.tel.With("reason", "ambiguous_root"))
	}
	if st.NoDuration > 0 {
		p.tel.ProcessorOrphanSpansWithoutVerdict.Add(ctx, int64(st.NoDuration), p.tel.With("reason", "no_duration"))
	}
	switch {
	case st.RootUnusable:
		// The root came, its times not sane (counted by their reason): the others were judged
		// without it at once.
		if st.RootMissingSpans > 0 {
			p.withoutVerdict(ctx, reasonRootUnusable, int64(st.RootMissingSpans))
		}
	case st.RootMissing:
		p.tel.ProcessorOrphanTracesRootMissing.Add(ctx, 1, p.tel.ID)
		if st.RootMissingSpans > 0 { // malformed spans are counted by their own reason
			p.tel.ProcessorOrphanSpansWithoutVerdict.Add(ctx, int64(st.RootMissingSpans), p.tel.With("reason", "root_missing"))
		}
	}
	if st.UnknownRootRuns > 0 {
		p.tel.ProcessorOrphanRunsUnknownRoot.Add(ctx, int64(st.UnknownRootRuns), p.tel.ID)
	}
}

// reasonRootUnusable is the reason of spans_without_verdict of the spans of a trace whose root
// came with times that are not sane (its own reason counts the root): judged at once without a
// root (liveness unknown, runs unknown_root).
const reasonRootUnusable = "root_unusable"

// withoutVerdict counts n malformed spans of reason (a verdict.Invalid, or root_unusable) in
// spans_without_verdict and logs them sampled (badSpans). Spans judged unknown for want of a
// root (root_missing, ambiguous_root) or of a duration (no_duration) are counted, not logged:
// they are not malformed, and common.
//
// The line names no sender: verdicts are decided in the release loop, after the request that
// brought the spans (and its client.Info) is gone, and a batch processor before this one mixes
// the requests of several senders.
func (p *orphanProcessor) withoutVerdict(ctx context.Context, reason string, n int64) {
	p.tel.ProcessorOrphanSpansWithoutVerdict.Add(ctx, n, p.tel.With("reason", reason))
	p.badSpans.Add(reason, n)
}

func (p *orphanProcessor) countReaderStats(ctx context.Context, st *spanread.Stats) {
	for r := spanread.BadNone + 1; r < spanread.NumBadReasons; r++ {
		if n := st[r]; n > 0 {
			p.tel.ProcessorOrphanAttributesIgnored.Add(ctx, int64(n), p.tel.With("reason", r.String()))
			p.badAttrs.Add(r.String(), int64(n))
		}
	}
}

// countCorrelatorEvictions adds the root records and idempotency keys the correlator evicted
// since the last call to the evictions counter.
func (p *orphanProcessor) countCorrelatorEvictions(ctx context.Context) {
	roots, keys := p.corr.Evicted()
	indexed := p.corr.EvictedIndexed()
	kept := [4]uint64{}
	kept[0], kept[1], kept[2], kept[3] = p.corr.EvictedKept()
	p.evictMu.Lock()
	dr, dk, di := roots-p.seenRootEv, keys-p.seenKeyEv, indexed-p.seenIndexedEv
	p.seenRootEv, p.seenKeyEv, p.seenIndexedEv = roots, keys, indexed
	var dkept [4]uint64
	for i := range kept {
		dkept[i] = kept[i] - p.seenKept[i]
	}
	p.seenKept = kept
	p.evictMu.Unlock()
	for i, state := range [4]string{"context_spans", "pending_spans", "request_duration", "open_runs"} {
		if dkept[i] > 0 {
			p.tel.ProcessorOrphanEvictions.Add(ctx, int64(dkept[i]), p.tel.With("state", state))
		}
	}
	if di > 0 {
		p.tel.ProcessorOrphanEvictions.Add(ctx, int64(di), p.tel.With("state", "multi_root_spans"))
	}
	if dr > 0 {
		p.tel.ProcessorOrphanEvictions.Add(ctx, int64(dr), p.tel.With("state", "root_records"))
	}
	if dk > 0 {
		p.tel.ProcessorOrphanEvictions.Add(ctx, int64(dk), p.tel.With("state", "idempotency_keys"))
	}
}
