package verdict

import (
	"fmt"
	"sync"
	"testing"
)

// TestMemoFreeClasses: slices come in capacity classes, are reused once given back (cleared),
// and the free list keeps no more than memoFreeRecords records.
func TestMemoFreeClasses(t *testing.T) {
	for _, c := range []struct{ n, class int }{{1, 0}, {8, 0}, {9, 1}, {16, 1}, {17, 2}, {40, 4}, {65, 8}, {1024, memoClasses - 1}, {1025, -1}} {
		if got := memoClass(c.n); got != c.class {
			t.Errorf("memoClass(%d) = %d, want %d", c.n, got, c.class)
		}
	}
	var f memoFree
	b := f.take(5)
	if cap(b.spans) != 8 || cap(b.emitted) != 8 || cap(b.edged) != 8 || len(b.spans) != 0 {
		t.Fatalf("take(5): caps %d/%d/%d len %d, want 8/8/8 len 0", cap(b.spans), cap(b.emitted), cap(b.edged), len(b.spans))
	}
	b.spans = append(b.spans, Span{Name: "kept", Service: "svc"})
	b.emitted = append(b.emitted, true)
	b.edged = append(b.edged, true)
	clear(b.spans) // as Correlator.recycle does
	f.give(b)
	if f.records != 8 {
		t.Fatalf("records after give = %d, want 8", f.records)
	}
	again := f.take(3)
	if &again.spans[:1][0] != &b.spans[0] {
		t.Fatal("take after give did not reuse the slice given back")
	}
	if f.records != 0 {
		t.Fatalf("records after take = %d, want 0", f.records)
	}
	// Above every class: allocated to size, never kept.
	big := f.take(2000)
	if cap(big.spans) != 2000 {
		t.Fatalf("take(2000) cap %d, want 2000", cap(big.spans))
	}
	f.give(big)
	if f.records != 0 {
		t.Fatalf("a slice above every class was kept (%d records)", f.records)
	}
	// The bound.
	for range 2 * memoFreeRecords / 1024 {
		f.give(memoBufs{spans: make([]Span, 0, 1024), emitted: make([]bool, 0, 1024), edged: make([]bool, 0, 1024)})
	}
	if f.records != memoFreeRecords {
		t.Fatalf("free list holds %d records, want the bound %d", f.records, memoFreeRecords)
	}
}

// TestMemoRecycledAcrossTraces: a memo forgotten to MaxContextSpans gives its slices to the next
// trace's memo, and what the next trace's late span is judged with is its own trace's records
// only (a recycled record of the forgotten trace would show as a second span of its memo).
func TestMemoRecycledAcrossTraces(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxContextSpans = 2
	c := mustNew(t, cfg)
	mk := func(tid byte, sid byte, parent byte, name string) Span {
		s := Span{TraceID: TraceID{tid}, SpanID: SpanID{sid}, Name: name, Service: "svc", Start: 1e9, End: 2e9,
			GRPCStatus: -1, ResendCount: -1, InputTokens: -1, OutputTokens: -1}
		if parent != 0 {
			s.ParentID = SpanID{parent}
		}
		return s
	}
	for tr := byte(1); tr <= 40; tr++ {
		root := mk(tr, 1, 0, "root")
		child := mk(tr, 2, 1, "child")
		spans := []Span{root, child}
		c.Observe(spans)
		d := c.Release(nil, spans, int64(tr)*1e9, nil)
		if len(d.Verdicts) != 2 {
			t.Fatalf("trace %d: %d verdicts", tr, len(d.Verdicts))
		}
		ms := c.memoShardOf(TraceID{tr})
		ms.mu.Lock()
		m := ms.memos[TraceID{tr}]
		if m == nil || len(m.spans) != 2 || m.spans[0].TraceID != (TraceID{tr}) || m.spans[1].TraceID != (TraceID{tr}) {
			ms.mu.Unlock()
			t.Fatalf("trace %d: memo %+v, want its own two records", tr, m)
		}
		ms.mu.Unlock()
	}
	reused := c.memoFree.records
	// What Correlator.recycle gives back holds no record: the records point into spans' strings.
	b := c.memoFree.take(5)
	b.spans = append(b.spans, Span{Name: "kept", Service: "svc"})
	b.emitted, b.edged = append(b.emitted, true), append(b.edged, true)
	c.recycle(b)
	if again := c.memoFree.take(5); &again.spans[:1][0] != &b.spans[0] || again.spans[:1][0].Name != "" || again.spans[:1][0].Service != "" {
		t.Fatalf("recycled record %+v: not reused, or not cleared", again.spans[:1][0])
	}
	if c.memoSpans > cfg.MaxContextSpans {
		t.Fatalf("memo spans %d over the bound %d", c.memoSpans, cfg.MaxContextSpans)
	}
	t.Logf("records on free lists at the end: %d", reused)
}

