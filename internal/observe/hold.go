package observe

import (
	"slices"
	"sync"
	"time"

	"github.com/orphanwatch/orphanwatch/internal/dueheap"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Where a trace's records wait for their decision: the time model of the orphan processor
// (docs/verdicts.md "When verdicts are decided"), applied to compact records instead of spans.
// A trace is decided decision_wait_after_root after its root arrived, or decision_wait after
// its first span when no root came; records arriving after a decision wait
// decision_wait_after_root from their arrival (their trace's root known) or decision_wait.
// Both modes decide the same records at the same moments: they give the same verdicts.

// waiting is a trace's records waiting for their decision.
type waiting struct {
	id      verdict.TraceID
	spans   []verdict.Span // each with what the sink keeps of its span (Extra)
	first   time.Time      // arrival of the first record
	due     time.Time
	hasRoot bool
	seq     uint64 // its entry in the due queue (a stale entry has another)
	last    bool   // decided at shutdown: nothing comes after (verdict.Correlator.ReleaseLast)
}

// dueRef is a waiting trace in the due queue; stale when the trace's seq moved on.
type dueRef struct {
	w   *waiting
	seq uint64
}

// waitRoom is the waiting traces, by ID and by due time, under one mutex.
type waitRoom struct {
	mu      sync.Mutex
	traces  map[verdict.TraceID]*waiting
	queue   dueheap.Heap[dueRef]
	seq     uint64
	records int // records waiting, all traces
	evicted struct{ traces, spansPerTrace uint64 }
}

// setDue makes w due at due (locked).
func (r *waitRoom) setDue(w *waiting, due time.Time) {
	r.seq++
	w.seq, w.due = r.seq, due
	r.queue.Push(due, dueRef{w: w, seq: w.seq})
}

// take removes w from the room (locked): it is decided now.
func (r *waitRoom) take(w *waiting) *waiting {
	delete(r.traces, w.id)
	w.seq = 0 // its queue entries are stale
	r.records -= len(w.spans)
	return w
}

// due takes the traces due at now (every trace with a zero now), in due order.
func (r *waitRoom) dueAt(now time.Time) []*waiting {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*waiting
	for len(r.queue) > 0 {
		e := r.queue[0]
		if e.V.w.seq != e.V.seq { // stale: the trace was taken or its due moved
			r.queue.Pop()
			continue
		}
		if !now.IsZero() && e.Due.After(now) {
			break
		}
		r.queue.Pop()
		out = append(out, r.take(e.V.w))
	}
	return out
}

// oldest takes the trace whose first record arrived first (locked): max_traces was reached.
// A linear walk: it happens only at the bound.
func (r *waitRoom) oldest() *waiting {
	var o *waiting
	for _, w := range r.traces {
		if o == nil || w.first.Before(o.first) {
			o = w
		}
	}
	if o == nil {
		return nil
	}
	return r.take(o)
}

// nextDue is when the first waiting trace is due; zero when none waits.
func (r *waitRoom) nextDue() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.queue) > 0 {
		if e := r.queue[0]; e.V.w.seq == e.V.seq {
			return e.Due
		}
		r.queue.Pop()
	}
	return time.Time{}
}

// wait adds the batch's records to their waiting traces and returns the traces to decide now
// (max_spans_per_trace reached, max_traces reached: the oldest).
func (o *Observer) wait(b *batch, now time.Time) (ready []*waiting) {
	r := &o.room
	afterRoot := min(o.cfg.DecisionWaitAfterRoot, o.cfg.DecisionWait)
	lim := o.lim
	r.mu.Lock()
	defer r.mu.Unlock()
	for gi := range b.groups {
		g := &b.groups[gi]
		w := r.traces[g.id]
		if w == nil {
			w = &waiting{id: g.id, first: now}
			r.traces[g.id] = w
			if b.known[gi] {
				r.setDue(w, now.Add(afterRoot)) // its root came before: the short wait
			} else {
				r.setDue(w, now.Add(o.cfg.DecisionWait))
			}
		}
		w.spans = slices.Grow(w.spans, g.n)
		for i := g.off; i < g.off+g.n; i++ {
			w.spans = append(w.spans, b.spans[i])
			r.records++
			if b.spans[i].ParentID.IsZero() && !w.hasRoot {
				w.hasRoot = true
				if d := now.Add(afterRoot); d.Before(w.due) {
					r.setDue(w, d)
				}
			}
			if len(w.spans) >= lim.MaxSpansPerTrace {
				r.evicted.spansPerTrace++
				known := b.known[gi] || w.hasRoot
				ready = append(ready, r.take(w))
				// The next records of the batch start a new wait for the trace.
				w = &waiting{id: g.id, first: now}
				r.traces[g.id] = w
				if known {
					r.setDue(w, now.Add(afterRoot))
				} else {
					r.setDue(w, now.Add(o.cfg.DecisionWait))
				}
			}
		}
		if len(w.spans) == 0 {
			r.take(w)
		}
	}
	for len(r.traces) > lim.MaxTraces {
		r.evicted.traces++
		ready = append(ready, r.oldest())
	}
	return ready
}
