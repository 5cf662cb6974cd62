package verdict

import (
	"sync"

	"github.com/orphanwatch/orphanwatch/internal/bounded"
	"github.com/orphanwatch/orphanwatch/internal/fifo"
	"github.com/orphanwatch/orphanwatch/internal/shard"
)

// Correlator decides verdicts and keeps the bounded cross-trace memory they need: root records
// (so late spans and traces bound by an idempotency key can be judged) and an index of
// idempotency-key hashes to the traces that carried them. It is safe for concurrent use.
type Correlator struct {
	cfg   Config
	rules *Rules // the verdict rules (rules.go), for cfg

	mu sync.Mutex
	// roots are the root records, within MaxRootRecords (the oldest evicted first).
	roots *bounded.Table[TraceID, rootRecord]
	// badRoots are the traces whose only roots seen have times that are not sane (validity):
	// their traces are known, so decided at once, judged without a root (unknown). Within
	// MaxRootRecords; a trace leaves it when a usable root comes.
	badRoots *bounded.Table[TraceID, struct{}]
	// keys are the traces that carried each idempotency key, within MaxKeys: sharded, each
	// shard under its own mutex (keyindex.go; lock order: mu, then a key shard).
	keys *keyIndex
	// multi indexes, for traces with several roots, which root each decided span had, so that
	// a span arriving later is judged against the root its siblings had. Bounded by
	// MaxIndexedSpans entries in all (whole traces evicted, oldest first).
	multi          *bounded.Table[TraceID, *multiRoot]
	indexed        int
	evictedIndexed uint64

	dir *keyDir // key sharing across a tier (keydir.go); nil when off

	// The time model (memo.go). The trace memos are sharded by trace ID (memoShards: each
	// shard's mutex is held for a whole release of one of its traces); what binds traces or
	// bounds them all is under relMu, held briefly: open runs (for a decision's run step),
	// the memos' order and counts (the bounds evict the oldest of all shards), and what was
	// given up or closed outside a release, waiting for Sweep. Lock order: a memo shard, then
	// relMu or c.mu: a function that needs a shard locked takes a lockedShard (memo.go), and
	// TestLockOrder checks that no shard is locked with relMu or mu held.
	memoShards              []memoShard // shard.Count() of them, fixed at creation
	memoShardBits           uint        // log2 len(memoShards)
	relMu                   sync.Mutex
	evictMu                 sync.Mutex             // one eviction of memos at a time (evictOver)
	memoFree                memoFree               // recycled memo slices (memobufs.go), under its own mutex
	memoOrder               [2]fifo.Queue[TraceID] // settled, pending
	memoSpans, pendingSpans int
	open                    *bounded.Table[runID, *openRun] // within MaxOpenRuns (openruns.go)
	swept                   []Carried
	sweptStats              Stats
	// noIncremental decides every release of a trace whole: the feature gate
	// orphanwatch.incrementalDecisions off when the correlator was made (gate.go); tests
	// compare the incremental path, incremental.go, with it.
	noIncremental bool

	evictedContext, evictedPending, evictedExpired uint64
}

// position returns the index of root id in m.roots, -1 if it is not there.
func (m *multiRoot) position(id SpanID) int {
	for q, e := range m.roots {
		if e.id == id {
			return q
		}
	}
	return -1
}

// multiRoot is what is kept of a trace with several roots.
type multiRoot struct {
	roots    []rootEntry      // at most 255
	spanRoot map[SpanID]uint8 // a decided span's root, by position in roots
}

// rootEntry is one root of a trace with several.
type rootEntry struct {
	id  SpanID
	rec rootRecord
}

// keyTraces holds up to four distinct traces that carried one idempotency key, in arrival order.
type keyTraces struct {
	traces [4]TraceID
	n      uint8
}

// New returns a Correlator for cfg, or the error of cfg.Validate.
func New(cfg Config) (*Correlator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Correlator{
		cfg:      cfg,
		rules:    newRules(cfg),
		roots:    bounded.New[TraceID, rootRecord](cfg.MaxRootRecords, nil),
		badRoots: bounded.New[TraceID, struct{}](cfg.MaxRootRecords, nil),
		keys:     newKeyIndex(cfg.MaxKeys),
		multi:    bounded.New[TraceID, *multiRoot](0, nil), // bounded by MaxIndexedSpans (indexRoots)
		// The incremental path, unless its feature gate is off (gate.go).
		noIncremental: !incrementalDecisions.IsEnabled(),
	}
	c.memoShards = make([]memoShard, shard.Count())
	c.memoShardBits = shard.Bits(len(c.memoShards))
	for i := range c.memoShards {
		c.memoShards[i].memos = make(map[TraceID]*traceMemo)
		c.memoShards[i].owingMemos = make(map[TraceID]*traceMemo)
	}
	// An open run evicted to stay within MaxOpenRuns is closed: its outcome, as decided when it
	// was left open, is carried by the next Sweep.
	c.open = bounded.New(cfg.MaxOpenRuns, func(_ runID, r *openRun) { c.sweptRun(r) })
	return c, nil
}