// TestMemoInPlaceCounts: later releases of a trace decide with its memo in place (the spans join
// the memo); Kept counts each span once, and a final release (ReleaseLast) leaves nothing kept.
func TestMemoInPlaceCounts(t *testing.T) {
	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(sid, parent byte, name string, start, end int64) Span {
		s := Span{TraceID: TraceID{9}, SpanID: SpanID{sid}, Name: name, Service: "svc", Start: start, End: end, Kind: KindClient, Target: NewTargetHash().Add(name),
			GRPCStatus: -1, ResendCount: -1, InputTokens: -1, OutputTokens: -1}
		if parent != 0 {
			s.ParentID = SpanID{parent}
		}
		return s
	}
	root := []Span{mk(1, 0, "root", 1e9, 5e9)}
	c.Observe(root)
	c.Release(nil, root, 6e9, nil)
	for k := byte(2); k <= 5; k++ { // one span a release, each a child of the root
		part := []Span{mk(k, 1, "tool", int64(k)*1e8, int64(k)*1e8+5e7)}
		part[0].IsHTTP, part[0].HTTPStatus, part[0].Status = true, 503, StatusError // retried
		d := c.Release(nil, part, int64(k)*1e10, nil)
		if len(d.Verdicts) != 1 || d.Verdicts[0].Liveness != LivenessLive {
			t.Fatalf("release %d: %+v, want one live verdict", k, d.Verdicts)
		}
		if memo, _, _ := c.Kept(); memo != int(k) {
			t.Fatalf("after release %d: %d records kept, want %d", k, memo, k)
		}
	}
	// The same-name siblings are attempts of one run (each failed but the last), numbered on
	// across the releases.
	d := c.ReleaseLast(nil, []Span{mk(6, 1, "tool", 6e8, 6e8+5e7)}, 1e11, nil)
	if len(d.Verdicts) != 1 || d.Verdicts[0].Attempt != 5 {
		t.Fatalf("last release: %+v, want the fifth attempt", d.Verdicts)
	}
	if memo, pending, _ := c.Kept(); memo != 0 || pending != 0 {
		t.Fatalf("after the final release: %d records, %d pending kept; want none", memo, pending)
	}
}

// TestMemoClassWaste: a new memo slice is at most 7 records or a quarter larger than asked.
func TestMemoClassWaste(t *testing.T) {
	for n := 1; n <= memoClassSizes[memoClasses-1]; n++ {
		size := memoClassSizes[memoClass(n)]
		if size < n || size-n > 7 && 4*size > 5*n {
			t.Fatalf("asked %d records: a slice of %d", n, size)
		}
	}
}

// TestMemoGrowthAboveClasses: a memo above every class, grown by one release after another,
// is not moved (copied whole) at every release: its slices grow as append's do, so a trace of
// thousands of spans released in small parts costs linear, not quadratic, copying.
func TestMemoGrowthAboveClasses(t *testing.T) {
	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	m := &traceMemo{}
	c.growMemo(m, memoClassSizes[memoClasses-1])
	m.spans = m.spans[:cap(m.spans)]
	m.emitted, m.edged = m.emitted[:len(m.spans)], m.edged[:len(m.spans)]
	moves := 0
	for range 200 { // 200 releases of one span each, past the largest class
		before := cap(m.spans)
		c.growMemo(m, 1)
		if cap(m.spans) != before {
			moves++
		}
		if cap(m.emitted) < len(m.spans)+1 || cap(m.edged) < len(m.spans)+1 {
			t.Fatalf("caps %d/%d/%d for %d records", cap(m.spans), cap(m.emitted), cap(m.edged), len(m.spans)+1)
		}
		m.spans = m.spans[:len(m.spans)+1]
		m.emitted, m.edged = m.emitted[:len(m.spans)], m.edged[:len(m.spans)]
	}
	if moves > 3 {
		t.Fatalf("the memo's slices moved %d times in 200 one-span releases past %d records", moves, memoClassSizes[memoClasses-1])
	}
}

