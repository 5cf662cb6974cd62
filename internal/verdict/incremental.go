package verdict

import (
	"math"
	"slices"

	"github.com/orphanwatch/orphanwatch/internal/verdict/rules"
)

// Incremental decisions (issue 18, item 3). A release of a trace whose memo holds spans released
// before decides, on the incremental path, only the spans whose verdict the new spans can
// change, with the spans they read, instead of every span of the trace again: a span is decided
// when it arrives, when its chain to the root completes and when ChainWait settles it, and read
// for context by the spans below it, not at every release of its trace (O(n) over a trace's
// life rather than O(k·n); Correlator.SpansDecided counts it, BenchmarkReleaseK measures it).
//
// Every rule of decide reads a span's ancestors (context: root, gone time, deadline, hop,
// detachment, the chain to the root, the loop around an attempt), its descendants (spend: a
// model call is a leaf call) or its run (the attempts with the same parent and operation key),
// and the release's time only for open runs (runOver). A span of the memo none of whose
// ancestors, descendants or run siblings is new sees, in a decision of the whole trace, what it
// saw when it was last decided, and its verdict has left (written or carried): deciding it
// again changes nothing. So a release decides the subset (Correlator.subset):
//
//   - the new spans, and the memo's spans that owe their verdict and were never decided with
//     their root known (deferred); a provisional span (decided, its chain to the root
//     incomplete) stays so until a span above it arrives: it is among the next; and the spans
//     ChainWait settled since the trace's last release (ixNode.stale: the settling judged them
//     as final, a release leaves the edge of a span whose chain is incomplete pending, and a
//     memo forgotten names the edges pending);
//   - their descendants in the memo, below those whose chain to the root is complete: a
//     parent that arrives after its children completes their chain to the root (their edge,
//     their root, their hop may change), and its spend depends on them. Below a span whose
//     chain is still incomplete everything stays provisional, and a provisional verdict is only
//     its mark (Verdict.Provisional);
//   - every span of a run that one of those joins; every run left open by the trace's last
//     decision of it, unless nothing above it is new, its open run is still its trace's and
//     the release's time cannot close it yet (openStays); every run whose key has an open run
//     (another trace's may be continued: continuedRun);
//   - the ancestors of all of these up to the root (or to an absent parent), and the root:
//     read for what their descendants inherit (context, liveness, being an attempt), their own
//     runs not decided again (DecisionIn.context): those are over, or in the subset above.
//
// Within that subset every rule reads exactly what it reads in the decision of the whole trace,
// so the verdicts, the carried verdicts and the open runs are those of the whole decision
// (TestIncrementalEqualsWhole compares the two release by release over every scenario, random
// splits, sweeps and tight limits). ChainWait's settling (settleChainsLocked) decides the same way, with the
// provisional spans among the first.
//
// The incremental path falls back to the whole-trace decision (wholeReason, counted in
// Correlator.DecisionPaths) where a span of the trace changes what others see beyond that
// subset or the index cannot tell: a repeated span ID (Zipkin's shared halves, duplicates:
// which copy is kept depends on all of them), a parent cycle, span links or a CONSUMER span
// (detached work bound across traces), several roots, detached work (a key binding read again
// at each decision), an open run evicted since the trace was last decided (the whole decision
// opens it again), open runs so near MaxOpenRuns that the decision's own runs may evict one of
// the trace's (the whole decision would open that one again within the same decision: the
// decision may open at most one run an attempt, so the bound is the open runs kept plus the
// memo's spans); and at a trace's second release, which builds the index (a trace released
// once never pays for one). A memo forgotten and a trace given up are decided whole, once.
//
// The index lives on the memo (traceMemo.ix) under the memo shard's mutex, and indexes the memo's
// records by position: the memo's slices may move (growMemo) without it, and it goes with them
// when the memo is forgotten (recycleMemo), emptied onto the free list (recycleIndex). Open runs are read under relMu (openStays, the
// evicted count); a keyed run that another trace continues in another shard between the choice
// of the subset and the decision's run step is decided as if that trace's release came after.
// Each shard keeps its counts and working memory (incrShard).

// wholeReason is why a release of a trace is decided whole rather than incrementally.
type wholeReason uint8

