package verdict

import (
	"sync"

	"github.com/orphanwatch/orphanwatch/internal/shard"
	"github.com/orphanwatch/orphanwatch/internal/verdict/record"
	"github.com/orphanwatch/orphanwatch/internal/verdict/rules"
)

// The time model (DESIGN.md "When verdicts are decided"; docs/verdicts.md "When verdicts are
// decided"). The processor releases a trace's spans a short grace after its root arrived, or
// decision_wait after its first span when no root came; spans that arrive after that are
// released after the grace too. Each release goes through [Correlator.Release], which decides
// the spans with everything kept of their trace, so that what is decided is final whatever the
// moment of the decision:
//
//   - a trace memo: the spans of the trace released before (their [Span] records, not the
//     spans). Spans released before their root arrived are deferred: they leave with no
//     verdict, and their final verdicts are returned as [Carried] verdicts by the release that
//     has the root. Spans released after it are judged with their earlier siblings present, as
//     if all had come at once. Settled memos (nothing owed) are kept within
//     MaxContextSpans, oldest first out; memos that owe verdicts within MaxPendingSpans and
//     MaxRequestDuration, after which their spans are judged without a root (unknown) and
//     carried, counted as evicted.
//   - open runs: a run that is not over by the release's time (runOverAt: no success, its loop's
//     span not ended after its attempts, or its attempts carry an idempotency key or a message,
//     and run_timeout not passed) stays open instead of taking an outcome.
//     Later attempts, released later or in another trace with the same idempotency key
//     (queue redelivery, a client re-sending), continue it: numbered on, and the attempt that
//     closes it carries the outcome. A run closed without an attempt of its own in the release
//     (its loop's end settled, its run_timeout passed, a new run began after it) has its
//     outcome carried. Open runs are kept within MaxOpenRuns, oldest closed first, counted.
//
// Carried verdicts leave on another span of their trace (the processor puts them on the root
// when it can) or on a span made to carry them.

// Decision is what [Correlator.Release] decided of the spans given.
type Decision struct {
	// Verdicts of the spans given, in their order. Empty when Deferred.
	Verdicts []Verdict
	// Deferred is set when the spans' root has not arrived: they leave with no verdict (the
	// processor marks them AttrDeferred) and their verdicts are carried by a later release.
	Deferred bool
	// Carried verdicts of spans that left before: deferred ones, and outcomes of runs closed.
	Carried []Carried
	// Stats counts what was decided now: the spans given and the carried verdicts.
	Stats Stats
	// Reach is the cancellation reach and orphaned depth of every abandoned root of the trace
	// as this release sees them, with the spans released before: the processor holds an
	// abandoned root a while so that orphans arriving after it deepen its depth.
	Reach []RootReach
}

// RootReach is the cancellation reach of one root (Verdict.ReachHops, OrphanedDepthHops).
type RootReach struct {
	SpanID                       SpanID
	ReachHops, OrphanedDepthHops int
}

// RaiseReach raises v, the verdict of root span id, to the reach and depth reach gives that root
// (a later release of its trace saw more): what a component holding an abandoned root's verdict
// does with each Decision's Reach.
func RaiseReach(v *Verdict, id SpanID, reach []RootReach) {
	for _, r := range reach {
		if r.SpanID == id {
			v.ReachHops = max(v.ReachHops, r.ReachHops)
			v.OrphanedDepthHops = max(v.OrphanedDepthHops, r.OrphanedDepthHops)
		}
	}
}

// memoShard is the trace memos of the traces whose ID hashes to it (memoShardOf), with the
// buffers of a release, under its own mutex.
type memoShard struct {
	mu         sync.Mutex
	memos      map[TraceID]*traceMemo
	owingMemos map[TraceID]*traceMemo // the memos that owe verdicts (Sweep walks these)
	verdictBuf []Verdict
	inc        incrShard // the incremental path's counts and working memory (incremental.go)
	_          [64]byte  // keeps two shards' mutexes off one cache line
}