// TestMemoRecycleConcurrent: releases of many traces at once, in every shard, with memos
// forgotten and given up all the time (tiny bounds) and sweeps meanwhile: every carried verdict a
// release returns is of its own trace (a memo slice recycled while still in use would show
// another trace's records), and the counts stay within their bounds. Run with -race.
func TestMemoRecycleConcurrent(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxContextSpans = 40
	cfg.MaxPendingSpans = 30
	c := mustNew(t, cfg)
	mk := func(g, tr int, sid, parent byte, name string) Span {
		s := Span{TraceID: TraceID{byte(g), byte(tr), byte(tr >> 8), 1}, SpanID: SpanID{sid}, Name: name, Service: "svc",
			Start: 1e9 + int64(sid)*1e6, End: 2e9, Kind: KindClient, Target: NewTargetHash().Add(name),
			GRPCStatus: -1, ResendCount: -1, InputTokens: -1, OutputTokens: -1}
		if parent != 0 {
			s.ParentID = SpanID{parent}
		}
		if sid%3 == 0 {
			s.ErrorType = "context canceled"
		}
		return s
	}
	const goroutines, traces = 4, 250
	errs := make(chan string, goroutines)
	done := make(chan struct{})
	go func() { // sweeps meanwhile
		for now := int64(1e12); ; now += 1e9 {
			select {
			case <-done:
				return
			default:
			}
			c.Sweep(now)
		}
	}()
	var wg sync.WaitGroup
	for g := 1; g <= goroutines; g++ {
		wg.Go(func() {
			for tr := range traces {
				tid := mk(g, tr, 1, 0, "root").TraceID
				now := int64(tr+1) * 1e9
				// Children before the root (deferred), the root, then late children one by one.
				// Past 8 records (the smallest class), so that memos move to a larger class.
				early := []Span{mk(g, tr, 2, 1, "a"), mk(g, tr, 3, 2, "b"), mk(g, tr, 4, 2, "b"), mk(g, tr, 5, 2, "b"), mk(g, tr, 6, 1, "a")}
				c.Observe(early)
				c.Release(nil, early, now, func(int) any { return tr })
				root := []Span{mk(g, tr, 1, 0, "root")}
				c.Observe(root)
				parts := [][]Span{root, {mk(g, tr, 7, 1, "tool"), mk(g, tr, 8, 1, "tool")},
					{mk(g, tr, 9, 1, "tool"), mk(g, tr, 10, 9, "c"), mk(g, tr, 11, 9, "c")}, {mk(g, tr, 12, 1, "tool")}}
				for k, p := range parts {
					var d Decision
					if tr%5 == 0 && k == len(parts)-1 {
						d = c.ReleaseLast(nil, p, now+int64(k)*1e6, nil)
					} else {
						d = c.Release(nil, p, now+int64(k)*1e6, nil)
					}
					for _, cv := range d.Carried {
						if cv.Span.TraceID != tid {
							errs <- fmt.Sprintf("trace %x: carried a record of trace %x", tid, cv.Span.TraceID)
							return
						}
					}
					if len(d.Verdicts) != len(p) {
						errs <- fmt.Sprintf("trace %x: %d verdicts for %d spans", tid, len(d.Verdicts), len(p))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(done)
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	c.Finish(1e15)
	memo, pending, _ := c.Kept()
	if pending != 0 || memo < 0 || memo > cfg.MaxContextSpans {
		t.Fatalf("after Finish: %d memo records, %d pending; want at most %d, none pending", memo, pending, cfg.MaxContextSpans)
	}
	c.memoFree.mu.Lock()
	defer c.memoFree.mu.Unlock()
	if c.memoFree.records > memoFreeRecords {
		t.Fatalf("free list holds %d records, over %d", c.memoFree.records, memoFreeRecords)
	}
}

// TestSettledChainsMemoEvictable: a memo that owed verdicts (a provisional span) when
// MaxContextSpans reached it in the settled queue, then settled by Sweep after ChainWait
// (settleChainsLocked), is forgotten again in its turn: not kept, and counted, forever.
func TestSettledChainsMemoEvictable(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxContextSpans = 2
	c := mustNew(t, cfg)
	mk := func(tr, sid, parent byte) Span {
		s := Span{TraceID: TraceID{tr, 7}, SpanID: SpanID{sid}, Name: "op", Service: "svc", Start: 1e9, End: 2e9,
			GRPCStatus: -1, ResendCount: -1, InputTokens: -1, OutputTokens: -1}
		if parent != 0 {
			s.ParentID = SpanID{parent}
		}
		return s
	}
	// Trace 1: its root, and a span whose parent (2) has not come: provisional, owing.
	a := []Span{mk(1, 1, 0), mk(1, 3, 2)}
	c.Observe(a)
	if d := c.Release(nil, a, 3e9, nil); !d.Verdicts[1].Provisional {
		t.Fatalf("span under an absent parent: %+v, want provisional", d.Verdicts[1])
	}
	// Trace 2 puts the settled memos over the bound: trace 1, at the front, owes (skipped).
	b := []Span{mk(2, 1, 0), mk(2, 2, 1)}
	c.Observe(b)
	c.Release(nil, b, 4e9, nil)
	// ChainWait passes: trace 1's provisional span is judged, its memo settled.
	c.Sweep(4e9 + int64(cfg.ChainWait) + 1e9)
	for tr := byte(3); tr < 20; tr++ {
		s := []Span{mk(tr, 1, 0), mk(tr, 2, 1)}
		c.Observe(s)
		c.Release(nil, s, int64(tr)*1e10, nil)
	}
	memo, pending, _ := c.Kept()
	ms := c.memoShardOf(TraceID{1, 7})
	ms.mu.Lock()
	kept := ms.memos[TraceID{1, 7}] != nil
	ms.mu.Unlock()
	if kept || memo-pending > cfg.MaxContextSpans {
		t.Fatalf("trace 1's memo kept: %v; %d settled records kept, bound %d", kept, memo-pending, cfg.MaxContextSpans)
	}
}
