package rules

import (
	"cmp"
	"slices"
	"sync"

	"github.com/orphanwatch/orphanwatch/internal/verdict/record"
)

// Node is the working state of one span during Decide.
type Node struct {
	Parent int32 // index of the parent span in the batch, -1 if none or not present
	// The children of the span are scratch.kids[kidsFrom:kidsEnd], in index order.
	kidsFrom, kidsEnd int32
	Valid             bool
	timed             bool // usable start and end times: the span can shape its subtree even without a verdict
	// context inherited top-down
	detached bool
	bound    bool       // detached work bound to a root by a key or a deadline
	rec      RootRecord // the root this span is judged against, when hasRoot
	hasRoot  bool
	deadline int64 // earliest deadline on the span or its ancestors, 0 if none
	// gaveUp is the earliest end of a caller that gave up on the span or a span above it
	// (callerGaveUp), 0 if none; gaveUpSvc is that caller's service (its clock).
	gaveUp    int64
	gaveUpSvc string
	// handedOver: detached work bound by a key to a request that completed normally
	// (bindDetached): judged only against the deadlines it carries, else live.
	handedOver bool
	done       bool
	modelDesc  bool          // a descendant is a model call
	IsRoot     bool          // a valid span without a parent
	root       int32         // index of the span's root among the decision's roots, -1 if not one
	RootID     record.SpanID // the span ID of the span's root, when known
	hop        int32         // service hops from the root (isEntry), counted along present parents
	// orphanedEntryAbove: an orphaned span entering a service stands above this one (the
	// edge was already named there).
	orphanedEntryAbove bool
	// chainOK: every span from this one up to its root is in the decision (or the decision is
	// final): whether an orphaned entry stands above it is known.
	chainOK bool
	// attemptAbove: an attempt of the span's own service stands above it (decideNested).
	attemptAbove bool
}

// idChain lists the spans indexed under one span ID: scratch.next links them, head to tail, in
// the order they were indexed.
type idChain struct{ head, tail int32 }

// scratch is Decide's working memory, reused across calls (through scratchPool) so that deciding
// a trace allocates little beyond its verdicts.
type scratch struct {
	nodes  []Node
	canon  []int32
	next   []int32
	kids   []int32
	state  []uint8
	stack  []int32
	isCall []bool
	// attempts and run are decideRuns' working memory.
	attempts []attemptRef
	run      []int32
	members  []int32 // decideRuns: the attempts of the run being gathered (runSoFar.members)
	byID     map[record.SpanID]idChain
	roots    []int32      // the decision's roots
	recs     []RootRecord // their records, by position in roots
	above    []AbsentParentRoot
	order    []int32 // spans in visiting order: every parent before its children
	// in is what the time model gave the decision (memo.go), when hasIn; a decision of its own
	// has none (input: nil). out is what the decision returns to it (decide).
	in    DecisionIn
	hasIn bool
	out   DecisionOut
}

// input is the time model's input of the decision (memo.go), nil for a decision of its own.
func (sc *scratch) input() *DecisionIn {
	if !sc.hasIn {
		return nil
	}
	return &sc.in
}

var scratchPool = sync.Pool{New: func() any { return &scratch{byID: map[record.SpanID]idChain{}} }}

// Grown returns b resized to n zeroed elements, reusing its memory when it can.
func Grown[T any](b []T, n int) []T {
	b = slices.Grow(b[:0], n)[:n]
	clear(b)
	return b
}