// Config returns the correlator's configuration.
func (c *Correlator) Config() Config { return c.cfg }

// Observe records what arriving spans tell other traces: root records of root spans and the
// traces that carry each idempotency key. Call it when spans arrive, before Decide, so that
// traces decided in any order can find each other. Malformed spans are ignored here.
//
// Root records (and, with key sharing, the directory) are kept under the correlator's mutex,
// then the keys in their shards (keyIndex): a decision running meanwhile sees a key of the
// batch with its root, or not yet.
func (c *Correlator) Observe(spans []Span) { c.ObserveAt(spans, 0) }

// ObserveAt is Observe for spans that arrive at now (unix ns, the caller's clock; 0: none): a
// root ending beyond now plus FutureTolerance is not usable (see validity). A root whose times
// are not sane (no start or end, an end before its start, longer than MaxRequestDuration, in
// the future) makes its trace known all the same, with no usable root: its spans are decided
// at once, judged without a root (liveness unknown, runs unknown_root), rather than waiting
// MaxRequestDuration for a root that has come already. It marks future spans in spans.
func (c *Correlator) ObserveAt(spans []Span, now int64) {
	c.rules.markFuture(spans, now)
	c.observeRootsLocked(spans)
	for i := range spans {
		if s := &spans[i]; s.KeyHash != 0 && !s.TraceID.IsZero() && !s.SpanID.IsZero() {
			c.keys.observe(s.KeyHash, s.TraceID)
		}
	}
}

// observeRootsLocked is Observe's part under the correlator's mutex: root records, and what the
// key directory takes (keydir.go).
func (c *Correlator) observeRootsLocked(spans []Span) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range spans {
		s := &spans[i]
		if s.TraceID.IsZero() || s.SpanID.IsZero() {
			continue
		}
		if s.ParentID.IsZero() && !c.rules.saneTimes(s) {
			if _, ok := c.roots.Get(s.TraceID); !ok {
				c.badRoots.Put(s.TraceID, struct{}{})
			}
		} else if s.ParentID.IsZero() {
			c.badRoots.Delete(s.TraceID)
			rec := c.rules.rootRecordOf(s)
			if old, ok := c.roots.Get(s.TraceID); ok {
				// Two roots (or the same root twice): count the second, keep the preferred.
				n := old.nroots
				if !rec.detached && (old.detached || old.id != rec.id) && n < 255 {
					n++
				}
				if preferredRoot(rec, old) {
					old = rec
				}
				old.nroots = n
				c.roots.Put(s.TraceID, old)
			} else {
				c.putRootLocked(s.TraceID, rec)
			}
			c.keyDirRootLocked(s.TraceID) // keydir.go
		}
		if s.KeyHash != 0 {
			c.keyDirKeyLocked(s) // keydir.go
		}
		if len(s.Links) > 0 {
			c.keyDirLinksLocked(s) // keydir.go
		}
	}
}

func (c *Correlator) putRootLocked(t TraceID, rec rootRecord) {
	c.roots.Put(t, rec) // a new record evicts the oldest when MaxRootRecords are kept
}

// lookupKeyLocked finds the root an idempotency key binds to: among the traces that carried the
// key and whose root is known and is not itself detached work, one that the decided trace links
// to (linked: trace B's CONSUMER span links to the PRODUCER span of the request A that handed
// the job over), here or in another member's record; else the first such trace here; else
// another member's record.
func (c *Correlator) lookupKeyLocked(h uint64, linked []TraceID) (rootRecord, bool) {
	kt, _ := c.keys.get(h) // a key not seen here has n == 0 and falls through to the directory
	if len(linked) > 0 {
		for i := uint8(0); i < kt.n; i++ {
			if !containsTrace(linked, kt.traces[i]) {
				continue
			}
			if rec, ok := c.roots.Get(kt.traces[i]); ok && !rec.detached {
				return rec, true
			}
		}
		if rec, t, ok := c.keyDirLookupLocked(h, linked); ok && containsTrace(linked, t) {
			return rec, true
		}
	}
	for i := uint8(0); i < kt.n; i++ {
		if rec, ok := c.roots.Get(kt.traces[i]); ok && !rec.detached {
			return rec, true
		}
	}
	rec, _, ok := c.keyDirLookupLocked(h, linked) // another member's record (keydir.go), if shared
	return rec, ok
}