// lockedShard is a memo shard with its mutex held: what every function that needs its shard
// locked takes (deferLocked, decideMemoLocked, decideIncrementalLocked, settleChainsLocked and
// the rest of memo.go and incremental.go), so that the compiler, not a comment, checks that the
// caller locked it. Got from lock, given back with unlock. The lock order (a memo shard, then
// relMu or the state's mu, never the other way) follows from it: relMu and mu are taken inside
// a shard's lock only by functions given a lockedShard, and no function holding relMu or mu
// gets one (TestLockOrder checks the second half).
type lockedShard struct{ *memoShard }

// lock locks the shard for a release, a sweep or an eviction of one of its traces.
func (ms *memoShard) lock() lockedShard {
	if lockShardHook != nil {
		lockShardHook()
	}
	ms.mu.Lock()
	return lockedShard{ms}
}

// lockShardHook, set by a test only (TestLockOrder), is called before a memo shard is locked.
var lockShardHook func()

// unlock gives the shard back.
func (ms lockedShard) unlock() { ms.mu.Unlock() }

// memoShardOf is the memo shard of trace t (shard.Of: the trace ID's shard, as the processor's
// hold shards it, among shard.Count() shards).
func (c *Correlator) memoShardOf(t TraceID) *memoShard {
	return &c.memoShards[shard.Of(t, c.memoShardBits)]
}

// traceMemo is what is kept of a trace's released spans.
type traceMemo struct {
	spans   []Span
	emitted []bool
	edged   []bool // written (or carried) with an edge (CallerService)
	// edgePending counts spans written with their edge pending (Verdict.EdgePending).
	edgePending int
	owing       int   // spans whose verdict is deferred
	since       int64 // unix ns of the first deferral, for MaxRequestDuration (ChainWait when provisional)
	// provisional: the root is known and the owing spans wait for their chains (ChainWait).
	provisional bool
	queued      [2]bool
	// ix is the structure the incremental path reads (incremental.go), built at the trace's
	// second release; nil before, and dropped with the memo's slices (recycleMemo).
	ix *memoIndex
}

// Release decides spans of one trace that leave now (all of the same trace; see the package
// comment of memo.go): deferred when the trace's root has not arrived, otherwise decided with
// the spans kept of the trace, with the carried verdicts that became final. now is the unix
// time in nanoseconds. The verdicts share dst's memory when it is large enough. Call Observe
// for the spans first.
//
// extra, when set, gives the Extra of spans[i] for a span whose record is kept to be carried
// later (a deferred span, the final attempt of a run left open); it is called only for those.
func (c *Correlator) Release(dst []Verdict, spans []Span, now int64, extra func(i int) any) Decision {
	if len(spans) == 0 {
		return Decision{}
	}
	c.rules.MarkFuture(spans, now)
	t := spans[0].TraceID
	ms := c.memoShardOf(t).lock()
	if !c.Knows(t) {
		c.deferLocked(ms, t, spans, now, extra)
		ms.unlock()
		c.evictOver(queuePending, now)
		return Decision{Deferred: true}
	}
	d := c.decideMemoLocked(ms, dst, t, spans, rules.ModeRelease, now, extra)
	ms.unlock()
	c.evictOver(queueSettled, now)
	return d
}

// ReleaseLast is Release when no later release will come (the processor's shutdown): nothing
// is deferred; spans whose root has not arrived are judged without it; every run is over but a
// keyed run's or a delivery's, which another trace released last may continue (Finish closes
// them; extra, as Release's, gives the Extra of their final attempts).
func (c *Correlator) ReleaseLast(dst []Verdict, spans []Span, now int64, extra func(i int) any) Decision {
	if len(spans) == 0 {
		return Decision{}
	}
	c.rules.MarkFuture(spans, now)
	ms := c.memoShardOf(spans[0].TraceID).lock()
	defer ms.unlock()
	return c.decideMemoLocked(ms, dst, spans[0].TraceID, spans, rules.ModeFinal, now, extra)
}

