// Package state holds what the verdict core keeps of other traces: the cross-trace [Tables]
// (root records, idempotency keys and the key directory, the roots of traces with several),
// each bounded and under one lock. The rules read them through one read-only view
// (rules.CrossTrace, KnownOf) and book into them after a decision (IndexRoots); the time model
// (package verdict) asks them whether a trace's root is known (Knows, RootOf). It imports the
// data (internal/verdict/record) and the rules' types, nothing of the time model.
package state

import (
	"sync"

	"github.com/orphanwatch/orphanwatch/internal/bounded"
	"github.com/orphanwatch/orphanwatch/internal/verdict/record"
	"github.com/orphanwatch/orphanwatch/internal/verdict/rules"
)

// Tables are the cross-trace tables: root records, idempotency keys (keyindex.go, keydir.go)
// and the roots of traces with several, under one lock (mu; lock order: a memo shard, then mu,
// then a key shard). The rules read them through the Correlator's ruleState (KnownOf) and book
// into them (IndexRoots); the time model asks them whether a trace's root is known.
type Tables struct {
	cfg   record.Config
	rules *rules.Rules // RootRecordOf and SaneTimes of an observed root

	mu sync.Mutex
	// roots are the root records, within MaxRootRecords (the oldest evicted first).
	roots *bounded.Table[record.TraceID, rules.RootRecord]
	// badRoots are the traces whose only roots seen have times that are not sane (validity):
	// their traces are known, so decided at once, judged without a root (unknown). Within
	// MaxRootRecords; a trace leaves it when a usable root comes.
	badRoots *bounded.Table[record.TraceID, struct{}]
	// keys are the traces that carried each idempotency key, within MaxKeys: sharded, each
	// shard under its own mutex (keyindex.go; lock order: mu, then a key shard).
	keys *keyIndex
	// multi indexes, for traces with several roots, which root each decided span had, so that
	// a span arriving later is judged against the root its siblings had. Bounded by
	// MaxIndexedSpans entries in all (whole traces evicted, oldest first).
	multi          *bounded.Table[record.TraceID, *rules.MultiRoot]
	indexed        int
	evictedIndexed uint64

	dir *keyDir // key sharing across a tier (keydir.go); nil when off
}

// NewTables returns the tables for cfg, a valid Config, and its rules.
func NewTables(cfg record.Config, r *rules.Rules) *Tables {
	return &Tables{
		cfg:      cfg,
		rules:    r,
		roots:    bounded.New[record.TraceID, rules.RootRecord](cfg.MaxRootRecords, nil),
		badRoots: bounded.New[record.TraceID, struct{}](cfg.MaxRootRecords, nil),
		keys:     newKeyIndex(cfg.MaxKeys),
		multi:    bounded.New[record.TraceID, *rules.MultiRoot](0, nil), // bounded by MaxIndexedSpans (indexRoots)
	}
}

// Observe is the Correlator's ObserveAt in the tables: root records and the key directory
// under mu (observeRootsLocked), then the keys in their shards (keyIndex).
func (c *Tables) Observe(spans []record.Span) {
	c.observeRootsLocked(spans)
	for i := range spans {
		if s := &spans[i]; s.KeyHash != 0 && !s.TraceID.IsZero() && !s.SpanID.IsZero() {
			c.keys.observe(s.KeyHash, s.TraceID)
		}
	}
}

// RootOf returns, under mu, the root record of trace t (ok: one is kept) and whether the
// trace has several roots indexed (multi).
func (c *Tables) RootOf(t record.TraceID) (rec rules.RootRecord, ok, multi bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok = c.roots.Get(t)
	_, multi = c.multi.Get(t)
	return rec, ok, multi
}

// keyTraces holds up to four distinct traces that carried one idempotency key, in arrival order.
type keyTraces struct {
	traces [4]record.TraceID
	n      uint8
}