func containsTrace(ts []TraceID, t TraceID) bool {
	for _, u := range ts {
		if u == t {
			return true
		}
	}
	return false
}

// crossTrace is what the rules read of other traces: one small, read-only view, implemented by
// the Correlator's state under its one lock (mu), so that no rule takes a lock or reaches the
// tables. The open runs, which the run rules read and change, come in apart (lockedRuns,
// openruns.go).
type crossTrace interface {
	// knownOf is what is known of the roots of the trace of spans (knownRoots), given the
	// decision's roots (indexes in spans, their records recs): it fills above, for each span
	// whose parent is absent (nodes[i].parent < 0, not a root), the root it is judged against,
	// and returns the roots the spans' idempotency keys bind to, once per key (nil when none).
	knownOf(spans []Span, nodes []node, roots []int32, recs []rootRecord, above []absentParentRoot) (knownRoots, map[uint64]rootRecord)
}

var _ crossTrace = (*Correlator)(nil)

// knownOf implements crossTrace under the state's lock.
func (c *Correlator) knownOf(spans []Span, nodes []node, roots []int32, recs []rootRecord, above []absentParentRoot) (knownRoots, map[uint64]rootRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	known := c.knownRootsLocked(spans[0].TraceID, spans, roots, recs)
	for i := range spans {
		if nodes[i].parent < 0 && !nodes[i].isRoot {
			above[i] = c.rootOfAbsentParentLocked(&spans[i], &known)
		}
	}
	// Key bindings, once per key, preferring the traces this one links to (two requests
	// re-sending one key each bind their own work).
	var bindings map[uint64]rootRecord // made when a key binds
	var linked []TraceID
	linkedDone := false
	for i := range spans {
		if h := spans[i].KeyHash; h != 0 {
			if _, done := bindings[h]; !done {
				if !linkedDone {
					linked, linkedDone = linkedTraces(spans), true
				}
				if rec, ok := c.lookupKeyLocked(h, linked); ok {
					if bindings == nil {
						bindings = map[uint64]rootRecord{}
					}
					bindings[h] = rec
				}
			}
		}
	}
	return known, bindings
}

// knownRoots is what a decision knows of its trace's roots: those among its spans, those kept
// from earlier decisions.
type knownRoots struct {
	n        int        // distinct roots that are not detached work
	single   rootRecord // the root, when n == 1
	singleID SpanID     // its span ID, when known (zero for a record kept from an earlier decision)
	detached bool       // no root but detached ones is known: work below is detached
	detRec   rootRecord
	multi    *multiRoot // the trace's index, if it has one
	// unusable: the trace's only roots seen have times that are not sane (badRoots): its
	// spans are judged without a root, and not counted as root_missing.
	unusable bool
}

// knownRootsLocked gathers what is known of the roots of trace t, given the decision's roots.
func (c *Correlator) knownRootsLocked(t TraceID, spans []Span, roots []int32, recs []rootRecord) knownRoots {
	var k knownRoots
	k.multi, _ = c.multi.Get(t)
	for j := range roots {
		if recs[j].detached {
			k.detached, k.detRec = true, recs[j]
			continue
		}
		k.n++
		k.single, k.singleID = recs[j], spans[roots[j]].SpanID
	}
	if k.multi != nil {
	next:
		for _, e := range k.multi.roots {
			for _, r := range roots {
				if spans[r].SpanID == e.id {
					continue next
				}
			}
			if e.rec.detached {
				k.detached, k.detRec = true, e.rec
				continue
			}
			k.n++
			k.single, k.singleID = e.rec, e.id
		}
	}
	if rec, ok := c.roots.Get(t); ok {
		if rec.detached {
			k.detached, k.detRec = true, rec
		} else if int(rec.nroots) > k.n {
			k.n, k.single, k.singleID = int(rec.nroots), rec, SpanID{}
		} else if k.n == 0 {
			k.n, k.single, k.singleID = 1, rec, SpanID{}
		}
	}
	if k.n > 0 {
		k.detached = false
	}
	if k.n == 0 && !k.detached {
		_, k.unusable = c.badRoots.Get(t)
	}
	return k
}