// deferLocked keeps the spans in their trace's memo, owing their verdicts. ms, t's shard, is
// locked; the caller then keeps MaxPendingSpans (evictOver).
func (c *Correlator) deferLocked(ms lockedShard, t TraceID, spans []Span, now int64, extra func(i int) any) {
	m := ms.memos[t]
	if m == nil {
		m = &traceMemo{}
		ms.memos[t] = m
	}
	if m.owing == 0 {
		m.since = now
	}
	c.growMemo(m, len(spans))
	from := len(m.spans)
	for i := range spans {
		m.spans = append(m.spans, spans[i])
		if extra != nil {
			m.spans[len(m.spans)-1].Extra = extra(i)
		}
		m.emitted = append(m.emitted, false)
		m.edged = append(m.edged, false)
	}
	c.keepIndexed(m, from)
	m.owing += len(spans)
	ms.owingMemos[t] = m
	c.relMu.Lock()
	defer c.relMu.Unlock()
	c.memoSpans += len(spans)
	c.pendingSpans += len(spans)
	if !m.queued[queuePending] {
		m.queued[queuePending] = true
		c.memoOrder[queuePending].Push(t)
	}
}

const (
	queueSettled = 0
	queuePending = 1
)

// decideMemoLocked decides spans with the trace's memo at now (unix ns); ModeFinal closes every
// run and judges deferred spans with whatever is known, and drops the memo. ms, t's shard, is
// locked; after a release the caller keeps MaxContextSpans (evictOver).
//
// Its steps: the spans join the memo; the path is chosen (choosePath: a later release of a
// trace with an index is decided incrementally, decideIncrementalLocked, unless a fallback
// applies); the whole trace is decided; the carried verdicts and the stats are gathered
// (gatherDecision); the memo is booked (decidedAgain, released, bookMemoLocked) and its index
// built or brought up to date.
func (c *Correlator) decideMemoLocked(ms lockedShard, dst []Verdict, t TraceID, spans []Span, mode rules.ReleaseMode, now int64, extra func(i int) any) Decision {
	final := mode == rules.ModeFinal
	m := ms.memos[t]
	all := spans
	// With a memo, the spans join it first and the decision reads the memo in place (the
	// earlier spans, then these): no copy of the earlier spans at each release.
	inMemo := m != nil && len(m.spans) > 0
	nOld := 0
	var emitted []bool
	if inMemo {
		nOld = len(m.spans)
		c.growMemo(m, len(spans))
		m.spans = append(m.spans, spans...)
		all = m.spans
		emitted = m.emitted
	}
	build := false
	if mode == rules.ModeRelease {
		var incremental bool
		incremental, build = c.choosePath(ms, t, m, nOld)
		if incremental {
			return c.decideIncrementalLocked(ms, dst, t, m, nOld, now, extra)
		}
	}
	in := rules.DecisionIn{Trace: t, Mode: mode, Now: now, Extra: extra, NOld: nOld, Emitted: emitted}
	verdicts, st, out := c.rules.Decide(ms.verdictBuf[:0], all, &in, rules.DecisionOut{Opened: ms.inc.opened[:0]}, c.ruleState())
	ms.inc.spansDecided += uint64(len(all))
	ms.inc.opened = out.Opened[:0]
	d := gatherDecision(dst, m, all, verdicts, in.NOld, nil, st, &out, nil)
	defer func() {
		clear(verdicts)
		ms.verdictBuf = verdicts[:0]
	}()

	// The memo now holds every span of the trace released so far: written, carried, or owing
	// (provisional).
	if m == nil {
		if final {
			return d
		}
		m = &traceMemo{}
		ms.memos[t] = m
	}
	c.relMu.Lock()
	if final {
		if inMemo { // the spans joined the memo for the decision only: not counted in memoSpans
			clear(m.spans[in.NOld:])
			m.spans = m.spans[:in.NOld]
		}
		c.dropMemo(ms, t, m)
		c.relMu.Unlock()
		c.recycleMemo(m) // its records cleared outside relMu
		return d
	}
	defer c.relMu.Unlock()
	c.pendingSpans -= m.owing
	m.owing = 0
	m.edgePending = 0
	for i := range m.emitted {
		m.decidedAgain(i, &verdicts[i])
	}
	if !inMemo {
		c.growMemo(m, len(spans))
		m.spans = append(m.spans, spans...)
	}
	m.released(in.NOld, d.Verdicts, extra)
	for i := range m.emitted {
		if !m.emitted[i] {
			m.owing++
		} else if verdicts[i].EdgePending {
			m.edgePending++
		}
	}
	// The index: built at the trace's second release (a trace released once never pays for
	// one), else its new spans were linked by choosePath; it learns what this decision left.
	if build {
		m.ix = c.newMemoIndex(cap(m.spans))
		c.keepIndexed(m, 0)
	}
	if m.ix != nil {
		c.afterWholeLocked(ms, m, t, &out, verdicts, true, nil)
	}
	c.memoSpans += len(spans)
	c.bookMemoLocked(ms, t, m, now)
	return d
}

