// Package observe decides verdicts from what it reads of each span as it arrives: DESIGN.md
// "Two ways to run", observe, the default. It never holds, copies or changes a span: each span
// is read once, in [Observer.Consume], into the correlator's compact record (verdict.Span),
// while its memory is hot; nothing of the pdata is kept after Consume returns. What a later
// decision needs of a span (its operation's attributes, for its labels) is what the [Sink]
// keeps of it ([Sink.Keep]), stored with the record.
//
// Where things happen:
//   - a span is read: [Observer.Consume] (spanread.Reader, the processor's own reader);
//   - it is decided: verdict.Correlator.Release, at once, with everything kept of its trace
//     (the time model of internal/verdict, memo.go, with no hold: spans that arrive before
//     their root are kept as records and their verdicts come when the root does);
//   - it is counted: the Sink ([Sink.Decided] for a verdict decided while the span is at hand,
//     [Sink.Later] for one decided after it left: a span that came before its root, a run closed
//     later, an abandoned root whose reach is counted abandoned_root_hold after it arrived).
//
// The orphanmetrics exporter and connector observe with it; so does `orphanwatch analyze`.
package observe

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/heldroots"
	"github.com/orphanwatch/orphanwatch/internal/keyshare"
	"github.com/orphanwatch/orphanwatch/internal/latency"
	"github.com/orphanwatch/orphanwatch/internal/rulesconfig"
	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Sink counts verdicts. Its methods are called concurrently (Consume may run on several
// goroutines, Tick on another).
type Sink interface {
	// Resource returns what the sink needs of a resource for its spans' Keep and Decided (res
	// below); it is called once per ResourceSpans of a batch and may return nil. Nothing of it
	// may be kept after Consume returns but what Keep returns.
	Resource(res pcommon.Resource) any
	// Keep returns what the sink needs of sp (of the resource that gave res) to count a verdict
	// decided after Consume returned (its operation's attributes, as Go values): it must not
	// keep sp or anything of its pdata. It is called only for spans whose verdict may come
	// later; it may return nil.
	Keep(res any, sp ptrace.Span) any
	// Decided counts the final verdict v of sp, which is at hand (s is what was read of it;
	// s.Service is its resource's service.name; res is what Resource returned for it).
	Decided(res any, sp ptrace.Span, s *verdict.Span, v *verdict.Verdict)
	// Later counts a verdict decided after its span left: cv.Span names the span, cv.Span.Extra
	// is what Keep returned (nil when it was not asked), cv.Part says which part of the verdict
	// it is (verdict.PartAll, PartRun, PartEdge). It must not keep cv, which is reused.
	Later(cv *verdict.Carried)
}

// Settings are an Observer's settings beyond the rule settings.
type Settings struct {
	// Now is the clock (wall time when nil): `orphanwatch analyze` replays a file on its own.
	Now func() time.Time
	// Latency, when set, is called with each request's verdict latency in seconds: from its
	// root's arrival to the last verdict counted for it (internal/latency).
	Latency func(seconds float64)
	// MaxTrackedRequests bounds the requests whose latency is tracked (default 50,000).
	MaxTrackedRequests int
	// PrefixPriced, when set, is told once per model name priced by a prices entry that
	// prefixes it (verdict.Config.PrefixPriced; rulesconfig.PrefixPricedLogger logs it).
	PrefixPriced func(model, entry string)
}

// Observer decides verdicts as spans arrive and hands them to a Sink. Safe for concurrent
// use.
type Observer struct {
	cfg    rulesconfig.Config
	lim    rulesconfig.LimitsConfig
	corr   *verdict.Correlator
	room   waitRoom // the records waiting for their trace's decision (hold.go)
	reader *spanread.Reader
	sink   Sink
	now    func() time.Time
	lat    *latency.Tracker
	gate   *keyshare.Gate[*waiting] // key sharing (keys.go); nil when off

	// Abandoned roots (cancelled, deadline exceeded) whose verdict is counted abandoned_root_hold
	// after they arrived, so that orphans arriving after them deepen their orphaned depth and
	// cancellation reach (the processor holds the span itself for as long).
	roots heldroots.Held[verdict.Carried]

	stats counters

	sweepMu   sync.Mutex
	lastSweep time.Time
}

// SweepInterval is how often Tick sweeps the correlator's memory (the processor's sweep
// interval).
const SweepInterval = time.Second

// counters are what an Observer counted, for its component's telemetry (cumulative).
type counters struct {
	spans      atomic.Int64
	invalid    [verdict.NumInvalid]atomic.Int64
	ambiguous  atomic.Int64
	noDuration atomic.Int64
	rootMiss   atomic.Int64 // spans judged without their root
	traceMiss  atomic.Int64 // traces decided without their root
	unknownRun atomic.Int64
	ignored    [spanread.NumBadReasons]atomic.Int64
	deferred   atomic.Int64
}

// New returns an Observer deciding by cfg's rules within lim, counting into sink.
func New(cfg rulesconfig.Config, lim rulesconfig.LimitsConfig, sink Sink, set Settings) (*Observer, error) {
	vc := cfg.VerdictConfig(lim)
	vc.PrefixPriced = set.PrefixPriced
	corr, err := verdict.New(vc)
	if err != nil {
		return nil, err
	}
	o := &Observer{
		cfg:    cfg,
		lim:    lim,
		corr:   corr,
		reader: spanread.New(cfg.ReaderOptions()),
		sink:   sink,
		now:    set.Now,
	}
	o.room.traces = map[verdict.TraceID]*waiting{}
	if o.now == nil {
		o.now = time.Now
	}
	if set.Latency != nil {
		n := set.MaxTrackedRequests
		if n <= 0 {
			n = 50_000
		}
		horizon := max(cfg.RunTimeout, cfg.LongestWait()) + cfg.ClockSkewTolerance + 2*TickInterval
		o.lat = latency.New(horizon, n, set.Latency)
	}
	return o, nil
}

// Correlator is the decision core the Observer feeds (for key sharing and tests).
func (o *Observer) Correlator() *verdict.Correlator { return o.corr }

// TickInterval is how often [Observer.Tick] should run: traces whose wait is over are decided,
// held roots are counted when due, and the correlator's memory is swept for verdicts whose
// root never came (max_request_duration) and runs that no attempt can join any more
// (run_timeout). A trace is decided at most this late.
const TickInterval = 100 * time.Millisecond

// Consume reads every span of td once into its record (with what the sink keeps of it) and
// adds the records to their trace's wait; a trace due now (no wait: decision_wait or
// decision_wait_after_root 0; a bound reached) is decided at once. td is only read, and
// nothing of it is kept after Consume returns.
func (o *Observer) Consume(td ptrace.Traces) {
	b := batchPool.Get().(*batch)
	defer b.recycle()
	now := o.now()
	b.group(o, td)
	// Whether each trace's root was known before this batch (then its records wait the short
	// wait), then what the batch tells other traces (roots, keys): observed before any of its
	// records is decided.
	for gi := range b.groups {
		b.known = append(b.known, o.corr.Knows(b.groups[gi].id))
		if b.groups[gi].root && o.lat != nil {
			o.lat.RootArrived(b.groups[gi].id, now)
		}
	}
	if len(b.observed) > 0 {
		o.corr.ObserveAt(b.observed, now.UnixNano())
	}
	ready := o.wait(b, now)
	if o.cfg.AfterRoot() == 0 { // decision_wait 0 too: AfterRoot is at most decision_wait
		ready = append(ready, o.room.dueAt(now)...)
	}
	for i := range b.noTrace {
		r := &b.noTrace[i]
		var s verdict.Span
		o.reader.ReadFor(&b.res[r.res], r.sp, &s, &b.rst)
		v := verdict.Verdict{Invalid: verdict.InvalidTraceID, Liveness: verdict.LivenessUnknown}
		o.stats.spans.Add(1)
		o.stats.invalid[verdict.InvalidTraceID].Add(1)
		o.sink.Decided(b.sinkRes[r.res], r.sp, &s, &v)
	}
	for r, n := range b.rst {
		if n > 0 {
			o.stats.ignored[r].Add(int64(n))
		}
	}
	o.decide(now, ready)
}

// ReleaseDue decides, now, the traces whose wait is over at `at` (every waiting trace with a
// zero at). Tick calls it with the present; a test or a replay may look ahead.
func (o *Observer) ReleaseDue(at time.Time) {
	o.decide(o.now(), o.room.dueAt(at))
}

// decide decides waiting traces, in order, and counts their verdicts.
func (o *Observer) decide(now time.Time, ready []*waiting) {
	ready = o.keyHold(ready) // key sharing: traces waiting for a key record (keys.go)
	if len(ready) == 0 {
		return
	}
	vbuf := verdictBufs.Get().(*[]verdict.Verdict)
	defer verdictBufs.Put(vbuf)
	ns := now.UnixNano()
	for _, w := range ready {
		var d verdict.Decision
		if w.last {
			d = o.corr.ReleaseLast((*vbuf)[:0], w.spans, ns, nil)
		} else {
			d = o.corr.Release((*vbuf)[:0], w.spans, ns, nil)
		}
		*vbuf = d.Verdicts[:0]
		if d.Deferred {
			// The root has not come: the records are kept by the correlator, their verdicts
			// come as carried verdicts when it does (or after max_request_duration). They
			// count as judged now, as provisional verdicts do: every span read is judged once
			// (the tier's lost verdicts are the spans sent minus the spans judged).
			o.stats.deferred.Add(int64(len(w.spans)))
			o.stats.spans.Add(int64(len(w.spans)))
		} else {
			o.decided(now, w, &d)
		}
		clear(d.Verdicts)
		clear(w.spans)
		// The trace may still be referenced by a stale entry of the due queue (its first due,
		// decision_wait after its first span): its records must not stay with it.
		w.spans = nil
	}
}

var verdictBufs = sync.Pool{New: func() any { return new([]verdict.Verdict) }}

// decided counts a decision: the verdicts of the trace's records, the abandoned roots held for
// their reach, the verdicts carried for records decided before.
func (o *Observer) decided(now time.Time, w *waiting, d *verdict.Decision) {
	spans := w.spans
	o.updateHeldRoots(w.id, d.Reach)
	var cv verdict.Carried // one for the release: the sink does not keep it
	for i := range d.Verdicts {
		v := &d.Verdicts[i]
		if v.Provisional {
			// Orphaned under the root known, but a span above it has not come: its verdict
			// comes when the chain is complete (or after chain_wait), as a Carried.
			o.stats.deferred.Add(1)
			continue
		}
		cv = verdict.Carried{Span: carriedOf(&spans[i]), Verdict: *v, Part: verdict.PartAll}
		if !w.last && o.cfg.EffectiveAbandonedRootHold() > 0 && verdict.HeldAbandonedRoot(v, spans[i].ParentID.IsZero()) {
			o.holdRoot(now, &cv)
			continue
		}
		o.sink.Later(&cv)
	}
	for i := range d.Carried {
		o.sink.Later(&d.Carried[i])
	}
	o.count(len(d.Verdicts), &d.Stats)
	if o.lat != nil {
		o.lat.Counted(w.id, now)
	}
}

// carriedOf names s in a verdict counted after its span left.
func carriedOf(s *verdict.Span) verdict.CarriedSpan {
	return verdict.CarriedSpan{
		TraceID: s.TraceID, SpanID: s.SpanID, Service: s.Service, Name: s.Name,
		Start: s.Start, End: s.End, Kind: s.Kind, Extra: s.Extra,
	}
}

// count adds a decision's stats to the counters.
func (o *Observer) count(n int, st *verdict.Stats) {
	o.stats.spans.Add(int64(n))
	for r, k := range st.Invalid {
		if r != int(verdict.Valid) && k > 0 {
			o.stats.invalid[r].Add(int64(k))
		}
	}
	o.stats.ambiguous.Add(int64(st.AmbiguousRoot))
	o.stats.noDuration.Add(int64(st.NoDuration))
	if st.RootMissing {
		o.stats.traceMiss.Add(1)
		o.stats.rootMiss.Add(int64(st.RootMissingSpans))
	}
	o.stats.unknownRun.Add(int64(st.UnknownRootRuns))
}

// holdRoot keeps the verdict of an abandoned root until abandoned_root_hold after it arrived
// (about decision_wait_after_root before now; the next tick when the hold is shorter).
func (o *Observer) holdRoot(now time.Time, cv *verdict.Carried) {
	held := *cv
	o.roots.Add(cv.Span.TraceID, now.Add(max(o.cfg.EffectiveAbandonedRootHold()-o.cfg.AfterRoot(), 0)), &held)
}

// updateHeldRoots raises the reach and depth of the trace's held roots to what a later release
// of the trace saw.
func (o *Observer) updateHeldRoots(t verdict.TraceID, reach []verdict.RootReach) {
	if len(reach) == 0 {
		return
	}
	o.roots.Update(t, func(cv *verdict.Carried) { verdict.RaiseReach(&cv.Verdict, cv.Span.SpanID, reach) })
}

// Tick counts what became due by now: held roots whose abandoned_root_hold passed, verdicts the
// correlator gave up waiting for (max_request_duration, chain_wait for incomplete chains)
// and runs it closed (run_timeout). Call it every [TickInterval].
func (o *Observer) Tick() {
	now := o.now()
	o.ReleaseDue(now)
	o.flushRoots(now)
	// The correlator's memory is swept at most once per SweepInterval, as the processor does.
	o.sweepMu.Lock()
	due := now.Sub(o.lastSweep) >= SweepInterval
	if due {
		o.lastSweep = now
	}
	o.sweepMu.Unlock()
	if !due {
		return
	}
	carried, st := o.corr.Sweep(now.UnixNano())
	o.later(now, carried, &st)
	if o.lat != nil {
		o.lat.Expire(now)
	}
}

// Shutdown counts everything still owed: held roots, verdicts waiting for a root or a chain,
// open runs (closed with the outcome they have). Nothing is decided after it.
func (o *Observer) Shutdown() {
	o.keyClose() // key sharing: traces waiting for a key record are decided now (keys.go)
	now := o.now()
	// What waits is decided now, in the order its spans ended, as it would have been.
	ready := o.room.dueAt(time.Time{})
	for _, w := range ready {
		w.last = true
	}
	sort.SliceStable(ready, func(a, b int) bool { return firstEnd(ready[a]) < firstEnd(ready[b]) })
	o.decide(now, ready)
	o.flushRoots(time.Time{})
	carried, st := o.corr.Finish(now.UnixNano())
	o.later(now, carried, &st)
	if o.lat != nil {
		o.lat.Expire(time.Time{})
	}
}

// firstEnd is the earliest end of a waiting trace's records.
func firstEnd(w *waiting) int64 {
	var m int64
	for i := range w.spans {
		if e := w.spans[i].End; i == 0 || e < m {
			m = e
		}
	}
	return m
}

// flushRoots counts the held roots due at now (all with a zero now).
func (o *Observer) flushRoots(now time.Time) {
	for _, cv := range o.roots.Take(now, -1) {
		o.sink.Later(cv)
		if o.lat != nil {
			o.lat.Counted(cv.Span.TraceID, o.now())
		}
	}
}

// later counts carried verdicts given by a sweep or at shutdown.
func (o *Observer) later(now time.Time, carried []verdict.Carried, st *verdict.Stats) {
	for i := range carried {
		o.sink.Later(&carried[i])
		if o.lat != nil {
			o.lat.Counted(carried[i].Span.TraceID, now)
		}
	}
	o.count(0, st)
}

// Owed reports whether anything is still owed: held roots, records waiting for a root or a
// chain, open runs, traces the key gate holds or is still handing over. A test or a replay
// waits until it is false.
func (o *Observer) Owed() bool {
	_, pending, open := o.corr.Kept()
	held := o.roots.Len()
	o.room.mu.Lock()
	waiting := o.room.records
	o.room.mu.Unlock()
	return pending > 0 || open > 0 || held > 0 || waiting > 0 || o.keyOwed() > 0
}

// NextDue is when the first waiting trace or held root is due; zero when none waits.
func (o *Observer) NextDue() time.Time {
	at := o.room.nextDue()
	if r := o.roots.NextDue(); !r.IsZero() && (at.IsZero() || r.Before(at)) {
		at = r
	}
	return at
}

// Kept tells what is kept: records and traces waiting for their decision; records kept
// between decisions (of which wait for a root or a chain), open runs, held abandoned roots.
func (o *Observer) Kept() (waitingRecords, waitingTraces, records, pending, openRuns, heldRoots int) {
	o.room.mu.Lock()
	waitingRecords, waitingTraces = o.room.records, len(o.room.traces)
	o.room.mu.Unlock()
	records, pending, openRuns = o.corr.Kept()
	heldRoots = o.roots.Len()
	return waitingRecords, waitingTraces, records, pending, openRuns, heldRoots
}

// Evictions are the cumulative counts of what the correlator evicted to stay within its
// bounds, by state (the processor's evictions{state} values).
func (o *Observer) Evictions() map[string]uint64 {
	roots, keys := o.corr.Evicted()
	ctx, pending, expired, open := o.corr.EvictedKept()
	o.room.mu.Lock()
	traces, perTrace := o.room.evicted.traces, o.room.evicted.spansPerTrace
	o.room.mu.Unlock()
	return map[string]uint64{
		"traces": traces, "spans_per_trace": perTrace,
		"root_records": roots, "idempotency_keys": keys, "multi_root_spans": o.corr.EvictedIndexed(),
		"context_spans": ctx, "pending_spans": pending, "request_duration": expired, "open_runs": open,
	}
}

// Stats are an Observer's cumulative counts, for its component's telemetry.
type Stats struct {
	// Spans is the spans judged (verdicts decided, at hand or later).
	Spans int64
	// WithoutVerdict counts spans that got no verdict or `unknown`, by the processor's reasons
	// (zero_trace_id, ..., ambiguous_root, no_duration, root_missing).
	WithoutVerdict map[string]int64
	// AttributesIgnored counts unusable attribute values, by spanread's reasons.
	AttributesIgnored map[string]int64
	// RootMissing counts traces decided without their root; UnknownRootRuns the runs closed
	// unknown_root.
	RootMissing, UnknownRootRuns int64
	// Deferred counts spans whose verdict was left for later when they arrived.
	Deferred int64
}

// Stats returns the cumulative counts.
func (o *Observer) Stats() Stats {
	s := Stats{
		Spans:             o.stats.spans.Load(),
		WithoutVerdict:    map[string]int64{},
		AttributesIgnored: map[string]int64{},
		RootMissing:       o.stats.traceMiss.Load(),
		UnknownRootRuns:   o.stats.unknownRun.Load(),
		Deferred:          o.stats.deferred.Load(),
	}
	for _, r := range verdict.InvalidReasons() {
		s.WithoutVerdict[r.String()] = o.stats.invalid[r].Load()
	}
	s.WithoutVerdict["ambiguous_root"] = o.stats.ambiguous.Load()
	s.WithoutVerdict["no_duration"] = o.stats.noDuration.Load()
	s.WithoutVerdict["root_missing"] = o.stats.rootMiss.Load()
	for r := spanread.BadNone + 1; r < spanread.NumBadReasons; r++ {
		s.AttributesIgnored[r.String()] = o.stats.ignored[r].Load()
	}
	return s
}
