package verdict

import "slices"

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
//   - open runs: a run whose final attempt so far is not terminal, whose loop has not ended
//     and whose run_timeout has not passed stays open (runOver) instead of taking an outcome.
//     Later attempts, released later or in another trace with the same idempotency key
//     (queue redelivery, a client re-sending), continue it: numbered on, and the attempt that
//     closes it carries the outcome. A run closed without an attempt of its own in the release
//     (its loop arrived, its run_timeout passed, a new run began after it) has its outcome
//     carried. Open runs are kept within MaxOpenRuns, oldest closed first, counted.
//
// Carried verdicts leave on another span of their trace (the processor puts them on the root
// when it can) or on a span made to carry them.

// Carried is a final verdict of a span that already left: written as an EventVerdict event by
// the processor. Part says which part of the span's verdict it is.
type Carried struct {
	Span    Span
	Verdict Verdict
	Part    Part
}

// Part is the part of a span's verdict a Carried holds.
type Part uint8

// Parts of a verdict carried.
const (
	// PartAll: the whole verdict of a span that left deferred.
	PartAll Part = iota
	// PartRun: only the outcome of a run whose final attempt, Span, left with the run open
	// (Outcome, RunAttempts, RunOK); the rest of Span's verdict was written on it.
	PartRun
	// PartEdge: only the edge (CallerService) of an orphaned span that entered its service
	// from a caller whose span arrived after it left.
	PartEdge
)

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

// release is one Release call's state, which the run rules consult.
type release struct {
	t       TraceID
	nOld    int    // spans[:nOld] of the decision come from the trace's memo
	emitted []bool // of those: the verdict was written on the span when it left
	final   bool   // every run is over: the trace is given up (or decided whole)
	now     int64  // unix ns
	carried []Carried
	unknown int // runs closed unknown_root among carried run outcomes
	extra   func(i int) any
	// edgesFinal: name the edges of orphaned entries whose chain to the root is incomplete
	// (a settled memo forgotten: no more of its spans will be seen with them).
	edgesFinal bool
	// chainsFinal: judge spans whose chain is incomplete (ChainWait passed) instead of marking
	// them provisional; their edges stay pending.
	chainsFinal bool
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
}

// runID identifies an open run: within a trace, parent span and operation key; across traces,
// an attempt that carries an idempotency key joins the runs of its key, service and operation.
type runID struct {
	t      TraceID
	parent SpanID
	op     uint64
	kind   uint64 // for keyed runs: hash of service, kind and name
}

// openRun is a run left open by a release.
type openRun struct {
	trace    TraceID
	last     Span // its final attempt so far
	attempts int  // attempts so far
	base     int  // attempts before the first one of trace's own part of the run
	split    bool // it began because the run before it was over
	outcome  Outcome
	ok       bool
	seq      uint64
	// stopsAt: unix ns after which the run is over because its loop recorded the cancellation
	// (loopStopsAt); 0 when that rule does not apply.
	stopsAt int64
}

// continuation is the open run an attempt group continues.
type continuation struct {
	prior      *openRun
	inDecision bool // the open run's attempts are among the decision's spans (the memo)
	offset     int  // attempts counted before the group's first
	split      bool
}

func runIDOf(t TraceID, s *Span) runID {
	if s.KeyHash == 0 && !isDelivery(s) {
		return runID{t: t, parent: s.ParentID, op: opKey(s)}
	}
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for _, str := range [2]string{s.Service, s.Name} {
		for i := 0; i < len(str); i++ {
			h = (h ^ uint64(str[i])) * prime64
		}
		h = (h ^ 0xff) * prime64
	}
	h = (h ^ uint64(s.Kind)) * prime64
	return runID{op: opKey(s), kind: h}
}

// continuedRun finds the open run the attempt group refs continues (nil rel: none).
func (c *Correlator) continuedRun(rel *release, spans []Span, refs []attemptRef) continuation {
	if rel == nil {
		return continuation{}
	}
	first := &spans[refs[0].i]
	id := runIDOf(rel.t, first)
	prior := c.open[id]
	if prior == nil {
		return continuation{}
	}
	if prior.trace == rel.t {
		for _, r := range refs {
			if int(r.i) < rel.nOld && spans[r.i].SpanID == prior.last.SpanID && spans[r.i].Kind == prior.last.Kind {
				return continuation{prior: prior, inDecision: true, offset: prior.base, split: prior.split}
			}
		}
	}
	// Its attempts left with an earlier release whose memo is gone, or came in another trace:
	// the group goes on from its count, or begins a new run (decideRuns).
	delete(c.open, id)
	return continuation{prior: prior, offset: prior.attempts, split: prior.split}
}