// gatherDecision is the one way a release's Decision is gathered from the decision of its trace
// (decideMemoLocked: the whole trace; decideIncrementalLocked: a subset): all are the spans
// decided, the memo's first (positions below nOld: memo index memoPos[p], or p itself when
// memoPos is nil), then the release's own; verdicts are theirs by position, st the decision's
// stats and out its return. The Decision has the release's verdicts (in dst's memory when large
// enough), the run outcomes carried (out) and what the memo's spans decided again are owed
// (carryEarlier: a deferred verdict, an edge), the stats of the release's spans and of the whole
// verdicts carried, and the reach of the abandoned roots decided. With root set (a decision of
// a subset: the index's reach and depth of its root, memo index root.at), the root's reach and
// depth are raised to what the spans outside the subset gave, and root learns the result.
func gatherDecision(dst []Verdict, m *traceMemo, all []Span, verdicts []Verdict, nOld int, memoPos []int32, st Stats, out *rules.DecisionOut, root *rootReachSoFar) Decision {
	var d Decision
	d.Verdicts = rules.Grown(dst, len(all)-nOld)
	copy(d.Verdicts, verdicts[nOld:])
	d.Carried = out.Carried
	for p := range nOld {
		i := p
		if memoPos != nil {
			i = int(memoPos[p])
		}
		carryEarlier(&d, m, i, &verdicts[p])
	}
	d.Stats = statsOf(all[nOld:], verdicts[nOld:], st.RootMissing)
	d.Stats.RootUnusable = d.Stats.RootMissing && st.RootUnusable
	d.addCarriedStats(st.RootMissing)
	d.Stats.UnknownRootRuns += out.Unknown
	for p := range verdicts {
		if v := &verdicts[p]; v.HasReach {
			rr := RootReach{SpanID: all[p].SpanID, ReachHops: v.ReachHops, OrphanedDepthHops: v.OrphanedDepthHops}
			if root != nil && memoPos[p] == root.at { // spans outside the subset count too
				rr.ReachHops, rr.OrphanedDepthHops = max(rr.ReachHops, root.reach), max(rr.OrphanedDepthHops, root.depth)
				root.reach, root.depth = rr.ReachHops, rr.OrphanedDepthHops
			}
			d.Reach = append(d.Reach, rr)
		}
	}
	return d
}

// rootReachSoFar is the reach and depth a memo's index kept of its trace's root (memo index at)
// from earlier decisions: what a decision of a subset adds to (gatherDecision).
type rootReachSoFar struct {
	at           int32
	reach, depth int
}