const (
	wholeNone        wholeReason = iota // the incremental path applies
	wholeDuplicateID                    // a span ID repeats in the trace
	wholeCycle                          // a parent chain comes back to a span it passed
	wholeLinked                         // a span has links, or is a CONSUMER span
	wholeRoots                          // the trace has several roots
	wholeDetached                       // a span of the trace is detached work
	wholeEvicted                        // an open run was evicted since the trace's last decision
	wholeBadSpan                        // a span without trace or span ID
	wholeForced                         // the incremental path is off (its feature gate, gate.go; tests)
	wholeIndex                          // the trace's second release: its index is built after it
	wholeOpenFull                       // the open runs are near MaxOpenRuns: the decision may evict
	wholeReasons
)

// memoIndex is the structure of a trace memo the incremental path reads: for every memo span
// (by its index in traceMemo.spans), its parent, children and run, and which runs were left
// open. It is built as spans are kept, in their order.
type memoIndex struct {
	n []ixNode // by memo index
	// byID (span ID → index) and waiting (absent parent's ID → first child waiting for it,
	// chained by sib) are made once the memo holds more than linearIndex spans; below that the
	// IDs are scanned.
	byID    map[SpanID]int32
	waiting map[SpanID]int32
	groups  []memoGroup
	byGroup map[rules.RunKey]int32 // made with byID
	root    int32                  // the trace's root in the memo, -1 when none
	// reach, depth: the root's cancellation reach and orphaned depth as the trace's
	// decisions saw them (Decision.Reach); a span outside the subset still counts in them.
	reach, depth int
	whole        wholeReason
	// openEvicted is Correlator.open.Evicted() when the trace was last decided.
	openEvicted uint64
}

// ixNode is what a memo's index knows of one span.
type ixNode struct {
	id, pid SpanID // its span and parent IDs
	par     int32  // parent's index, -1 when absent
	kid     int32  // first child, -1 when none
	sib     int32  // next child of the same parent (or waiting for the same one)
	grp     int32  // run group, -1 when not an attempt
	gnext   int32  // next member of the same run group
	pend    bool   // left with its edge pending (Verdict.EdgePending)
	prov    bool   // decided provisional (Verdict.Provisional): owes its verdict to its chain
	// stale: settled by ChainWait (ModeChains) since the trace's last release: pend is the
	// settling's, not what a release sees (a release leaves the edge of every span whose chain
	// is incomplete pending), so the next release decides it again (subset).
	stale bool
}

// memoGroup is one run group of a memo: attempts with the same parent span and operation key.
type memoGroup struct {
	key   rules.RunKey
	first int32 // first member; members are chained by memoIndex.gnext
	last  int32
	keyed bool // its attempts carry an idempotency key: an open run of another trace may continue
	// open: the group's last decision left a run of it open (nOpen runs; one is the rule),
	// openID the open run's ID; until: the release time up to which that decision stays as it
	// is while nothing above the group changes (runOver's rules of time).
	open   bool
	nOpen  int
	openID rules.RunID
	until  int64
	ids    []rules.RunID // keyed: the open-run IDs of its attempts (per service, kind and name)
}

// incrShard is one memo shard's counts of its decision paths and the incremental path's
// working memory, under the shard's mutex.
type incrShard struct {
	incremental  uint64               // releases decided incrementally
	whole        [wholeReasons]uint64 // releases decided whole, by reason
	spansDecided uint64               // span records decided (SpansDecided)
	mark, ctx    []bool               // subset: by memo index, in the subset; there for context only
	gmark        []bool               // subset: by run group, its members added
	ctxPos       []bool               // ctx by position in the subset (rules.DecisionIn.Context)
	emit         []bool               // the subset's emitted marks
	all          []Span               // the subset's records, copied for decide
	subset       []int32              // the subset, memo indexes in memo order
	opened       []rules.OpenedRun    // release.opened
	settled      []int32              // settleChainsLocked: positions settled
}