// observeRootsLocked is Observe's part under the correlator's mutex: root records, and what the
// key directory takes (keydir.go).
func (c *Tables) observeRootsLocked(spans []record.Span) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range spans {
		s := &spans[i]
		if s.TraceID.IsZero() || s.SpanID.IsZero() {
			continue
		}
		if s.ParentID.IsZero() && !c.rules.SaneTimes(s) {
			if _, ok := c.roots.Get(s.TraceID); !ok {
				c.badRoots.Put(s.TraceID, struct{}{})
			}
		} else if s.ParentID.IsZero() {
			c.badRoots.Delete(s.TraceID)
			rec := c.rules.RootRecordOf(s)
			if old, ok := c.roots.Get(s.TraceID); ok {
				// Two roots (or the same root twice): count the second, keep the preferred.
				n := old.NRoots
				if !rec.Detached && (old.Detached || old.ID != rec.ID) && n < 255 {
					n++
				}
				if rules.PreferredRoot(rec, old) {
					old = rec
				}
				old.NRoots = n
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

func (c *Tables) putRootLocked(t record.TraceID, rec rules.RootRecord) {
	c.roots.Put(t, rec) // a new record evicts the oldest when MaxRootRecords are kept
}

// lookupKeyLocked finds the root an idempotency key binds to: among the traces that carried the
// key and whose root is known and is not itself detached work, one that the decided trace links
// to (linked: trace B's CONSUMER span links to the PRODUCER span of the request A that handed
// the job over), here or in another member's record; else the first such trace here; else
// another member's record.
func (c *Tables) lookupKeyLocked(h uint64, linked []record.TraceID) (rules.RootRecord, bool) {
	kt, _ := c.keys.get(h) // a key not seen here has n == 0 and falls through to the directory
	if len(linked) > 0 {
		for i := uint8(0); i < kt.n; i++ {
			if !rules.ContainsTrace(linked, kt.traces[i]) {
				continue
			}
			if rec, ok := c.roots.Get(kt.traces[i]); ok && !rec.Detached {
				return rec, true
			}
		}
		if rec, t, ok := c.keyDirLookupLocked(h, linked); ok && rules.ContainsTrace(linked, t) {
			return rec, true
		}
	}
	for i := uint8(0); i < kt.n; i++ {
		if rec, ok := c.roots.Get(kt.traces[i]); ok && !rec.Detached {
			return rec, true
		}
	}
	rec, _, ok := c.keyDirLookupLocked(h, linked) // another member's record (keydir.go), if shared
	return rec, ok
}

// KnownOf implements CrossTrace under the state's lock.
func (c *Tables) KnownOf(spans []record.Span, nodes []rules.Node, roots []int32, recs []rules.RootRecord, above []rules.AbsentParentRoot) (rules.KnownRoots, map[uint64]rules.RootRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	known := c.knownRootsLocked(spans[0].TraceID, spans, roots, recs)
	for i := range spans {
		if nodes[i].Parent < 0 && !nodes[i].IsRoot {
			above[i] = c.rootOfAbsentParentLocked(&spans[i], &known)
		}
	}
	// Key bindings, once per key, preferring the traces this one links to (two requests
	// re-sending one key each bind their own work).
	var bindings map[uint64]rules.RootRecord // made when a key binds
	var linked []record.TraceID
	linkedDone := false
	for i := range spans {
		if h := spans[i].KeyHash; h != 0 {
			if _, done := bindings[h]; !done {
				if !linkedDone {
					linked, linkedDone = rules.LinkedTraces(spans), true
				}
				if rec, ok := c.lookupKeyLocked(h, linked); ok {
					if bindings == nil {
						bindings = map[uint64]rules.RootRecord{}
					}
					bindings[h] = rec
				}
			}
		}
	}
	return known, bindings
}

// knownRootsLocked gathers what is known of the roots of trace t, given the decision's roots.
func (c *Tables) knownRootsLocked(t record.TraceID, spans []record.Span, roots []int32, recs []rules.RootRecord) rules.KnownRoots {
	var k rules.KnownRoots
	k.Multi, _ = c.multi.Get(t)
	for j := range roots {
		if recs[j].Detached {
			k.Detached, k.DetRec = true, recs[j]
			continue
		}
		k.N++
		k.Single, k.SingleID = recs[j], spans[roots[j]].SpanID
	}
	if k.Multi != nil {
	next:
		for _, e := range k.Multi.Roots {
			for _, r := range roots {
				if spans[r].SpanID == e.ID {
					continue next
				}
			}
			if e.Rec.Detached {
				k.Detached, k.DetRec = true, e.Rec
				continue
			}
			k.N++
			k.Single, k.SingleID = e.Rec, e.ID
		}
	}
	if rec, ok := c.roots.Get(t); ok {
		if rec.Detached {
			k.Detached, k.DetRec = true, rec
		} else if int(rec.NRoots) > k.N {
			k.N, k.Single, k.SingleID = int(rec.NRoots), rec, record.SpanID{}
		} else if k.N == 0 {
			k.N, k.Single, k.SingleID = 1, rec, record.SpanID{}
		}
	}
	if k.N > 0 {
		k.Detached = false
	}
	if k.N == 0 && !k.Detached {
		_, k.Unusable = c.badRoots.Get(t)
	}
	return k
}

// rootOfAbsentParentLocked decides the root of a span whose parent is absent from the decision
// (it came in an earlier one, or never came): the root the parent had, when the trace's index
// knows it; else the trace's only root (not detached work); else, with several roots, none
// (ambiguous: the span is unknown and counted); with only detached roots, detached.
func (c *Tables) rootOfAbsentParentLocked(s *record.Span, k *rules.KnownRoots) rules.AbsentParentRoot {
	if k.Multi != nil && !s.ParentID.IsZero() {
		if j, ok := k.Multi.SpanRoot[s.ParentID]; ok {
			e := k.Multi.Roots[j]
			return rules.AbsentParentRoot{Rec: e.Rec, ID: e.ID, OK: true, Detached: e.Rec.Detached}
		}
	}
	switch {
	case k.N == 1:
		return rules.AbsentParentRoot{Rec: k.Single, ID: k.SingleID, OK: true}
	case k.N >= 2:
		return rules.AbsentParentRoot{Ambiguous: true}
	case k.Detached:
		return rules.AbsentParentRoot{Rec: k.DetRec, OK: true, Detached: true}
	}
	return rules.AbsentParentRoot{}
}

// IndexRoots records, for a trace with several roots, the decision's roots and which of them
// each decided span had, within MaxIndexedSpans (the oldest traces' entries are evicted): what
// a decision books in the state for the later decisions of its trace, under the state's lock.
func (c *Tables) IndexRoots(spans []record.Span, nodes []rules.Node, roots []int32, recs []rules.RootRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := spans[0].TraceID
	m, _ := c.multi.Get(t)
	if m == nil {
		m = &rules.MultiRoot{SpanRoot: map[record.SpanID]uint8{}}
		c.multi.Put(t, m)
	}
	for j, r := range roots {
		if m.Position(spans[r].SpanID) < 0 && len(m.Roots) < 255 {
			m.Roots = append(m.Roots, rules.RootEntry{ID: spans[r].SpanID, Rec: recs[j]})
		}
	}
	for i := range spans {
		n := &nodes[i]
		if !n.Valid || n.RootID.IsZero() {
			continue
		}
		q := m.Position(n.RootID)
		if q < 0 {
			continue // more than 255 roots: not indexed
		}
		if _, dup := m.SpanRoot[spans[i].SpanID]; !dup {
			m.SpanRoot[spans[i].SpanID] = uint8(q)
			c.indexed++
		}
	}
	for c.indexed > c.cfg.MaxIndexedSpans {
		_, om, ok := c.multi.EvictOldest()
		if !ok {
			break
		}
		c.indexed -= len(om.SpanRoot)
		c.evictedIndexed += uint64(len(om.SpanRoot))
	}
}

// Held is the Correlator's Held, under mu.
func (c *Tables) Held() (roots, keys int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.roots.Len(), c.keys.len()
}

// HeldIndexed is the Correlator's HeldIndexed, under mu.
func (c *Tables) HeldIndexed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.indexed
}

// EvictedIndexed is the Correlator's EvictedIndexed, under mu.
func (c *Tables) EvictedIndexed() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evictedIndexed
}

// Evicted is the Correlator's Evicted, under mu.
func (c *Tables) Evicted() (roots, keys uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.roots.Evicted(), c.keys.evicted()
}

// Knows is the Correlator's Knows, under mu.
func (c *Tables) Knows(t record.TraceID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.roots.Get(t); ok {
		return true
	}
	_, bad := c.badRoots.Get(t)
	return bad
}

// KnowsAll is the Correlator's KnowsAll, under mu.
func (c *Tables) KnowsAll(ids []record.TraceID, known []bool) {
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

// LockHeld reports whether mu is held, by anyone: for the lock-order check of the tests
// (CheckLockOrder: no memo shard locked with mu held).
func (c *Tables) LockHeld() bool {
	if c.mu.TryLock() {
		c.mu.Unlock()
		return false
	}
	return true
}

// KeysPending is the number of traces whose keys wait for their root to be published to the
// key directory (0 when key sharing is off).
func (c *Tables) KeysPending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir == nil {
		return 0
	}
	return c.dir.pending.Len()
}