// Decide decides the verdict of every span of spans, one trace (the Correlator's Decide), and
// within the time model (memo.go) when in is set: runs may stay open,
// continue runs left open before, and carry outcomes; with in nil every run is over. What the
// time model needs of the decision besides its verdicts is returned (DecisionOut, in buf's
// memory). The rules read other traces through one view (CrossTrace, the state under its lock)
// and the open runs through the table the time model locks for the run step (runStep); no rule
// takes a lock. What the decision tells later decisions of the trace (the root of each span,
// when the trace has several) is booked after the rules (indexRoots).
//
// The steps, in order, are those of docs/verdicts.md; each is a method of its own.
func (c *Rules) Decide(dst []record.Verdict, spans []record.Span, in *DecisionIn, buf DecisionOut, state State) ([]record.Verdict, record.Stats, DecisionOut) {
	out := Grown(dst, len(spans))
	var st record.Stats
	if len(spans) == 0 {
		return out, st, buf
	}
	sc := scratchPool.Get().(*scratch)
	if in != nil {
		sc.in, sc.hasIn = *in, true
	}
	sc.out = buf
	defer sc.put()
	sc.nodes = Grown(sc.nodes, len(spans))

	// 1. Validity and the span-ID index.
	if !indexSpans(sc, spans, out, false, c.MaxDuration()) {
		indexSpans(sc, spans, out, true, c.MaxDuration())
	}
	// 2. Parent links. 3. Cycles broken, children grouped.
	linkParents(sc, spans, out)
	breakCycles(sc, spans, out)
	groupChildren(sc, spans, out)
	// 4. Roots, what is known of the trace, key bindings.
	known, bindings := c.findRoots(sc, state, spans)
	st.RootMissing = known.N == 0
	st.RootUnusable = st.RootMissing && known.Unusable
	// 5. Context inherited top-down: detachment, root, deadline, hop.
	c.inheritContext(sc, spans, out, bindings, &st)
	// 6. Liveness of every span (liveness.go).
	c.judgeSpans(sc, spans, out, &st)
	// 7. The edges that did not carry the cancellation (reach.go).
	c.decideEdges(sc, spans, sc.nodes, out)
	markProvisional(sc, sc.nodes, out)
	// 8. Spend, 9. runs, then 10. how far the cancellation reached (reach.go).
	c.decideSpend(sc, spans, sc.nodes, out, &st)
	c.runStep(sc, state, spans, out, &st)
	decideNested(sc, spans, sc.nodes, out)
	c.decideReach(spans, sc.nodes, out, sc.roots)
	// 11. What later decisions of this trace need: which root each span had, when the trace
	// has several (booked in the state, under its lock).
	if known.N >= 2 {
		state.IndexRoots(spans, sc.nodes, sc.roots, sc.recs)
	}
	return out, st, sc.out
}

// put returns the scratch to the pool, dropping what it points into (span strings, records).
func (sc *scratch) put() {
	sc.in, sc.hasIn, sc.out = DecisionIn{}, false, DecisionOut{}
	clear(sc.nodes)
	if len(sc.byID) > 1<<14 {
		sc.byID = map[record.SpanID]idChain{} // do not keep a huge trace's table
	} else {
		clear(sc.byID)
	}
	scratchPool.Put(sc)
}

// indexSpans is step 1: each span's validity and the span-ID index. Zipkin's shared
// client/server halves have the same span ID and different kinds: both are kept; a second span
// with the same ID and kind is a duplicate (an upstream exporter that retried) and gets no
// verdict.
//
// Spans are indexed in the order given unless a span ID repeats; then which of two duplicates
// is kept must not depend on arrival order, so indexSpans stops, reporting false, and the
// caller indexes again with canonical set: in a canonical order (span ID, kind, start, end,
// name).
func indexSpans(sc *scratch, spans []record.Span, out []record.Verdict, canonical bool, maxDur int64) bool {
	sc.canon = Grown(sc.canon, len(spans))
	canon := sc.canon
	for i := range canon {
		canon[i] = int32(i)
	}
	byID := sc.byID
	clear(byID)
	for j := range out {
		out[j].Invalid = record.Valid
	}
	if canonical {
		// slices.SortFunc runs the same pdqsort as sort.Slice did: equal spans keep their order.
		slices.SortFunc(canon, func(a, b int32) int {
			sa, sb := &spans[a], &spans[b]
			if sa.SpanID != sb.SpanID {
				return cmp.Compare(string(sa.SpanID[:]), string(sb.SpanID[:]))
			}
			if sa.Kind != sb.Kind {
				return cmp.Compare(sa.Kind, sb.Kind)
			}
			if sa.Start != sb.Start {
				return cmp.Compare(sa.Start, sb.Start)
			}
			if sa.End != sb.End {
				return cmp.Compare(sa.End, sb.End)
			}
			return cmp.Compare(sa.Name, sb.Name)
		})
	}
	sc.next = Grown(sc.next, len(spans))
	next := sc.next
	nodes := sc.nodes
	for _, ci := range canon {
		i := int(ci)
		s := &spans[i]
		n := &nodes[i]
		if _, repeated := byID[s.SpanID]; repeated && !canonical && !s.SpanID.IsZero() {
			return false
		}
		n.Parent = -1
		out[i].Invalid = Validity(s, maxDur)
		if s.SpanID.IsZero() {
			continue
		}
		dup := false
		chain, indexed := byID[s.SpanID]
		for j := chain.head; indexed && j >= 0; j = next[j] {
			if o := &spans[j]; o.Kind == s.Kind {
				dup = true
				// An exact copy (an upstream exporter that retried) leaves the first copy its
				// verdict; two different spans with one ID leave neither trustworthy.
				if o.Start != s.Start || o.End != s.End || o.Name != s.Name || o.ParentID != s.ParentID {
					out[j].Invalid = record.InvalidDuplicate
				}
			}
		}
		if dup {
			if out[i].Invalid == record.Valid {
				out[i].Invalid = record.InvalidDuplicate
			}
			continue
		}
		next[i] = -1
		if indexed {
			next[chain.tail] = int32(i)
			byID[s.SpanID] = idChain{chain.head, int32(i)}
		} else {
			byID[s.SpanID] = idChain{int32(i), int32(i)}
		}
	}
	return true
}