// bookMemoLocked books a memo after a release decided it (its owing spans counted): the memos
// that owe verdicts, the pending count, the two eviction queues. ms, t's shard, and relMu are
// locked.
func (c *Correlator) bookMemoLocked(ms lockedShard, t TraceID, m *traceMemo, now int64) {
	if m.owing > 0 {
		ms.owingMemos[t] = m
		c.pendingSpans += m.owing
		if m.since == 0 || !m.provisional {
			m.since, m.provisional = now, true
		}
		if !m.queued[queuePending] {
			m.queued[queuePending] = true
			c.memoOrder[queuePending].Push(t)
		}
	} else {
		delete(ms.owingMemos, t)
		m.provisional = false
	}
	if !m.queued[queueSettled] {
		m.queued[queueSettled] = true
		c.memoOrder[queueSettled].Push(t)
	}
}

// decidedAgain marks span i of the memo, released before and decided again with verdict v: it
// has left with its verdict now (written or carried) unless it is still provisional. The one
// way a release books the memo's spans it decided again (decideMemoLocked,
// decideIncrementalLocked).
func (m *traceMemo) decidedAgain(i int, v *Verdict) {
	if !m.emitted[i] && !v.Provisional {
		m.emitted[i] = true
		m.edged[i] = v.CallerService != ""
	}
}

// released marks the release's own spans (m.spans[nOld:], their verdicts vs): written, or
// provisional (owing), their records keeping the reader's Extra (extra) to be carried later.
// The one way a release books its new spans (decideMemoLocked, decideIncrementalLocked).
func (m *traceMemo) released(nOld int, vs []Verdict, extra func(i int) any) {
	for q := range vs {
		v := &vs[q]
		m.emitted = append(m.emitted, !v.Provisional) // room made by growMemo with the records
		m.edged = append(m.edged, v.CallerService != "")
		if v.Provisional && extra != nil {
			m.spans[nOld+q].Extra = extra(q)
		}
	}
}

// carryEarlier appends to d what span i of the memo m, released before, is owed by its verdict
// v in this decision: its whole verdict when it left deferred and is decided now (not
// provisional any more), or its edge alone (PartEdge) when it left with its verdict and a span
// above it, its caller's, came after it. m's shard is locked.
func carryEarlier(d *Decision, m *traceMemo, i int, v *Verdict) {
	switch {
	case !m.emitted[i] && !v.Provisional:
		d.Carried = append(d.Carried, Carried{Span: record.CarriedOf(&m.spans[i]), Verdict: *v})
	case m.emitted[i] && v.CallerService != "" && !m.edged[i]:
		d.Carried = append(d.Carried, Carried{Span: record.CarriedOf(&m.spans[i]), Verdict: Verdict{CallerService: v.CallerService}, Part: PartEdge})
		m.edged[i] = true
	}
}

// addCarriedStats adds to d's stats the whole verdicts it carries (a part counts nowhere: its
// span was counted when it left).
func (d *Decision) addCarriedStats(rootMissing bool) {
	for i := range d.Carried {
		if cv := &d.Carried[i]; cv.Part == PartAll {
			d.Stats.Add(statsOf([]Span{{Start: cv.Span.Start, End: cv.Span.End}}, []Verdict{cv.Verdict}, rootMissing)) // statsOf reads a span's times only
		}
	}
}

// dropMemo forgets the memo m of trace t. ms, t's shard, and relMu are locked; the caller gives
// m's slices back (recycleMemo) once relMu is unlocked.
func (c *Correlator) dropMemo(ms lockedShard, t TraceID, m *traceMemo) {
	c.memoSpans -= len(m.spans)
	c.pendingSpans -= m.owing
	if ms.memos[t] == m {
		delete(ms.memos, t)
	}
	if ms.owingMemos[t] == m {
		delete(ms.owingMemos, t)
	}
}

// evictOver keeps a bound of the memos after a release, as evictMemo says: MaxPendingSpans
// (q queuePending) or MaxContextSpans (queueSettled). No shard is locked.
func (c *Correlator) evictOver(q int, now int64) {
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	for c.over(q) {
		if !c.evictMemo(q, now) {
			break
		}
	}
}

