package verdict

import "testing"

// mapDir is a KeyDirectory shared by two correlators, as the members of a tier share one
// through a topic: recs holds the last record per key, all holds every trace's record per key
// in order of publication.
type mapDir struct {
	recs    map[uint64]RootRef
	all     map[uint64][]RootRef
	carried map[TraceID][]uint64
}

func (d *mapDir) Lookup(h uint64, linked []TraceID) (RootRef, bool) {
	for _, r := range d.all[h] {
		for _, l := range linked {
			if r.Trace == l {
				return r, true
			}
		}
	}
	if rs := d.all[h]; len(rs) > 0 {
		return rs[0], true
	}
	return RootRef{}, false
}

func (d *mapDir) Publish(h uint64, r RootRef) {
	if d.all == nil {
		d.all = map[uint64][]RootRef{}
	}
	d.recs[h] = r
	for i, o := range d.all[h] {
		if o.Trace == r.Trace {
			d.all[h][i] = r
			return
		}
	}
	d.all[h] = append(d.all[h], r)
}

func (d *mapDir) Carried(t TraceID, h uint64) { d.carried[t] = append(d.carried[t], h) }

func (d *mapDir) Linked(TraceID, []TraceID) {}

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
			if r := dir.recs[7]; r.Service != "gateway" || r.Reason != EndReasonCancelled || r.Gone != 2e9 || r.Trace != (TraceID{1}) || r.Root != (SpanID{1}) {
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
	if n := c.tables.KeysPending(); n > 4 {
		t.Fatalf("%d traces pending", n)
	}
}

// twoRequests builds two requests that sent the same key 7 (a client re-sending it, or reusing
// it): A1 (trace 1) cancelled at 2 s, A2 (trace 5) completed at 10 s; and the queue consumers
// B1 (trace 2, linked to A1's PRODUCER span) and B2 (trace 6, linked to A2's), each with a model
// call 3-5 s carrying key 7.
func twoRequests() (a1, a2, b1, b2 []Span) {
	const s = int64(1e9)
	req := func(t TraceID, root, prod SpanID, end int64, status int) []Span {
		return []Span{
			{TraceID: t, SpanID: root, Service: "gateway", Name: "POST", Kind: KindServer, Start: 1 * s, End: end, IsHTTP: true, HTTPStatus: status},
			{TraceID: t, SpanID: prod, ParentID: root, Service: "gateway", Name: "send jobs", Kind: KindProducer, Start: 1 * s, End: 1*s + 1, KeyHash: 7},
		}
	}
	job := func(t, linked TraceID, prod SpanID) []Span {
		return []Span{
			{TraceID: t, SpanID: SpanID{3}, Service: "worker", Name: "process jobs", Kind: KindConsumer, Start: 3 * s, End: 6 * s, Links: []Link{{TraceID: linked, SpanID: prod}}},
			{TraceID: t, SpanID: SpanID{4}, ParentID: SpanID{3}, Service: "worker", Name: "chat", Kind: KindClient, Start: 3 * s, End: 5 * s, KeyHash: 7},
		}
	}
	a1 = req(TraceID{1}, SpanID{1}, SpanID{2}, 2*s, 499)
	a2 = req(TraceID{5}, SpanID{5}, SpanID{6}, 10*s, 200)
	return a1, a2, job(TraceID{2}, TraceID{1}, SpanID{2}), job(TraceID{6}, TraceID{5}, SpanID{6})
}

// Two requests that sent one key each bind their own work (the job linked to them), whichever
// published first, on one correlator and across three sharing a directory (A1, A2 and the
// jobs each on their own member).
func TestKeyDirectoryEachRequestBindsItsOwnRoot(t *testing.T) {
	for _, shared := range []bool{false, true} {
		for _, a2First := range []bool{false, true} {
			dir := &mapDir{recs: map[uint64]RootRef{}, carried: map[TraceID][]uint64{}}
			ma, _ := New(DefaultConfig())
			m2, m3 := ma, ma
			if shared {
				m2, _ = New(DefaultConfig())
				m3, _ = New(DefaultConfig())
				for _, m := range []*Correlator{ma, m2, m3} {
					m.SetKeyDirectory(dir)
				}
			}
			a1, a2, b1, b2 := twoRequests()
			if a2First {
				m2.Observe(a2)
				ma.Observe(a1)
			} else {
				ma.Observe(a1)
				m2.Observe(a2)
			}
			m3.Observe(b1)
			m3.Observe(b2)
			v1, _ := m3.Decide(b1)
			v2, _ := m3.Decide(b2)
			if v1[1].Liveness != LivenessOrphaned || !v1[1].StartedAfterGone {
				t.Errorf("shared=%v a2First=%v: B1's call = %+v, want orphaned (A1 cancelled at 2 s)", shared, a2First, v1[1])
			}
			if v2[1].Liveness != LivenessLive || v2[1].StartedAfterGone {
				t.Errorf("shared=%v a2First=%v: B2's call = %+v, want live (A2 completed at 10 s)", shared, a2First, v2[1])
			}
			if shared && len(dir.all[7]) != 2 {
				t.Errorf("records of key 7: %+v, want one per request", dir.all[7])
			}
			// The gate's question: does the key bind to the request the job links to?
			if got := m3.KeyBindingLinked(7, []TraceID{{5}}); shared && got != BindingRemote || !shared && got != BindingLocal {
				t.Errorf("shared=%v: KeyBindingLinked(7, A2) = %d", shared, got)
			}
			if got := m3.KeyBindingLinked(7, []TraceID{{8}}); got != BindingNone {
				t.Errorf("shared=%v: KeyBindingLinked(7, a trace that sent no key) = %d, want none", shared, got)
			}
		}
	}
}