// runsLeftOpen records which run groups of the memo the decision (out, its return; of the spans
// sub, or of every span when sub is nil) left a run of open, and until when. ms, the memo's
// shard, is locked.
func (c *Correlator) runsLeftOpen(ms lockedShard, m *traceMemo, t TraceID, out *rules.DecisionOut, sub []int32) {
	ix := m.ix
	for g := range ix.groups {
		if sub == nil || ms.inc.gmark[g] {
			gr := &ix.groups[g]
			gr.open, gr.nOpen, gr.until = false, 0, math.MaxInt64
		}
	}
	for _, o := range out.Opened {
		i := o.Pos
		if sub != nil {
			i = sub[o.Pos]
		}
		if g := ix.n[i].grp; g >= 0 {
			gr := &ix.groups[g]
			gr.open, gr.nOpen, gr.until = true, gr.nOpen+1, min(gr.until, o.Until)
			gr.openID = rules.RunIDOf(t, &m.spans[i])
		}
	}
}

// openStays tells whether the run group gr, left open by its last decision, would be decided
// the same again by a release at now whose new spans are the memo's from nOld on: its time has
// not come, no new span is above it, and its open run is still its trace's (not closed by a
// sweep, nor continued by another trace). relMu is locked.
func (c *Correlator) openStays(ix *memoIndex, gr *memoGroup, t TraceID, nOld int, now int64) bool {
	if gr.nOpen != 1 || now > gr.until {
		return false
	}
	for q := ix.n[gr.first].par; q >= 0; q = ix.n[q].par {
		if int(q) >= nOld {
			return false
		}
	}
	r, ok := c.open.Get(gr.openID)
	return ok && r.Trace == t
}

// keepIndexed adds the memo's spans from from on to its index, when it has one.
func (c *Correlator) keepIndexed(m *traceMemo, from int) {
	if m.ix == nil {
		return
	}
	for i := from; i < len(m.spans); i++ {
		c.link(m.ix, int32(i), &m.spans[i])
	}
}

// choosePath chooses how a release of trace t, whose memo m held nOld spans before the
// release's joined it, is decided: incrementally (its new spans linked in the index, no
// fallback applying), or whole, with the index built after the decision when build is set (the
// trace's second release). Counted by path and reason in ms, t's shard, which is locked.
func (c *Correlator) choosePath(ms lockedShard, t TraceID, m *traceMemo, nOld int) (incremental, build bool) {
	switch {
	case nOld == 0:
		ms.inc.whole[wholeNone]++ // nothing released before: the first decision of the trace
		return false, false
	case m.ix == nil:
		ms.inc.whole[wholeIndex]++
		return false, true
	}
	c.keepIndexed(m, nOld)
	if why := c.incrementalReason(t, m); why != wholeNone {
		ms.inc.whole[why]++
		return false, false
	}
	ms.inc.incremental++
	return true, false
}

// newMemoIndex makes the index of a memo of capacity spans: a recycled one (recycleIndex) when
// the free list has one, else a new one.
func (c *Correlator) newMemoIndex(capacity int) *memoIndex {
	c.memoFree.mu.Lock()
	ix := c.memoFree.takeIndex()
	c.memoFree.mu.Unlock()
	if ix == nil {
		return &memoIndex{n: make([]ixNode, 0, capacity), root: -1}
	}
	ix.n = slices.Grow(ix.n, capacity)
	return ix
}

// memoFreeIndexes bounds the indexes kept on the memo free list (each of at most the largest
// memo class's nodes, 40 B a node: some 10 MB at most).
const memoFreeIndexes = 256

// recycleIndex gives ix, the index of a memo forgotten, to the free list, emptied (its maps, made
// for large memos only, are not kept), when it is no larger than the largest memo class and the
// list has room. Nothing may use ix afterwards.
func (c *Correlator) recycleIndex(ix *memoIndex) {
	if ix == nil || cap(ix.n) > memoClassSizes[memoClasses-1] {
		return
	}
	clear(ix.groups) // their ids slices
	*ix = memoIndex{n: ix.n[:0], groups: ix.groups[:0], root: -1}
	c.memoFree.mu.Lock()
	if len(c.memoFree.indexes) < memoFreeIndexes {
		c.memoFree.indexes = append(c.memoFree.indexes, ix)
	}
	c.memoFree.mu.Unlock()
}

// linearIndex is the size up to which a memo's index scans IDs instead of keeping maps (a
// variable for the tests).
var linearIndex = 64