// Validity is what makes a span unusable on its own: no trace or span ID, or times that are
// not sane (DESIGN.md "Bounds and bad input"; docs/verdicts.md "Bad input"): no start or end,
// an end before its start, an end beyond the clock it came with (markFuture), or a duration
// longer than maxDur (MaxRequestDuration; 0: none). Such a span counts no time: no liveness
// but unknown, no spend, no attempt, and it is not a root.
func Validity(s *record.Span, maxDur int64) record.Invalid {
	switch {
	case s.TraceID.IsZero():
		return record.InvalidTraceID
	case s.SpanID.IsZero():
		return record.InvalidSpanID
	case s.Start <= 0 || s.End <= 0:
		return record.InvalidTimes
	case s.End < s.Start:
		return record.InvalidEndBeforeStart
	case s.Future():
		return record.InvalidEndInFuture
	case maxDur > 0 && s.End-s.Start > maxDur:
		return record.InvalidTooLong
	}
	return record.Valid
}

// SaneTimes reports whether s's times make it usable (validity's time rules alone).
func (c *Rules) SaneTimes(s *record.Span) bool {
	return s.Start > 0 && s.End >= s.Start && !s.Future() && s.End-s.Start <= c.MaxDuration()
}

// MaxDuration is the longest a span may last, in nanoseconds: MaxRequestDuration.
func (c *Rules) MaxDuration() int64 { return int64(c.cfg.MaxRequestDuration) }

// MarkFuture notes, on the spans that come with a clock at now (unix ns; 0: none), those
// that end beyond it plus FutureTolerance (Span.Future). Once marked, a span stays so.
func (c *Rules) MarkFuture(spans []record.Span, now int64) {
	if now <= 0 {
		return
	}
	limit := now + int64(c.cfg.FutureTolerance)
	for i := range spans {
		if spans[i].End > limit {
			spans[i].MarkFuture()
		}
	}
}

// linkParents is step 2: each span's parent among the spans present. Among spans sharing the
// parent's ID, prefer the one in the child's own service (the server half that made the child),
// else a CLIENT/PRODUCER half.
func linkParents(sc *scratch, spans []record.Span, out []record.Verdict) {
	byID, next, nodes := sc.byID, sc.next, sc.nodes
	for i := range spans {
		s := &spans[i]
		if s.ParentID.IsZero() || s.SpanID.IsZero() {
			continue
		}
		if s.ParentID == s.SpanID {
			// Its own parent: the shortest cycle.
			if out[i].Invalid == record.Valid {
				out[i].Invalid = record.InvalidParentCycle
			}
			continue
		}
		cands, indexed := byID[s.ParentID]
		best := int32(-1)
		for j := cands.head; indexed && j >= 0; j = next[j] {
			if int(j) == i {
				continue
			}
			if best < 0 || spans[j].Service == s.Service && spans[best].Service != s.Service {
				best = j
			}
		}
		nodes[i].Parent = best
	}
}