// priorClosed: the open run prior is over, a new run began after it; its outcome leaves now.
func (c *Correlator) priorClosed(rel *release, prior *openRun) {
	rel.carried = append(rel.carried, Carried{Span: prior.last, Part: PartRun,
		Verdict: Verdict{Outcome: prior.outcome, RunAttempts: prior.attempts, RunOK: prior.ok}})
	if prior.outcome == OutcomeUnknownRoot {
		rel.unknown++
	}
}

// runStaysOpen records the run whose final attempt so far is spans[last] as open.
func (c *Correlator) runStaysOpen(rel *release, spans []Span, last int32, total int, cont continuation, split bool, outcome Outcome, ok bool, stopsAt int64) {
	s := &spans[last]
	id := runIDOf(rel.t, s)
	r := c.open[id]
	if r == nil {
		for len(c.open) >= c.cfg.MaxOpenRuns {
			if !c.evictOpenRun() {
				break
			}
		}
		r = &openRun{}
		c.open[id] = r
		c.openSeq++
		r.seq = c.openSeq
		c.openOrder.Push(openEntry{id, r.seq})
	}
	keep := r.last.Extra
	sameLast := r.last.SpanID == s.SpanID && r.last.Kind == s.Kind
	r.trace, r.last, r.attempts, r.base, r.split, r.outcome, r.ok, r.stopsAt = rel.t, *s, total, cont.offset, split, outcome, ok, stopsAt
	switch {
	case r.last.Extra != nil:
	case sameLast:
		r.last.Extra = keep
	case int(last) >= rel.nOld && rel.extra != nil:
		r.last.Extra = rel.extra(int(last) - rel.nOld)
	}
}

// runClosed: the run whose final attempt is spans[last] is over in this release. When that
// attempt left earlier with the run open, the outcome is carried now.
func (c *Correlator) runClosed(rel *release, spans []Span, out []Verdict, last int32) {
	if rel == nil {
		return
	}
	s := &spans[last]
	id := runIDOf(rel.t, s)
	prior := c.open[id]
	if prior == nil || prior.trace != rel.t {
		return
	}
	delete(c.open, id)
	if int(last) < rel.nOld && rel.emitted[last] && prior.last.SpanID == s.SpanID && prior.last.Kind == s.Kind {
		v := &out[last]
		rel.carried = append(rel.carried, Carried{Span: *s, Part: PartRun,
			Verdict: Verdict{Outcome: v.Outcome, RunAttempts: v.RunAttempts, RunOK: v.RunOK}})
	}
}

// openEntry is an open run in eviction order; stale when the run was closed or replaced.
type openEntry struct {
	id  runID
	seq uint64
}

// evictOpenRun closes the oldest open run (its outcome carried, as decided when it was left
// open) to make room; false when none is left.
func (c *Correlator) evictOpenRun() bool {
	for {
		e, ok := c.openOrder.Pop()
		if !ok {
			return false
		}
		r := c.open[e.id]
		if r == nil || r.seq != e.seq {
			continue
		}
		delete(c.open, e.id)
		c.evictedOpenRuns++
		c.sweptRun(r)
		return true
	}
}

// sweptRun carries the outcome of an open run closed outside a release.
func (c *Correlator) sweptRun(r *openRun) {
	c.swept = append(c.swept, Carried{Span: r.last, Part: PartRun,
		Verdict: Verdict{Outcome: r.outcome, RunAttempts: r.attempts, RunOK: r.ok}})
	if r.outcome == OutcomeUnknownRoot {
		c.sweptStats.UnknownRootRuns++
	}
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
	c.relMu.Lock()
	defer c.relMu.Unlock()
	c.lastNow = now
	t := spans[0].TraceID
	if !c.Knows(t) {
		c.deferLocked(t, spans, now, extra)
		return Decision{Deferred: true}
	}
	return c.decideMemoLocked(dst, t, spans, false, now, extra)
}

