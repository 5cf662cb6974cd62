package keyshare

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/lookupcount"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// mapTable is a Table in memory: the records per key, in order, one per trace.
type mapTable struct {
	mu   sync.Mutex
	recs map[uint64][]verdict.RootRef
}

func (m *mapTable) Lookup(h uint64, linked []verdict.TraceID) (verdict.RootRef, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.recs[h] {
		if slices.Contains(linked, r.Trace) {
			return r, true
		}
	}
	if rs := m.recs[h]; len(rs) > 0 {
		return rs[0], true
	}
	return verdict.RootRef{}, false
}

func (m *mapTable) Publish(h uint64, r verdict.RootRef) { m.put(h, r) }

func (m *mapTable) put(h uint64, r verdict.RootRef) {
	m.mu.Lock()
	m.recs[h] = append(m.recs[h], r)
	m.mu.Unlock()
}

// newSharer returns a Sharer and what it counts, by outcome (the processor's key_lookups).
func newSharer(t *testing.T, wait time.Duration, tab Table) (*Sharer, *lookupcount.Counts) {
	t.Helper()
	c := &lookupcount.Counts{}
	s := New(Config{Wait: wait, MaxRecords: 4, MaxWaiting: 4}, tab, c.Add)
	corr, err := verdict.New(verdict.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	s.Attach(corr)
	return s, c
}

type item struct{ id verdict.TraceID }

// The gate holds a trace whose key binds nowhere, releases it when a record arrives (remote),
// decides another after the wait (missed), and counts the record that comes after it (late).
func TestGate(t *testing.T) {
	tab := &mapTable{recs: map[uint64][]verdict.RootRef{}}
	s, rd := newSharer(t, 300*time.Millisecond, tab)
	var mu sync.Mutex
	var released []*item
	var g *Gate[*item]
	// The release function stands for the processor's: it passes the traces through Hold again,
	// which lets them through.
	g = NewGate(s, func(i *item) verdict.TraceID { return i.id }, func(r []*item) {
		mu.Lock()
		released = append(released, g.Hold(r)...)
		mu.Unlock()
	})
	a, b, c := &item{verdict.TraceID{1}}, &item{verdict.TraceID{2}}, &item{verdict.TraceID{3}}
	s.Carried(b.id, 7)
	s.Carried(c.id, 8)
	got := g.Hold([]*item{a, b, c})
	if len(got) != 1 || got[0] != a {
		t.Fatalf("Hold passed %v, want only the trace without keys", got)
	}
	tab.put(7, verdict.RootRef{Gone: 1, Service: "gateway"})
	s.Received([]uint64{7})
	if got := rd.Get(); got["late"] != 0 {
		t.Fatalf("late before any miss: %v", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(released)
		mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if len(released) != 2 || released[0] != b || released[1] != c {
		t.Fatalf("released %v, want b then c", released)
	}
	mu.Unlock()
	tab.put(8, verdict.RootRef{Gone: 2})
	s.Received([]uint64{8, 9})
	g.Close()
	if got, want := rd.Get(), (map[string]int64{"remote": 1, "missed": 1, "late": 1}); got["remote"] != want["remote"] || got["missed"] != want["missed"] || got["late"] != want["late"] {
		t.Fatalf("lookups %v, want %v", got, want)
	}
}

// A trace that links to another waits for that request's record, not for any record of its key:
// another request's record for the same key does not release it, its own does.
func TestGateWaitsForTheLinkedRequest(t *testing.T) {
	tab := &mapTable{recs: map[uint64][]verdict.RootRef{}}
	s, rd := newSharer(t, 5*time.Second, tab)
	released := make(chan *item, 4)
	var g *Gate[*item]
	g = NewGate(s, func(i *item) verdict.TraceID { return i.id }, func(r []*item) {
		for _, i := range g.Hold(r) {
			released <- i
		}
	})
	b := &item{verdict.TraceID{2}}
	a1, a2 := verdict.TraceID{1}, verdict.TraceID{5}
	s.Carried(b.id, 7)
	s.Linked(b.id, []verdict.TraceID{a2})
	require.Empty(t, g.Hold([]*item{b}))
	tab.put(7, verdict.RootRef{Gone: 1, Service: "gateway", Trace: a1})
	s.Received([]uint64{7})
	select {
	case <-released:
		t.Fatal("released by another request's record")
	case <-time.After(300 * time.Millisecond):
	}
	tab.put(7, verdict.RootRef{Gone: 9, Service: "gateway", Trace: a2})
	s.Received([]uint64{7})
	select {
	case got := <-released:
		require.Equal(t, b, got)
	case <-time.After(3 * time.Second):
		t.Fatal("not released by its own request's record")
	}
	g.Close()
	require.Equal(t, int64(1), rd.Get()["remote"])
}