// breakCycles is step 3: a parent chain that comes back to a span it passed. Every span on the
// cycle is malformed; spans hanging below a cycle are judged as if their parent were missing.
func breakCycles(sc *scratch, spans []record.Span, out []record.Verdict) {
	nodes := sc.nodes
	sc.state = Grown(sc.state, len(spans)) // 0 new, 1 on stack, 2 done
	state := sc.state
	stack := sc.stack[:0]
	for i := range spans {
		if state[i] != 0 {
			continue
		}
		stack = stack[:0]
		j := int32(i)
		for j >= 0 && state[j] == 0 {
			state[j] = 1
			stack = append(stack, j)
			j = nodes[j].Parent
		}
		if j >= 0 && state[j] == 1 {
			// j is on the current path: everything from j onwards loops.
			onCycle := false
			for _, k := range stack {
				if k == j {
					onCycle = true
				}
				if onCycle {
					if out[k].Invalid == record.Valid {
						out[k].Invalid = record.InvalidParentCycle
					}
					nodes[k].Parent = -1
				}
			}
		}
		for _, k := range stack {
			state[k] = 2
		}
	}
	sc.stack = stack
}

// groupChildren lists each span's children, grouped by parent in index order (count, place each
// group, fill), and notes which spans are valid and which have usable times.
func groupChildren(sc *scratch, spans []record.Span, out []record.Verdict) {
	nodes := sc.nodes
	for i := range spans {
		if p := nodes[i].Parent; p >= 0 {
			nodes[p].kidsEnd++
		}
	}
	from := int32(0)
	for i := range nodes {
		n := &nodes[i]
		n.kidsFrom, from = from, from+n.kidsEnd
		n.kidsEnd = n.kidsFrom
	}
	sc.kids = Grown(sc.kids, int(from))
	kids := sc.kids
	for i := range spans {
		if p := nodes[i].Parent; p >= 0 {
			kids[nodes[p].kidsEnd] = int32(i)
			nodes[p].kidsEnd++
		}
		nodes[i].Valid = out[i].Invalid == record.Valid
		nodes[i].timed = out[i].Invalid == record.Valid || out[i].Invalid == record.InvalidDuplicate || out[i].Invalid == record.InvalidParentCycle
	}
}

// findRoots is step 4: every valid span without a parent is a root (DESIGN.md "Words": a trace
// may hold several; each span is judged against the root at the top of its own subtree). Then,
// from the view of other traces (CrossTrace), what is known of the trace from earlier
// decisions (the root above each span whose parent is absent: rootOfAbsentParentLocked) and the
// roots that idempotency keys bind to, once per key.
func (c *Rules) findRoots(sc *scratch, view CrossTrace, spans []record.Span) (KnownRoots, map[uint64]RootRecord) {
	nodes := sc.nodes
	roots := sc.roots[:0]
	for i := range spans {
		if nodes[i].Valid && spans[i].ParentID.IsZero() {
			nodes[i].IsRoot = true
			roots = append(roots, int32(i))
		}
	}
	sc.roots = roots
	sc.recs = Grown(sc.recs, len(roots))
	recs := sc.recs
	for k, r := range roots {
		recs[k] = c.RootRecordOf(&spans[r])
	}
	sc.above = Grown(sc.above, len(spans))
	return view.KnownOf(spans, nodes, roots, recs, sc.above)
}