// ReleaseLast is Release when no later release will come (the processor's shutdown): nothing
// is deferred or left open; spans whose root has not arrived are judged without it.
func (c *Correlator) ReleaseLast(dst []Verdict, spans []Span, now int64) Decision {
	if len(spans) == 0 {
		return Decision{}
	}
	c.relMu.Lock()
	defer c.relMu.Unlock()
	c.lastNow = now
	return c.decideMemoLocked(dst, spans[0].TraceID, spans, true, now, nil)
}

// deferLocked keeps the spans in their trace's memo, owing their verdicts.
func (c *Correlator) deferLocked(t TraceID, spans []Span, now int64, extra func(i int) any) {
	m := c.memos[t]
	if m == nil {
		m = &traceMemo{}
		c.memos[t] = m
	}
	if m.owing == 0 {
		m.since = now
	}
	m.spans = slices.Grow(m.spans, len(spans))
	m.emitted = slices.Grow(m.emitted, len(spans))
	m.edged = slices.Grow(m.edged, len(spans))
	for i := range spans {
		m.spans = append(m.spans, spans[i])
		if extra != nil {
			m.spans[len(m.spans)-1].Extra = extra(i)
		}
		m.emitted = append(m.emitted, false)
		m.edged = append(m.edged, false)
	}
	c.memoSpans += len(spans)
	m.owing += len(spans)
	c.pendingSpans += len(spans)
	if !m.queued[queuePending] {
		m.queued[queuePending] = true
		c.memoOrder[queuePending].Push(t)
	}
	for c.pendingSpans > c.cfg.MaxPendingSpans {
		if !c.evictMemo(queuePending) {
			break
		}
	}
}

const (
	queueSettled = 0
	queuePending = 1
)

// decideMemoLocked decides spans with the trace's memo; final closes every run and judges
// deferred spans with whatever is known, and drops the memo.
func (c *Correlator) decideMemoLocked(dst []Verdict, t TraceID, spans []Span, final bool, now int64, extra func(i int) any) Decision {
	m := c.memos[t]
	all := spans
	rel := &release{t: t, final: final, now: now, extra: extra}
	if m != nil && len(m.spans) > 0 {
		all = append(append(c.allBuf[:0], m.spans...), spans...)
		rel.nOld, rel.emitted = len(m.spans), m.emitted
	}
	verdicts, st := c.decide(c.verdictBuf[:0], all, rel)
	var d Decision
	d.Verdicts = grown(dst, len(spans))
	copy(d.Verdicts, verdicts[rel.nOld:])
	d.Carried = rel.carried
	for i := 0; i < rel.nOld; i++ {
		switch v := &verdicts[i]; {
		case !rel.emitted[i] && !v.Provisional:
			d.Carried = append(d.Carried, Carried{Span: all[i], Verdict: *v})
		case rel.emitted[i] && v.CallerService != "" && !m.edged[i]:
			// Its caller's span, or a span above it, came after it left: the edge is named now.
			d.Carried = append(d.Carried, Carried{Span: all[i], Verdict: Verdict{CallerService: v.CallerService}, Part: PartEdge})
			m.edged[i] = true
		}
	}
	d.Stats = statsOf(all[rel.nOld:], verdicts[rel.nOld:], st.RootMissing)
	for i := range d.Carried {
		if cv := &d.Carried[i]; cv.Part == PartAll {
			d.Stats.add(statsOf([]Span{cv.Span}, []Verdict{cv.Verdict}, st.RootMissing))
		}
	}
	d.Stats.UnknownRootRuns += rel.unknown
	for i := range verdicts {
		if v := &verdicts[i]; v.HasReach {
			d.Reach = append(d.Reach, RootReach{SpanID: all[i].SpanID, ReachHops: v.ReachHops, OrphanedDepthHops: v.OrphanedDepthHops})
		}
	}
	defer func() {
		if len(all) > len(spans) {
			clear(all) // the buffer's copies point into span strings
			c.allBuf = all[:0]
		}
		clear(verdicts)
		c.verdictBuf = verdicts[:0]
	}()

	// The memo now holds every span of the trace released so far: written, carried, or owing
	// (provisional).
	if m == nil {
		if final {
			return d
		}
		m = &traceMemo{}
		c.memos[t] = m
	}
	if final {
		c.dropMemo(t, m)
		return d
	}
	c.pendingSpans -= m.owing
	m.owing = 0
	m.edgePending = 0
	for i := range m.emitted {
		v := &verdicts[i]
		if !m.emitted[i] && !v.Provisional {
			m.emitted[i] = true
			m.edged[i] = v.CallerService != ""
		}
	}
	m.spans = slices.Grow(m.spans, len(spans))
	m.emitted = slices.Grow(m.emitted, len(spans))
	m.edged = slices.Grow(m.edged, len(spans))
	for i := range spans {
		v := &d.Verdicts[i]
		m.spans = append(m.spans, spans[i])
		m.emitted = append(m.emitted, !v.Provisional)
		m.edged = append(m.edged, v.CallerService != "")
		if v.Provisional && extra != nil {
			m.spans[len(m.spans)-1].Extra = extra(i)
		}
	}
	for i := range m.emitted {
		if !m.emitted[i] {
			m.owing++
		} else if verdicts[i].EdgePending {
			m.edgePending++
		}
	}
	if m.owing > 0 {
		c.pendingSpans += m.owing
		if m.since == 0 || !m.provisional {
			m.since, m.provisional = now, true
		}
		if !m.queued[queuePending] {
			m.queued[queuePending] = true
			c.memoOrder[queuePending].Push(t)
		}
	} else {
		m.provisional = false
	}
	c.memoSpans += len(spans)
	if !m.queued[queueSettled] {
		m.queued[queueSettled] = true
		c.memoOrder[queueSettled].Push(t)
	}
	for c.memoSpans-c.pendingSpans > c.cfg.MaxContextSpans {
		if !c.evictMemo(queueSettled) {
			break
		}
	}
	return d
}