// over reports whether the memos are over the bound of queue q.
func (c *Correlator) over(q int) bool {
	c.relMu.Lock()
	defer c.relMu.Unlock()
	if q == queuePending {
		return c.pendingSpans > c.cfg.MaxPendingSpans
	}
	return c.memoSpans-c.pendingSpans > c.cfg.MaxContextSpans
}

// evictMemo makes room, at now (unix ns), in one of the memo bounds: the oldest settled memo of
// all shards is forgotten (its spans were all written; later spans of its trace are judged
// without them), or the oldest memo that owes verdicts is given up (its spans judged without
// their root, carried). False when none is left. No shard is locked.
func (c *Correlator) evictMemo(q int, now int64) bool {
	for {
		c.relMu.Lock()
		t, ok := c.memoOrder[q].Pop()
		c.relMu.Unlock()
		if !ok {
			return false
		}
		ms := c.memoShardOf(t).lock()
		evicted := c.evictMemoLocked(ms, q, t, now)
		ms.unlock()
		if evicted {
			return true
		}
	}
}

// evictMemoLocked is evictMemo for trace t, taken from the front of queue q; ms, t's shard, is
// locked. False when t's memo is gone or no longer in q.
func (c *Correlator) evictMemoLocked(ms lockedShard, q int, t TraceID, now int64) bool {
	m := ms.memos[t]
	if m == nil || !m.queued[q] {
		return false
	}
	m.queued[q] = false
	if q == queueSettled {
		if m.owing > 0 {
			return false // it owes verdicts again: bounded as pending
		}
		if m.edgePending > 0 {
			c.nameEdgesLocked(ms, t, m, now)
		}
		c.relMu.Lock()
		c.evictedContext += uint64(len(m.spans))
		c.dropMemo(ms, t, m)
		c.relMu.Unlock()
		c.recycleMemo(m) // its records cleared outside relMu
		return true
	}
	if m.owing == 0 {
		return false
	}
	c.relMu.Lock()
	c.evictedPending += uint64(m.owing)
	c.relMu.Unlock()
	c.giveUpLocked(ms, t, now)
	return true
}

// nameEdgesLocked names the edges still pending in a memo about to be forgotten, as a decision
// of all its spans would (their chains will not be completed here any more); they are carried
// by the next Sweep.
func (c *Correlator) nameEdgesLocked(ms lockedShard, t TraceID, m *traceMemo, now int64) {
	in := rules.DecisionIn{Trace: t, Mode: rules.ModeEdges, Now: now, NOld: len(m.spans), Emitted: m.emitted}
	verdicts, _, out := c.rules.Decide(ms.verdictBuf[:0], m.spans, &in, rules.DecisionOut{}, c.ruleState())
	c.relMu.Lock()
	defer c.relMu.Unlock()
	for i := range verdicts {
		if v := &verdicts[i]; v.CallerService != "" && !m.edged[i] {
			c.swept = append(c.swept, Carried{Span: record.CarriedOf(&m.spans[i]), Verdict: Verdict{CallerService: v.CallerService}, Part: PartEdge})
			m.edged[i] = true
		}
	}
	c.swept = append(c.swept, out.Carried...)
	clear(verdicts)
	ms.verdictBuf = verdicts[:0]
}