// lookup finds the span with ID id.
func (ix *memoIndex) lookup(id SpanID) (int32, bool) {
	if ix.byID != nil {
		i, ok := ix.byID[id]
		return i, ok
	}
	for i := range ix.n {
		if ix.n[i].id == id {
			return int32(i), true
		}
	}
	return -1, false
}

// complete tells whether span i's chain of parents reaches the trace's root.
func (ix *memoIndex) complete(i int32) bool {
	for ix.n[i].par >= 0 {
		i = ix.n[i].par
	}
	return i == ix.root
}

// mapped makes the index's maps from its IDs (the memo outgrew linearIndex).
func (ix *memoIndex) mapped() {
	ix.byID = make(map[SpanID]int32, 2*len(ix.n))
	ix.waiting = map[SpanID]int32{}
	ix.byGroup = make(map[rules.RunKey]int32, len(ix.groups))
	for g := range ix.groups {
		ix.byGroup[ix.groups[g].key] = int32(g)
	}
	for i := range ix.n {
		ix.byID[ix.n[i].id] = int32(i)
		if ix.n[i].par < 0 && !ix.n[i].pid.IsZero() {
			ix.n[i].sib = -1
			if k, ok := ix.waiting[ix.n[i].pid]; ok {
				ix.n[i].sib = k
			}
			ix.waiting[ix.n[i].pid] = int32(i)
		}
	}
}

// link adds span s, kept at index i (the next), to the index, or tells why the trace must be
// decided whole from now on.
func (c *Correlator) link(ix *memoIndex, i int32, s *Span) {
	if ix.whole != wholeNone {
		return
	}
	switch {
	case s.TraceID.IsZero() || s.SpanID.IsZero():
		ix.whole = wholeBadSpan
		return
	case s.ParentID == s.SpanID:
		ix.whole = wholeCycle
		return
	case len(s.Links) > 0 || s.Kind == KindConsumer:
		ix.whole = wholeLinked
		return
	}
	if _, dup := ix.lookup(s.SpanID); dup {
		ix.whole = wholeDuplicateID
		return
	}
	if ix.byID == nil && len(ix.n) >= linearIndex {
		ix.mapped()
	}
	if ix.byID != nil {
		ix.byID[s.SpanID] = i
	}
	ix.n = append(ix.n, ixNode{id: s.SpanID, pid: s.ParentID, par: -1, kid: -1, sib: -1, grp: -1, gnext: -1})
	// Children that came before it.
	if ix.waiting != nil {
		if k, ok := ix.waiting[s.SpanID]; ok {
			delete(ix.waiting, s.SpanID)
			ix.n[i].kid = k
			for ; k >= 0; k = ix.n[k].sib {
				ix.n[k].par = i
			}
		}
	} else {
		for k := range i {
			if ix.n[k].par < 0 && ix.n[k].pid == s.SpanID {
				ix.n[k].par, ix.n[k].sib, ix.n[i].kid = i, ix.n[i].kid, k
			}
		}
	}
	valid := rules.Validity(s, c.rules.MaxDuration()) == Valid
	switch p, ok := ix.lookup(s.ParentID); {
	case s.ParentID.IsZero():
		if valid {
			if ix.root >= 0 {
				ix.whole = wholeRoots
				return
			}
			ix.root = i
		}
	case ok:
		ix.n[i].par = p
		ix.n[i].sib, ix.n[p].kid = ix.n[p].kid, i
		for q := p; q >= 0; q = ix.n[q].par {
			if q == i {
				ix.whole = wholeCycle
				return
			}
		}
	case ix.waiting != nil:
		if k, ok := ix.waiting[s.ParentID]; ok {
			ix.n[i].sib = k
		}
		ix.waiting[s.ParentID] = i
	}
	if valid && !s.ParentID.IsZero() && c.rules.Signals.IsAttempt(s) {
		key := rules.RunKey{Parent: s.ParentID, Op: rules.OpKey(s)}
		g := int32(-1)
		if ix.byGroup != nil {
			if q, ok := ix.byGroup[key]; ok {
				g = q
			}
		} else {
			for q := range ix.groups {
				if ix.groups[q].key == key {
					g = int32(q)
					break
				}
			}
		}
		if g < 0 {
			g = int32(len(ix.groups))
			if ix.byGroup != nil {
				ix.byGroup[key] = g
			}
			ix.groups = append(ix.groups, memoGroup{key: key, first: i, last: i, keyed: s.KeyHash != 0})
		} else {
			ix.n[ix.groups[g].last].gnext = i
			ix.groups[g].last = i
		}
		ix.n[i].grp = g
		if id := rules.RunIDOf(s.TraceID, s); s.KeyHash != 0 && !slices.Contains(ix.groups[g].ids, id) {
			ix.groups[g].ids = append(ix.groups[g].ids, id)
		}
	}
}

