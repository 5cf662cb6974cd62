package orphanprocessor

import (
	"container/heap"
	"context"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// The hold: the traces waiting for their decision, in the order they are due.

// heldTrace is one trace waiting for its decision: where its spans are in the batches that
// carried them. The correlator's view of each span (verdict.Span) is read when the trace is
// decided, not kept while it waits.
type heldTrace struct {
	id      verdict.TraceID
	first   time.Time
	due     time.Time  // when it is released: first + decision_wait, or root + decision_wait_after_root
	refs    []heldSpan // in order of arrival
	decided bool
	late    bool
	hasRoot bool
	last    bool // released at shutdown: decided with nothing left open
}

// dueEntry is a held trace in the due heap; stale when the trace was taken or its due moved.
type dueEntry struct {
	due time.Time
	h   *heldTrace
}

// dueHeap orders held traces by due time (container/heap).
type dueHeap []dueEntry

func (d dueHeap) Len() int           { return len(d) }
func (d dueHeap) Less(i, j int) bool { return d[i].due.Before(d[j].due) }
func (d dueHeap) Swap(i, j int)      { d[i], d[j] = d[j], d[i] }
func (d *dueHeap) Push(x any)        { *d = append(*d, x.(dueEntry)) }
func (d *dueHeap) Pop() any {
	old := *d
	e := old[len(old)-1]
	old[len(old)-1] = dueEntry{}
	*d = old[:len(old)-1]
	return e
}

// setDueLocked makes h due at t (no later than it was); wakeLocked then wakes the release loop
// once for the batch when a trace is due before the moment its timer is armed for.
func (p *orphanProcessor) setDueLocked(h *heldTrace, t time.Time) {
	if !h.due.IsZero() && !t.Before(h.due) {
		return
	}
	h.due = t
	heap.Push(&p.dues, dueEntry{t, h})
	if p.wakeDue.IsZero() || t.Before(p.wakeDue) {
		p.wakeDue = t
	}
}

// wakeLocked wakes the release loop if a trace taken in since the last call is due before its
// timer fires.
func (p *orphanProcessor) wakeLocked() {
	if p.wakeDue.IsZero() {
		return
	}
	if p.armed.IsZero() || p.wakeDue.Before(p.armed) {
		select {
		case p.wake <- struct{}{}:
		default: // a wake is pending already
		}
	}
	p.wakeDue = time.Time{}
}

// topDueLocked returns the held trace due first, dropping stale entries; nil when none.
func (p *orphanProcessor) topDueLocked() *dueEntry {
	for len(p.dues) > 0 {
		e := &p.dues[0]
		if !e.h.decided && e.due.Equal(e.h.due) {
			return e
		}
		heap.Pop(&p.dues)
	}
	return nil
}

// heldSpan is one held span. Held spans stay where they arrived, in the batches the processor
// was given (and owns: MutatesData), until their trace is released.
type heldSpan struct {
	sp   ptrace.Span
	src  *heldScope
	hold bool // an abandoned root kept after its trace's release (heldRoot)
}

// heldScope is a ScopeSpans of a batch that held spans came in, with its ResourceSpans.
type heldScope struct {
	b  *heldBatch
	rs ptrace.ResourceSpans
	ss ptrace.ScopeSpans
}

// due takes the traces whose wait is over at now.
func (p *orphanProcessor) due(now time.Time) []*heldTrace {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ready []*heldTrace
	for {
		e := p.topDueLocked()
		if e == nil || e.due.After(now) {
			break
		}
		h := e.h
		heap.Pop(&p.dues)
		ready = append(ready, p.takeLocked(h))
	}
	for len(p.queue) > 0 && p.queue[0].decided {
		p.queue[0] = nil
		p.queue = p.queue[1:]
	}
	return ready
}

// takeLocked removes a trace from the held state. p.mu must be held.
func (p *orphanProcessor) takeLocked(h *heldTrace) *heldTrace {
	h.decided = true
	delete(p.held, h.id)
	p.spansHeld -= len(h.refs)
	p.tel.ProcessorOrphanTracesHeld.Add(context.Background(), -1, p.tel.ID)
	p.tel.ProcessorOrphanSpansHeld.Add(context.Background(), int64(-len(h.refs)), p.tel.ID)
	return h
}

// oldestLocked returns the held trace that arrived first.
func (p *orphanProcessor) oldestLocked() *heldTrace {
	for len(p.queue) > 0 {
		h := p.queue[0]
		if !h.decided {
			return h
		}
		p.queue = p.queue[1:]
	}
	return nil
}