// settleChainsLocked judges a trace's provisional spans, whose chains did not complete within
// ChainWait, against the root the absent-parent rule gives them; carried by the next Sweep. With
// an index (and no fallback: incrementalReason) only the provisional spans are decided, with the
// spans they read (subset), not the whole trace.
func (c *Correlator) settleChainsLocked(ms lockedShard, t TraceID, now int64) {
	m := ms.memos[t]
	b := &ms.inc
	all, emitted := m.spans, m.emitted
	var sub []int32 // the subset decided (incremental.go), nil when the whole trace is
	if m.ix != nil && c.incrementalReason(t, m) == wholeNone {
		sub = c.subset(ms, m, t, len(m.spans), now, true)
		all, emitted = b.all[:0], b.emit[:0]
		for _, i := range sub {
			all = append(all, m.spans[i])
			emitted = append(emitted, m.emitted[i])
		}
		b.ctxPos = contextOnly(b.ctxPos, b.ctx, sub)
	}
	in := rules.DecisionIn{Trace: t, Mode: rules.ModeChains, Now: now, NOld: len(all), Emitted: emitted}
	if sub != nil {
		in.Context = b.ctxPos
	}
	verdicts, st, out := c.rules.Decide(ms.verdictBuf[:0], all, &in, rules.DecisionOut{Opened: b.opened[:0]}, c.ruleState())
	b.spansDecided += uint64(len(all))
	if sub != nil {
		keepCached(m, all, sub)
	}
	c.relMu.Lock()
	defer c.relMu.Unlock()
	settled := b.settled[:0]
	for p := range verdicts {
		i := p
		if sub != nil {
			i = int(sub[p])
		}
		if !m.emitted[i] {
			c.swept = append(c.swept, Carried{Span: record.CarriedOf(&m.spans[i]), Verdict: verdicts[p]})
			c.sweptStats.Add(statsOf(m.spans[i:i+1], verdicts[p:p+1], st.RootMissing))
			m.emitted[i] = true
			m.edged[i] = verdicts[p].CallerService != ""
			if verdicts[p].EdgePending {
				m.edgePending++
			}
			settled = append(settled, int32(p))
		}
	}
	if sub != nil {
		c.afterSubsetLocked(ms, m, t, &out, verdicts, sub, settled)
		clear(all) // the buffer's copies point into span strings
		b.all, b.emit = all[:0], emitted[:0]
	} else if m.ix != nil {
		c.afterWholeLocked(ms, m, t, &out, verdicts, false, settled)
	}
	b.settled = settled[:0]
	b.opened = out.Opened[:0]
	c.swept = append(c.swept, out.Carried...)
	c.pendingSpans -= m.owing
	m.owing, m.provisional = 0, false
	delete(ms.owingMemos, t)
	if !m.queued[queueSettled] { // taken off the settled queue while it owed (evictMemoLocked)
		m.queued[queueSettled] = true
		c.memoOrder[queueSettled].Push(t)
	}
	clear(verdicts)
	ms.verdictBuf = verdicts[:0]
}

// giveUpLocked judges a trace's deferred spans without their root and closes its runs; their
// verdicts are carried by the next Sweep. ms, t's shard, is locked.
func (c *Correlator) giveUpLocked(ms lockedShard, t TraceID, now int64) {
	d := c.decideMemoLocked(ms, nil, t, nil, rules.ModeFinal, now, nil)
	c.relMu.Lock()
	defer c.relMu.Unlock()
	c.swept = append(c.swept, d.Carried...)
	c.sweptStats.Add(d.Stats)
}

// Sweep gives up, at now (unix ns), the traces whose verdicts were deferred for longer than
// MaxRequestDuration (their root never came) and closes the open runs that no attempt can
// join any more (run_timeout after their final attempt ended, plus the clock-skew tolerance).
// It returns the carried verdicts of those and of everything evicted since the last Sweep,
// with their stats; the caller writes them out on carrier spans.
func (c *Correlator) Sweep(now int64) ([]Carried, Stats) {
	for i := range c.memoShards {
		ms := c.memoShards[i].lock()
		for t, m := range ms.owingMemos { // settled memos owe nothing: not walked
			switch {
			case m.owing > 0 && m.provisional && now-m.since > int64(c.cfg.ChainWait):
				c.settleChainsLocked(ms, t, now)
			case m.owing > 0 && now-m.since > int64(c.cfg.MaxRequestDuration):
				c.relMu.Lock()
				c.evictedExpired += uint64(m.owing)
				c.relMu.Unlock()
				c.giveUpLocked(ms, t, now)
			}
		}
		ms.unlock()
	}
	return c.closeRuns(func(r *rules.OpenRun) bool {
		return r.OverAt != rules.OverNever && now > r.OverAt // runOverAt: the rules of time
	})
}

