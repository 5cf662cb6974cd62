package verdict

import "testing"

// mapDir is a KeyDirectory shared by two correlators, as the members of a tier share one
// through a topic.
type mapDir struct {
	recs    map[uint64]RootRef
	carried map[TraceID][]uint64
}

func (d *mapDir) Lookup(h uint64) (RootRef, bool) { r, ok := d.recs[h]; return r, ok }
func (d *mapDir) Publish(h uint64, r RootRef)     { d.recs[h] = r }
func (d *mapDir) Carried(t TraceID, h uint64)     { d.carried[t] = append(d.carried[t], h) }

// s7Split builds S7's shape: trace A (a cancelled request whose PRODUCER span carries key 7)
// and trace B (a CONSUMER root linked to it, a model call carrying key 7 that ends after A's
// gone time).
func s7Split() (a, b []Span) {
	const s = int64(1e9)
	ta, tb := TraceID{1}, TraceID{2}
	a = []Span{
		{TraceID: ta, SpanID: SpanID{1}, Service: "gateway", Name: "POST", Kind: KindServer, Start: 1 * s, End: 2 * s, IsHTTP: true, HTTPStatus: 499},
		{TraceID: ta, SpanID: SpanID{2}, ParentID: SpanID{1}, Service: "gateway", Name: "send jobs", Kind: KindProducer, Start: 1 * s, End: 1*s + 1, KeyHash: 7},
	}
	b = []Span{
		{TraceID: tb, SpanID: SpanID{3}, Service: "worker", Name: "process jobs", Kind: KindConsumer, Start: 3 * s, End: 6 * s, Links: []Link{{TraceID: ta, SpanID: SpanID{2}}}},
		{TraceID: tb, SpanID: SpanID{4}, ParentID: SpanID{3}, Service: "worker", Name: "chat", Kind: KindClient, Start: 3 * s, End: 5 * s, KeyHash: 7},
	}
	return a, b
}

func TestKeyDirectoryBindsAcrossCorrelators(t *testing.T) {
	for _, shared := range []bool{false, true} {
		dir := &mapDir{recs: map[uint64]RootRef{}, carried: map[TraceID][]uint64{}}
		m1, _ := New(DefaultConfig())
		m2, _ := New(DefaultConfig())
		if shared {
			m1.SetKeyDirectory(dir)
			m2.SetKeyDirectory(dir)
		}
		a, b := s7Split()
		// B's spans come first, and A's key before its root: the record is published when the
		// root arrives.
		m2.Observe(b)
		m1.Observe(a[1:])
		if len(dir.recs) != 0 {
			t.Fatalf("published before A's root arrived: %v", dir.recs)
		}
		m1.Observe(a[:1])
		if got := m2.KeyBinding(7); shared && got != BindingRemote || !shared && got != BindingNone {
			t.Errorf("shared=%v: m2.KeyBinding = %d", shared, got)
		}
		if got := m1.KeyBinding(7); got != BindingLocal {
			t.Errorf("shared=%v: m1.KeyBinding = %d, want local", shared, got)
		}
		v, _ := m2.Decide(b)
		if shared {
			if v[1].Liveness != LivenessOrphaned || !v[1].StartedAfterGone || v[1].Detached {
				t.Errorf("shared: B's model call = %+v, want orphaned, started after gone", v[1])
			}
			if r := dir.recs[7]; r.Service != "gateway" || r.Reason != EndReasonCancelled || r.Gone != 2e9 {
				t.Errorf("published record %+v", r)
			}
			if len(dir.carried[TraceID{2}]) != 1 || len(dir.carried[TraceID{1}]) != 1 {
				t.Errorf("carried %v", dir.carried)
			}
		} else if !v[1].Detached || v[1].Liveness != LivenessNone {
			t.Errorf("not shared: B's model call = %+v, want detached", v[1])
		}
	}
}

// A key carried only by detached work is never published: it binds nothing (docs/verdicts.md).
func TestKeyDirectoryDetachedRootPublishesNothing(t *testing.T) {
	dir := &mapDir{recs: map[uint64]RootRef{}, carried: map[TraceID][]uint64{}}
	c, _ := New(DefaultConfig())
	c.SetKeyDirectory(dir)
	_, b := s7Split()
	c.Observe(b[1:])
	c.Observe(b[:1])
	if len(dir.recs) != 0 {
		t.Fatalf("a detached root published %v", dir.recs)
	}
}

// The traces waiting for their root to publish their keys are bounded by MaxKeys.
func TestKeyDirectoryPendingBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxKeys = 4
	c, _ := New(cfg)
	c.SetKeyDirectory(&mapDir{recs: map[uint64]RootRef{}, carried: map[TraceID][]uint64{}})
	for i := range 100 {
		c.Observe([]Span{{TraceID: TraceID{byte(i), 1}, SpanID: SpanID{1}, ParentID: SpanID{2}, KeyHash: uint64(i + 1)}})
	}
	if n := c.dir.pending.Len(); n > 4 {
		t.Fatalf("%d traces pending", n)
	}
}