// incrementalReason tells whether a release of trace t with memo m (its new spans already
// linked) may be decided incrementally (wholeNone), else why not.
func (c *Correlator) incrementalReason(t TraceID, m *traceMemo) wholeReason {
	ix := m.ix
	switch {
	case ix.whole != wholeNone:
		return ix.whole
	case c.noIncremental:
		return wholeForced
	}
	c.relMu.Lock()
	evicted := c.open.Evicted() != ix.openEvicted
	full := c.open.Len()+len(ix.n) > c.cfg.MaxOpenRuns
	c.relMu.Unlock()
	switch {
	case evicted:
		return wholeEvicted
	case full:
		return wholeOpenFull
	}
	rec, ok, multi := c.tables.RootOf(t)
	if multi || ok && (rec.NRoots >= 2 || rec.Detached) {
		return wholeRoots
	}
	return wholeNone
}

// subset lists, in memo order, the memo spans a release whose new spans are the memo's spans
// from nOld on decides (see the package comment of this file): the new spans, the spans owing
// their verdict (provisional ones too when provisional is set: ChainWait passed), their
// descendants, the runs any of those join and the runs left open, the ancestors of all of
// them, the root. ms, the memo's shard, is locked; its working memory holds the result.
func (c *Correlator) subset(ms lockedShard, m *traceMemo, t TraceID, nOld int, now int64, provisional bool) []int32 {
	ix := m.ix
	n := len(ix.n)
	b := &ms.inc
	mark := rules.Grown(b.mark, n)
	ctx := rules.Grown(b.ctx, n)
	gmark := rules.Grown(b.gmark, len(ix.groups))
	list := b.subset[:0]
	add := func(i int32) {
		if !mark[i] {
			mark[i] = true
			list = append(list, i)
		}
	}
	for i := range nOld {
		// A provisional span waits for its chain to the root: only a new span above it (a
		// descendant of a new span, below) completes it.
		if !m.emitted[i] && (provisional || !ix.n[i].prov) || ix.n[i].stale {
			add(int32(i))
		}
	}
	for i := nOld; i < n; i++ {
		add(int32(i))
	}
	// Their descendants, below those whose chain to the root is complete: a span whose chain
	// is incomplete leaves provisional, and so do the spans below it (a settling decides them
	// all: provisional).
	for q, n0 := 0, len(list); q < len(list); q++ {
		if q < n0 && !provisional && !ix.complete(list[q]) {
			continue
		}
		for k := ix.n[list[q]].kid; k >= 0; k = ix.n[k].sib {
			add(k)
		}
	}
	addGroup := func(g int32) {
		if gmark[g] {
			return
		}
		gmark[g] = true
		for k := ix.groups[g].first; k >= 0; k = ix.n[k].gnext {
			add(k)
			ctx[k] = false
		}
	}
	// Runs the release's time may close, or another trace's open run may continue (open runs
	// under relMu).
	c.relMu.Lock()
	for g := range ix.groups {
		gr := &ix.groups[g]
		if gr.open {
			if !c.openStays(ix, gr, t, nOld, now) {
				addGroup(int32(g))
			}
			continue
		}
		if gr.keyed {
			for _, id := range gr.ids {
				if _, ok := c.open.Get(id); ok {
					addGroup(int32(g))
					break
				}
			}
		}
	}
	c.relMu.Unlock()
	// The runs of every span decided, and the ancestors of all: read for their context only
	// (ctx), their own runs not decided again (decideRuns).
	for q := 0; q < len(list); q++ {
		i := list[q]
		if g := ix.n[i].grp; g >= 0 && !ctx[i] {
			addGroup(g)
		}
		for p := ix.n[i].par; p >= 0 && !mark[p]; p = ix.n[p].par {
			add(p)
			ctx[p] = true
		}
	}
	if r := ix.root; r >= 0 && !mark[r] {
		add(r)
		ctx[r] = true
	}
	slices.Sort(list)
	b.mark, b.ctx, b.gmark, b.subset = mark, ctx, gmark, list
	return list
}