// dropMemo forgets the memo m of trace t.
func (c *Correlator) dropMemo(t TraceID, m *traceMemo) {
	c.memoSpans -= len(m.spans)
	c.pendingSpans -= m.owing
	if c.memos[t] == m {
		delete(c.memos, t)
	}
}

// evictMemo makes room in one of the memo bounds: the oldest settled memo is forgotten (its
// spans were all written; later spans of its trace are judged without them), or the oldest
// memo that owes verdicts is given up (its spans judged without their root, carried). False
// when none is left.
func (c *Correlator) evictMemo(q int) bool {
	for {
		t, ok := c.memoOrder[q].Pop()
		if !ok {
			return false
		}
		m := c.memos[t]
		if m == nil || !m.queued[q] {
			continue
		}
		m.queued[q] = false
		if q == queueSettled {
			if m.owing > 0 {
				continue // it owes verdicts again: bounded as pending
			}
			if m.edgePending > 0 {
				c.nameEdgesLocked(t, m)
			}
			c.evictedContext += uint64(len(m.spans))
			c.dropMemo(t, m)
			return true
		}
		if m.owing == 0 {
			continue
		}
		c.evictedPending += uint64(m.owing)
		c.giveUpLocked(t)
		return true
	}
}

// nameEdgesLocked names the edges still pending in a memo about to be forgotten, as a decision
// of all its spans would (their chains will not be completed here any more); they are carried
// by the next Sweep.
func (c *Correlator) nameEdgesLocked(t TraceID, m *traceMemo) {
	rel := &release{t: t, now: c.lastNow, edgesFinal: true, nOld: len(m.spans), emitted: m.emitted}
	verdicts, _ := c.decide(c.verdictBuf[:0], m.spans, rel)
	for i := range verdicts {
		if v := &verdicts[i]; v.CallerService != "" && !m.edged[i] {
			c.swept = append(c.swept, Carried{Span: m.spans[i], Verdict: Verdict{CallerService: v.CallerService}, Part: PartEdge})
			m.edged[i] = true
		}
	}
	c.swept = append(c.swept, rel.carried...)
	clear(verdicts)
	c.verdictBuf = verdicts[:0]
}

// settleChainsLocked judges a trace's provisional spans, whose chains did not complete within
// ChainWait, against the root the absent-parent rule gives them; carried by the next Sweep.
func (c *Correlator) settleChainsLocked(t TraceID) {
	m := c.memos[t]
	rel := &release{t: t, now: c.lastNow, chainsFinal: true, nOld: len(m.spans), emitted: m.emitted}
	verdicts, st := c.decide(c.verdictBuf[:0], m.spans, rel)
	for i := range verdicts {
		if !m.emitted[i] {
			c.swept = append(c.swept, Carried{Span: m.spans[i], Verdict: verdicts[i]})
			c.sweptStats.add(statsOf(m.spans[i:i+1], verdicts[i:i+1], st.RootMissing))
			m.emitted[i] = true
			m.edged[i] = verdicts[i].CallerService != ""
			if verdicts[i].EdgePending {
				m.edgePending++
			}
		}
	}
	c.swept = append(c.swept, rel.carried...)
	c.pendingSpans -= m.owing
	m.owing, m.provisional = 0, false
	clear(verdicts)
	c.verdictBuf = verdicts[:0]
}