// inheritContext is step 5: context, top-down from every root and every span whose parent is
// absent: detached or not, the root it is judged against, the earliest deadline above it, its
// service hop.
func (c *Rules) inheritContext(sc *scratch, spans []record.Span, out []record.Verdict, bindings map[uint64]RootRecord, st *record.Stats) {
	nodes, kids := sc.nodes, sc.kids
	var visit func(i int32, ctx spanContext)
	visit = func(i int32, ctx spanContext) {
		s := &spans[i]
		n := &nodes[i]
		if n.done {
			return
		}
		n.done = true
		sc.order = append(sc.order, i)
		if n.Parent >= 0 && isEntry(s, &spans[n.Parent]) {
			ctx.hop++
		}
		if s.Deadline > 0 && (ctx.deadline == 0 || s.Deadline < ctx.deadline) {
			ctx.deadline = s.Deadline
		}
		if n.Parent >= 0 && n.timed && nodes[n.Parent].timed {
			if at, ok := c.callerGaveUp(s, &spans[n.Parent]); ok && (ctx.gaveUp == 0 || at < ctx.gaveUp) {
				ctx.gaveUp, ctx.gaveUpSvc = at, spans[n.Parent].Service
			}
		}
		if !ctx.detached && n.timed && c.startsDetachedWork(spans, nodes, i, &ctx) {
			// Work handed over: judged only if bound again below.
			ctx.detached, ctx.bound, ctx.hasRoot, ctx.deadline = true, false, false, s.Deadline
			ctx.gaveUp, ctx.gaveUpSvc, ctx.handedOver = 0, "", false
		}
		if ctx.detached && !ctx.bound {
			bindDetached(s, &ctx, bindings)
		}
		n.detached, n.bound, n.rec, n.hasRoot, n.deadline = ctx.detached, ctx.bound, ctx.rec, ctx.hasRoot, ctx.deadline
		n.gaveUp, n.gaveUpSvc, n.handedOver = ctx.gaveUp, ctx.gaveUpSvc, ctx.handedOver
		if ctx.detached && sc.hasIn {
			sc.out.Detached = true // the incremental path does not apply (incremental.go)
		}
		n.root, n.RootID, n.hop = ctx.root, ctx.rootID, ctx.hop
		for _, ch := range kids[n.kidsFrom:n.kidsEnd] {
			visit(ch, ctx)
		}
	}
	sc.order = sc.order[:0]
	for k, r := range sc.roots {
		det := sc.recs[k].Detached
		visit(r, spanContext{detached: det, rec: sc.recs[k], hasRoot: !det, root: int32(k), rootID: spans[r].SpanID})
	}
	for i := range spans {
		if nodes[i].Parent < 0 && !nodes[i].done {
			a := &sc.above[i]
			if a.Ambiguous {
				st.AmbiguousRoot++
				out[i].Ambiguous = true
			}
			visit(int32(i), spanContext{detached: a.Detached, rec: a.Rec, hasRoot: a.OK && !a.Detached, root: -1, rootID: a.ID})
		}
	}
}

// judgeSpans is step 6: the liveness of every span (liveness.go).
func (c *Rules) judgeSpans(sc *scratch, spans []record.Span, out []record.Verdict, st *record.Stats) {
	for i := range spans {
		s, n, v := &spans[i], &sc.nodes[i], &out[i]
		if detachedRoot(n) {
			v.EndReason = record.EndReasonDetached
		}
		switch {
		case !n.Valid:
			// Seen but not judged: liveness unknown (never live or orphaned), so that nothing
			// downstream mistakes the span for one the processor never saw.
			v.Liveness = record.LivenessUnknown
			st.Invalid[v.Invalid]++
		case n.IsRoot && !n.detached:
			v.EndReason = n.rec.Reason
			v.Liveness = record.LivenessLive
		case n.detached && !n.bound:
			v.Detached = true
		case UnknownEnd(s):
			v.Liveness = record.LivenessUnknown
			st.NoDuration++
		default:
			c.judgeLiveness(s, n, v)
		}
	}
}

// UnknownEnd reports whether span s has no duration, its end equal to its start: Zipkin spans
// recorded without one (a redirect) and spans whose end was never recorded. When it ended is not
// known: its liveness is unknown, but it keeps its place in the tree (docs/verdicts.md "Choices
// where DESIGN.md was silent": Unknown end).
func UnknownEnd(s *record.Span) bool { return s.End == s.Start }