// contextOnly gathers, by position in sub, which spans of the subset are there only for what
// their descendants read (subset's ctx marks, by memo index), into dst's memory.
func contextOnly(dst, ctx []bool, sub []int32) []bool {
	dst = dst[:0]
	for _, i := range sub {
		dst = append(dst, ctx[i])
	}
	return dst
}

// DecisionPaths tells how many releases of traces with spans released before were decided
// incrementally, and how many were decided whole, by reason (the index is a wholeReason; 0
// counts releases whose memo was empty).
func (c *Correlator) DecisionPaths() (incremental uint64, whole [wholeReasons]uint64) {
	for i := range c.memoShards {
		ms := c.memoShards[i].lock()
		incremental += ms.inc.incremental
		for r, n := range ms.inc.whole {
			whole[r] += n
		}
		ms.unlock()
	}
	return incremental, whole
}

// afterWholeLocked records in the memo's index what a decision of all its spans (verdicts, by
// memo index) tells the incremental path: the runs left open, the edges pending (of every span,
// or of the spans listed in only), the root's reach, whether detached work was seen. ms, the
// memo's shard, and relMu are locked.
func (c *Correlator) afterWholeLocked(ms lockedShard, m *traceMemo, t TraceID, out *rules.DecisionOut, verdicts []Verdict, every bool, only []int32) {
	ix := m.ix
	if out.Detached && ix.whole == wholeNone {
		ix.whole = wholeDetached
	}
	if ix.whole != wholeNone {
		return
	}
	c.runsLeftOpen(ms, m, t, out, nil)
	if every {
		for i := range verdicts {
			ix.n[i].pend, ix.n[i].prov, ix.n[i].stale = verdicts[i].EdgePending, verdicts[i].Provisional, false
		}
	}
	if r := ix.root; r >= 0 && int(r) < len(verdicts) && verdicts[r].HasReach {
		ix.reach, ix.depth = max(ix.reach, verdicts[r].ReachHops), max(ix.depth, verdicts[r].OrphanedDepthHops)
	}
	for _, i := range only {
		ix.n[i].pend, ix.n[i].prov, ix.n[i].stale = verdicts[i].EdgePending, verdicts[i].Provisional, true
	}
	ix.openEvicted = c.open.Evicted()
}