// giveUpLocked judges a trace's deferred spans without their root and closes its runs; their
// verdicts are carried by the next Sweep.
func (c *Correlator) giveUpLocked(t TraceID) {
	d := c.decideMemoLocked(nil, t, nil, true, c.lastNow, nil)
	c.swept = append(c.swept, d.Carried...)
	c.sweptStats.add(d.Stats)
}

// Sweep gives up, at now (unix ns), the traces whose verdicts were deferred for longer than
// MaxRequestDuration (their root never came) and closes the open runs that no attempt can
// join any more (run_timeout after their final attempt ended, plus the clock-skew tolerance).
// It returns the carried verdicts of those and of everything evicted since the last Sweep,
// with their stats; the caller writes them out on carrier spans.
func (c *Correlator) Sweep(now int64) ([]Carried, Stats) {
	c.relMu.Lock()
	defer c.relMu.Unlock()
	c.lastNow = now
	for t, m := range c.memos {
		switch {
		case m.owing > 0 && m.provisional && now-m.since > int64(c.cfg.ChainWait):
			c.settleChainsLocked(t)
		case m.owing > 0 && now-m.since > int64(c.cfg.MaxRequestDuration):
			c.evictedExpired += uint64(m.owing)
			c.giveUpLocked(t)
		}
	}
	for id, r := range c.open {
		timedOut := c.cfg.RunTimeout > 0 && now-r.last.End > int64(c.cfg.RunTimeout+c.cfg.ClockSkew)
		if timedOut || r.stopsAt != 0 && now > r.stopsAt {
			delete(c.open, id)
			c.sweptRun(r)
		}
	}
	out, st := c.swept, c.sweptStats
	c.swept, c.sweptStats = nil, Stats{}
	return out, st
}

// Finish gives up every trace that owes verdicts and closes every open run (the processor's
// shutdown), returning their carried verdicts as Sweep does.
func (c *Correlator) Finish() ([]Carried, Stats) {
	c.relMu.Lock()
	defer c.relMu.Unlock()
	for t, m := range c.memos {
		if m.owing > 0 {
			c.giveUpLocked(t)
		}
	}
	for id, r := range c.open {
		delete(c.open, id)
		c.sweptRun(r)
	}
	out, st := c.swept, c.sweptStats
	c.swept, c.sweptStats = nil, Stats{}
	return out, st
}

// Kept tells what the time model keeps: spans in trace memos, of which owe verdicts, and open
// runs.
func (c *Correlator) Kept() (memoSpans, pendingSpans, openRuns int) {
	c.relMu.Lock()
	defer c.relMu.Unlock()
	return c.memoSpans, c.pendingSpans, len(c.open)
}

// EvictedKept tells how many memo spans were forgotten to stay within MaxContextSpans, how
// many deferred spans were given up to stay within MaxPendingSpans or after MaxRequestDuration,
// and how many open runs were closed to stay within MaxOpenRuns.
func (c *Correlator) EvictedKept() (context, pending, expired, openRuns uint64) {
	c.relMu.Lock()
	defer c.relMu.Unlock()
	return c.evictedContext, c.evictedPending, c.evictedExpired, c.evictedOpenRuns
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
		if v.Invalid == Valid && !v.Detached && v.EndReason == EndReasonNone && s.End == s.Start && v.Liveness == LivenessUnknown {
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

// add adds o's counts to s.
func (s *Stats) add(o Stats) {
	for i := range s.Invalid {
		s.Invalid[i] += o.Invalid[i]
	}
	s.UnknownRootRuns += o.UnknownRootRuns
	s.AmbiguousRoot += o.AmbiguousRoot
	s.NoDuration += o.NoDuration
	s.RootMissingSpans += o.RootMissingSpans
	s.RootMissing = s.RootMissing || o.RootMissing
	s.Spans += o.Spans
}

// WithoutRoot reports whether a span's verdict is "unknown" for want of a root (withoutRoot),
// for a reader that counts the spans decided with [Correlator.DecideInto].
func WithoutRoot(s *Span, v *Verdict) bool { return withoutRoot(s, v) }
