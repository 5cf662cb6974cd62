package verdict

import (
	"testing"
	"time"

	"github.com/orphanwatch/orphanwatch/internal/verdict/rules"
)

// indexSpan is a span of trace tr for the index tests: id under parent (0: a root), ended at
// end seconds.
func indexSpan(tr byte, id, parent byte, end int64) Span {
	s := Span{TraceID: TraceID{tr, 7}, SpanID: SpanID{id, 1}, Service: "svc", Name: "GET /x", Kind: KindServer,
		Start: int64(time.Second), End: end * int64(time.Second), IsHTTP: true, HTTPStatus: 200, GRPCStatus: -1,
		ResendCount: -1, InputTokens: -1, OutputTokens: -1}
	if parent != 0 {
		s.ParentID = SpanID{parent, 1}
	}
	return s
}

// checkIndex fails t unless m's index agrees with m's records: one node per record, with its
// span and parent IDs, its parent the record with that ID, the root the one record without a
// parent.
func checkIndex(t *testing.T, m *traceMemo) {
	t.Helper()
	ix := m.ix
	if len(ix.n) != len(m.spans) {
		t.Fatalf("index of %d nodes, memo of %d records", len(ix.n), len(m.spans))
	}
	for i := range ix.n {
		n, s := &ix.n[i], &m.spans[i]
		if n.id != s.SpanID || n.pid != s.ParentID {
			t.Fatalf("node %d is %x under %x, its record %x under %x", i, n.id, n.pid, s.SpanID, s.ParentID)
		}
		switch {
		case n.par >= 0 && m.spans[n.par].SpanID != s.ParentID:
			t.Fatalf("node %d's parent is record %d (%x), its parent ID %x", i, n.par, m.spans[n.par].SpanID, s.ParentID)
		case s.ParentID.IsZero() && ix.root != int32(i):
			t.Fatalf("record %d is the root, the index's root %d", i, ix.root)
		}
	}
	// Run groups: each group's chain holds exactly the nodes that name it, each with its key.
	members := 0
	for g := range ix.groups {
		for k := ix.groups[g].first; k >= 0; k = ix.n[k].gnext {
			if ix.n[k].grp != int32(g) || (rules.RunKey{Parent: m.spans[k].ParentID, Op: rules.OpKey(&m.spans[k])}) != ix.groups[g].key {
				t.Fatalf("group %d chains node %d of group %d", g, k, ix.n[k].grp)
			}
			members++
		}
	}
	for i := range ix.n {
		if ix.n[i].grp >= 0 {
			members--
		}
	}
	if members != 0 {
		t.Fatalf("the groups' chains and the nodes' groups differ by %d", members)
	}
}

// TestIndexFollowsMemoGrowth: a trace of 60 spans released one at a time, root first, then
// its spans in an order where most arrive before their parent: the memo's slices move from
// class to class (8, 16, ... 64 records) as it grows in place, and after every release its
// index still agrees with its records, the later releases decided incrementally.
func TestIndexFollowsMemoGrowth(t *testing.T) {
	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	spans := []Span{indexSpan(1, 1, 0, 100)}
	for id := byte(2); id <= 60; id++ {
		spans = append(spans, indexSpan(1, id, id/2, 100-int64(id))) // a binary tree: parent id/2
	}
	// Leaves before their parents: the second half first, then the first, each in reverse.
	order := []Span{spans[0]}
	for i := len(spans) - 1; i >= 1; i-- {
		order = append(order, spans[i])
	}
	c.Observe(order)
	ms := c.memoShardOf(spans[0].TraceID)
	now := 200 * int64(time.Second)
	caps := map[int]bool{}
	for k, s := range order {
		c.Release(nil, []Span{s}, now, nil)
		m := ms.memos[s.TraceID]
		caps[cap(m.spans)] = true
		if k >= 1 {
			checkIndex(t, m)
		}
	}
	if len(caps) < 4 {
		t.Fatalf("the memo's slices took %d capacities: it did not move", len(caps))
	}
	n, whole := c.DecisionPaths()
	if n != uint64(len(order)-2) || whole[wholeIndex] != 1 || whole[wholeNone] != 1 {
		t.Fatalf("incremental %d, whole %v: want %d incremental, one first release, one index built", n, whole, len(order)-2)
	}
}

// TestIndexDroppedWithMemo: a trace's index goes with its memo when max_context_spans forgets
// it (its records recycled); the trace's next release is decided as a first release (whole,
// no index), and the one after builds a new index from the new memo's records: the forgotten
// memo's index, recycled and emptied.
func TestIndexDroppedWithMemo(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxContextSpans = 4
	c := mustNew(t, cfg)
	now := 200 * int64(time.Second)
	a := []Span{indexSpan(1, 1, 0, 100), indexSpan(1, 2, 1, 50), indexSpan(1, 3, 1, 60), indexSpan(1, 4, 2, 40)}
	for _, i := range []int{1, 3} { // client calls: attempts, each a run group of the index
		a[i].Kind = KindClient
	}
	c.Observe(a)
	c.Release(nil, a[:1], now, nil)
	c.Release(nil, a[1:2], now, nil) // the second release: the index is built
	ms := c.memoShardOf(a[0].TraceID)
	m := ms.memos[a[0].TraceID]
	if m == nil || m.ix == nil || len(m.ix.groups) != 1 {
		t.Fatal("no index with one run group after the trace's second release")
	}
	first := m.ix
	// Another trace of 5 spans: over max_context_spans, the oldest memo (a's) is forgotten.
	b := []Span{indexSpan(2, 1, 0, 100), indexSpan(2, 2, 1, 50), indexSpan(2, 3, 1, 50), indexSpan(2, 4, 1, 50), indexSpan(2, 5, 1, 50)}
	c.Observe(b)
	c.Release(nil, b, now, nil)
	if ms.memos[a[0].TraceID] != nil {
		t.Fatal("trace a's memo was not forgotten")
	}
	if m.ix != nil || m.spans != nil {
		t.Fatal("a forgotten memo kept its index or its records")
	}
	_, before := c.DecisionPaths()
	c.Release(nil, a[2:3], now, nil)
	m2 := ms.memos[a[0].TraceID]
	_, after := c.DecisionPaths()
	if m2 == nil || m2.ix != nil || after[wholeNone] != before[wholeNone]+1 {
		t.Fatalf("the release after the memo was forgotten: index %v, first releases %d → %d", m2 != nil && m2.ix != nil, before[wholeNone], after[wholeNone])
	}
	c.Release(nil, a[3:4], now, nil)
	if m2.ix != first {
		t.Fatal("the new memo's index is not the forgotten memo's, recycled")
	}
	checkIndex(t, m2)
	if len(m2.ix.n) != 2 || len(m2.ix.groups) != 1 || m2.ix.groups[0].first != 1 || m2.ix.root != -1 {
		t.Fatalf("the recycled index kept the forgotten memo's nodes or groups: %d nodes, groups %+v, root %d", len(m2.ix.n), m2.ix.groups, m2.ix.root)
	}
}