// decideIncrementalLocked decides a release of trace t whose memo m held nOld spans before the
// release's spans joined it (m.spans[nOld:], linked in m's index): only the subset of the trace
// they can change (see the package comment of this file), with the verdicts, carried verdicts
// and memo bookkeeping a decision of the whole trace gives. ms, t's shard, is locked.
//
// Its steps: the subset is chosen (subset) and its records gathered; the subset is decided,
// its ancestors read for context only (DecisionIn.context); the carried verdicts, stats and
// reach are gathered as for a whole decision (gatherDecision); the memo is booked as a whole
// decision books it (decidedAgain, released, bookMemoLocked), the spans outside the subset
// keeping their marks (emitted, or provisional still) and its counts adjusted for the subset
// alone, and the index learns what the decision left (runsLeftOpen, pending edges, provisional
// spans).
func (c *Correlator) decideIncrementalLocked(ms lockedShard, dst []Verdict, t TraceID, m *traceMemo, nOld int, now int64, extra func(i int) any) Decision {
	ix := m.ix
	b := &ms.inc
	spans := m.spans[nOld:]
	sub := c.subset(ms, m, t, nOld, now, false)
	old := sub[:len(sub)-len(spans)] // the memo's spans decided again, in memo order
	all, emitted := b.all[:0], b.emit[:0]
	for _, i := range old {
		all = append(all, m.spans[i])
		emitted = append(emitted, m.emitted[i])
	}
	all = append(all, spans...)
	b.ctxPos = contextOnly(b.ctxPos, b.ctx, sub)
	in := rules.DecisionIn{Trace: t, Mode: rules.ModeRelease, Now: now, Extra: extra, NOld: len(old), Emitted: emitted, Context: b.ctxPos}
	verdicts, st, out := c.rules.Decide(ms.verdictBuf[:0], all, &in, rules.DecisionOut{Opened: b.opened[:0]}, c.ruleState())
	b.spansDecided += uint64(len(all))
	keepCached(m, all, sub)
	defer func() {
		clear(all) // the buffer's copies point into span strings
		b.all, b.emit, b.opened = all[:0], emitted[:0], out.Opened[:0]
		clear(verdicts)
		ms.verdictBuf = verdicts[:0]
	}()

	root := rootReachSoFar{at: ix.root, reach: ix.reach, depth: ix.depth}
	d := gatherDecision(dst, m, all, verdicts, len(old), sub, st, &out, &root)
	ix.reach, ix.depth = root.reach, root.depth

	// The memo: the spans decided again, then the new ones (already in m.spans). Spans outside
	// the subset keep their marks: emitted, or provisional still.
	c.relMu.Lock()
	defer c.relMu.Unlock()
	c.pendingSpans -= m.owing
	for p, i := range old {
		v := &verdicts[p]
		if m.emitted[i] && ix.n[i].pend {
			m.edgePending--
		}
		if !m.emitted[i] {
			m.owing-- // counted again below when it still owes
		}
		m.decidedAgain(int(i), v)
		ix.n[i].pend, ix.n[i].prov, ix.n[i].stale = v.EdgePending, v.Provisional, false
	}
	m.released(nOld, d.Verdicts, extra)
	for q := range spans {
		v := &d.Verdicts[q]
		ix.n[nOld+q].pend, ix.n[nOld+q].prov = v.EdgePending, v.Provisional
	}
	for _, i := range sub {
		switch {
		case !m.emitted[i]:
			m.owing++
		case ix.n[i].pend:
			m.edgePending++
		}
	}
	c.runsLeftOpen(ms, m, t, &out, sub)
	if out.Detached {
		ix.whole = wholeDetached
	}
	ix.openEvicted = c.open.Evicted()
	c.memoSpans += len(spans)
	c.bookMemoLocked(ms, t, m, now)
	return d
}

// keepCached copies back to the memo's records what the decision of the subset sub (all: its
// records, copied) cached of them (Span.KeepClassified), as a decision in place leaves it.
func keepCached(m *traceMemo, all []Span, sub []int32) {
	for p, i := range sub {
		m.spans[i].KeepClassified(&all[p])
	}
}

// afterSubsetLocked records in the memo's index what a decision of the subset sub of its spans
// (verdicts by position in sub) tells the incremental path: the runs left open among those it
// decided, the edges pending of the spans at the positions listed in only, the root's reach,
// whether detached work was seen. ms, the memo's shard, and relMu are locked.
func (c *Correlator) afterSubsetLocked(ms lockedShard, m *traceMemo, t TraceID, out *rules.DecisionOut, verdicts []Verdict, sub []int32, only []int32) {
	ix := m.ix
	c.runsLeftOpen(ms, m, t, out, sub)
	for _, p := range only {
		ix.n[sub[p]].pend, ix.n[sub[p]].prov, ix.n[sub[p]].stale = verdicts[p].EdgePending, verdicts[p].Provisional, true
	}
	for p, i := range sub {
		if i == ix.root && verdicts[p].HasReach {
			ix.reach, ix.depth = max(ix.reach, verdicts[p].ReachHops), max(ix.depth, verdicts[p].OrphanedDepthHops)
		}
	}
	if out.Detached {
		ix.whole = wholeDetached
	}
	ix.openEvicted = c.open.Evicted()
}

// SpansDecided tells how many span records the time model's decisions (releases, settlings,
// traces given up) have decided, counting a span once per decision that read it: over a
// trace's life, about its span count on the incremental path, its span count times its
// releases when every release decides the whole trace.
func (c *Correlator) SpansDecided() uint64 {
	var n uint64
	for i := range c.memoShards {
		ms := c.memoShards[i].lock()
		n += ms.inc.spansDecided
		ms.unlock()
	}
	return n
}