// spanContext is what a span inherits from the spans above it (step 5 of Decide).
type spanContext struct {
	detached, bound bool
	rec             RootRecord // the root the span is judged against, when hasRoot
	hasRoot         bool
	root            int32         // index of that root among the decision's roots; -1 when not one of them
	rootID          record.SpanID // that root's span ID, when known
	deadline        int64         // earliest deadline on the span or above it, 0 if none
	hop             int32         // service hops from the root (isEntry)
	// gaveUp is the earliest end of a caller that gave up on the span or above it, 0 if none;
	// gaveUpSvc that caller's service.
	gaveUp    int64
	gaveUpSvc string
	// handedOver: bound by a key to a request that completed normally (bindDetached).
	handedOver bool
}

// isEntry reports whether s enters another service from its parent p: a SERVER or CONSUMER span
// whose parent is in another service (a "hop" of the cancellation reach).
func isEntry(s, p *record.Span) bool {
	return (s.Kind == record.KindServer || s.Kind == record.KindConsumer) && p.Service != s.Service && p.Service != ""
}

// goneOf returns the gone time a span is judged against (DESIGN.md "Words": gone time): the
// earliest of its root's gone time, the deadlines on it and above it, and the end of a caller
// that gave up on it or on a span above it (callerGaveUp). A caller's end makes a gone time
// earlier, it never makes one where there is none: without a root or a deadline a span stays
// unknown (S9), unless it is work handed over to a queue by a request that completed
// (handedOver), which only deadlines and its own callers judge.
func (c *Rules) goneOf(n *Node) (int64, bool) {
	gone, ok := int64(0), false
	if n.hasRoot {
		gone, ok = n.rec.Gone, true
	}
	if n.deadline > 0 && (!ok || n.deadline < gone) {
		gone, ok = n.deadline, true
	}
	if n.gaveUp > 0 && (ok || n.handedOver) && (!ok || n.gaveUp < gone) {
		gone, ok = n.gaveUp, true
	}
	return gone, ok
}

// skewOf is the clock-skew tolerance between span s and the clock its gone time was read on
// (DESIGN.md "Words": liveness of a span): none when that is s's own service's, the root's
// when the root's gone time or a deadline below it judges (as before deadlines were compared
// across clocks), the caller's when a caller that gave up judges; a deadline alone is written
// by some other clock, and always gets the tolerance.
func (c *Rules) skewOf(s *record.Span, n *Node) int64 {
	clock, known := "", false
	if n.hasRoot {
		clock, known = n.rec.Service, true
	}
	if c.callerJudges(n) {
		clock, known = n.gaveUpSvc, true
	}
	if !known {
		return int64(c.cfg.ClockSkew)
	}
	return c.skewBetween(s.Service, clock)
}

// callerJudges reports whether the end of a caller that gave up is the span's gone time:
// earlier than its root's gone time and every deadline above it.
func (c *Rules) callerJudges(n *Node) bool {
	gone, ok := c.goneOf(n)
	return ok && n.gaveUp > 0 && gone == n.gaveUp && (!n.hasRoot || n.gaveUp < n.rec.Gone) &&
		(n.deadline == 0 || n.gaveUp < n.deadline)
}

// startOrder orders spans by start time, then span ID and kind, so that the order of a run's
// attempts does not depend on arrival order.
func startOrder(spans []record.Span, a, b int32) int {
	sa, sb := &spans[a], &spans[b]
	if sa.Start != sb.Start {
		return cmp.Compare(sa.Start, sb.Start)
	}
	if sa.SpanID != sb.SpanID {
		return cmp.Compare(string(sa.SpanID[:]), string(sb.SpanID[:]))
	}
	return cmp.Compare(sa.Kind, sb.Kind)
}

// LinkedTraces lists the other traces the spans link to, each once (nil when none).
func LinkedTraces(spans []record.Span) []record.TraceID {
	var out []record.TraceID
	for i := range spans {
		for _, l := range spans[i].Links {
			if l.TraceID.IsZero() || l.TraceID == spans[i].TraceID || ContainsTrace(out, l.TraceID) {
				continue
			}
			out = append(out, l.TraceID)
		}
	}
	return out
}

func ContainsTrace(ts []record.TraceID, t record.TraceID) bool {
	for _, u := range ts {
		if u == t {
			return true
		}
	}
	return false
}