// absentParentRoot is the root a span whose parent is absent is judged against.
type absentParentRoot struct {
	rec       rootRecord
	id        SpanID // the root's span ID, when known
	ok        bool   // a root was found
	detached  bool   // the work is detached (the only roots known are detached work)
	ambiguous bool   // several roots, and the trace's index does not know the parent
}

// rootOfAbsentParentLocked decides the root of a span whose parent is absent from the decision
// (it came in an earlier one, or never came): the root the parent had, when the trace's index
// knows it; else the trace's only root (not detached work); else, with several roots, none
// (ambiguous: the span is unknown and counted); with only detached roots, detached.
func (c *Correlator) rootOfAbsentParentLocked(s *Span, k *knownRoots) absentParentRoot {
	if k.multi != nil && !s.ParentID.IsZero() {
		if j, ok := k.multi.spanRoot[s.ParentID]; ok {
			e := k.multi.roots[j]
			return absentParentRoot{rec: e.rec, id: e.id, ok: true, detached: e.rec.detached}
		}
	}
	switch {
	case k.n == 1:
		return absentParentRoot{rec: k.single, id: k.singleID, ok: true}
	case k.n >= 2:
		return absentParentRoot{ambiguous: true}
	case k.detached:
		return absentParentRoot{rec: k.detRec, ok: true, detached: true}
	}
	return absentParentRoot{}
}

// indexRoots records, for a trace with several roots, the decision's roots and which of them
// each decided span had, within MaxIndexedSpans (the oldest traces' entries are evicted): what
// a decision books in the state for the later decisions of its trace, under the state's lock.
func (c *Correlator) indexRoots(spans []Span, nodes []node, roots []int32, recs []rootRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := spans[0].TraceID
	m, _ := c.multi.Get(t)
	if m == nil {
		m = &multiRoot{spanRoot: map[SpanID]uint8{}}
		c.multi.Put(t, m)
	}
	for j, r := range roots {
		if m.position(spans[r].SpanID) < 0 && len(m.roots) < 255 {
			m.roots = append(m.roots, rootEntry{id: spans[r].SpanID, rec: recs[j]})
		}
	}
	for i := range spans {
		n := &nodes[i]
		if !n.valid || n.rootID.IsZero() {
			continue
		}
		q := m.position(n.rootID)
		if q < 0 {
			continue // more than 255 roots: not indexed
		}
		if _, dup := m.spanRoot[spans[i].SpanID]; !dup {
			m.spanRoot[spans[i].SpanID] = uint8(q)
			c.indexed++
		}
	}
	for c.indexed > c.cfg.MaxIndexedSpans {
		_, om, ok := c.multi.EvictOldest()
		if !ok {
			break
		}
		c.indexed -= len(om.spanRoot)
		c.evictedIndexed += uint64(len(om.spanRoot))
	}
}

// Held returns the number of root records and idempotency keys kept.
func (c *Correlator) Held() (roots, keys int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.roots.Len(), c.keys.len()
}

// HeldIndexed returns the number of spans indexed to their root in traces with several roots.
func (c *Correlator) HeldIndexed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.indexed
}

// EvictedIndexed returns how many indexed spans of traces with several roots were evicted to
// stay within MaxIndexedSpans since the Correlator was made.
func (c *Correlator) EvictedIndexed() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evictedIndexed
}

// Evicted returns how many root records and idempotency keys were evicted to stay within
// MaxRootRecords and MaxKeys since the Correlator was made.
func (c *Correlator) Evicted() (roots, keys uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.roots.Evicted(), c.keys.evicted()
}

// Knows reports whether a root record is kept for the trace, or its root came with times that
// are not sane (badRoots): either way no root is still to come.
func (c *Correlator) Knows(t TraceID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.roots.Get(t); ok {
		return true
	}
	_, bad := c.badRoots.Get(t)
	return bad
}

// KnowsAll sets known[i] to whether a root record is kept for trace ids[i] (Knows for many
// traces, under one lock). known must be as long as ids.
func (c *Correlator) KnowsAll(ids []TraceID, known []bool) {
	if len(ids) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, t := range ids {
		_, known[i] = c.roots.Get(t)
		if !known[i] {
			_, known[i] = c.badRoots.Get(t)
		}
	}
}