// Finish gives up, at now (unix ns), every trace that owes verdicts and closes every open run
// (the processor's shutdown), returning their carried verdicts as Sweep does.
func (c *Correlator) Finish(now int64) ([]Carried, Stats) {
	for i := range c.memoShards {
		ms := c.memoShards[i].lock()
		for t, m := range ms.owingMemos {
			if m.owing > 0 {
				c.giveUpLocked(ms, t, now)
			}
		}
		ms.unlock()
	}
	return c.closeRuns(func(*rules.OpenRun) bool { return true })
}

// closeRuns closes the open runs over says are over and hands over the carried verdicts swept
// so far (Sweep's and Finish's end), under relMu.
func (c *Correlator) closeRuns(over func(r *rules.OpenRun) bool) ([]Carried, Stats) {
	c.relMu.Lock()
	defer c.relMu.Unlock()
	c.open.All(func(id rules.RunID, r *rules.OpenRun) bool {
		if over(r) {
			c.open.Delete(id)
			c.sweptRun(r)
		}
		return true
	})
	out, st := c.swept, c.sweptStats
	c.swept, c.sweptStats = nil, Stats{}
	return out, st
}

// Kept tells what the time model keeps: spans in trace memos, of which owe verdicts, and open
// runs.
func (c *Correlator) Kept() (memoSpans, pendingSpans, openRuns int) {
	c.relMu.Lock()
	defer c.relMu.Unlock()
	return c.memoSpans, c.pendingSpans, c.open.Len()
}

// EvictedKept tells how many memo spans were forgotten to stay within MaxContextSpans, how
// many deferred spans were given up to stay within MaxPendingSpans or after MaxRequestDuration,
// and how many open runs were closed to stay within MaxOpenRuns.
func (c *Correlator) EvictedKept() (context, pending, expired, openRuns uint64) {
	c.relMu.Lock()
	defer c.relMu.Unlock()
	return c.evictedContext, c.evictedPending, c.evictedExpired, c.open.Evicted()
}

// statsOf counts what the verdicts of spans tell the processor's telemetry.
func statsOf(spans []Span, vs []Verdict, rootMissing bool) Stats {
	var st Stats
	for i := range vs {
		v, s := &vs[i], &spans[i]
		if v.Provisional {
			continue // counted when its verdict is carried
		}
		st.Spans++
		st.Invalid[v.Invalid]++
		if v.Ambiguous {
			st.AmbiguousRoot++
		}
		if v.Invalid == Valid && !v.Detached && v.EndReason == EndReasonNone && rules.UnknownEnd(s) && v.Liveness == LivenessUnknown {
			st.NoDuration++
		}
		if v.Outcome == OutcomeUnknownRoot {
			st.UnknownRootRuns++
		}
	}
	st.Invalid[Valid] = 0
	if rootMissing {
		for i := range vs {
			if withoutRoot(&spans[i], &vs[i]) {
				st.RootMissingSpans++
			}
		}
	}
	st.RootMissing = st.RootMissingSpans > 0
	return st
}

// withoutRoot reports whether a span's verdict is "unknown" for want of a root: a valid span,
// not detached work, not a root, with a duration, its liveness unknown. Spans that an
// idempotency key or a deadline binds to a root elsewhere have a verdict and are not counted;
// detached work (a consumer's trace, a linked trace) needs no root of its own.
func withoutRoot(s *Span, v *Verdict) bool {
	return v.Invalid == Valid && !v.Provisional && !v.Detached && !v.Ambiguous && v.EndReason == EndReasonNone &&
		s.End != s.Start && v.Liveness == LivenessUnknown
}

// WithoutRoot reports whether a span's verdict is "unknown" for want of a root (withoutRoot),
// for a reader that counts the spans decided with [Correlator.DecideInto].
func WithoutRoot(s *Span, v *Verdict) bool { return withoutRoot(s, v) }
