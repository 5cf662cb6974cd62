package keyshare

import (
	"sync"
	"time"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Gate holds back, for up to Config.Wait, the traces whose decision is due but that carry a key
// binding nowhere yet (no trace seen here and no other member's record binds it; for a trace
// that links to other traces, none of those binds it): the record may be on its way from the
// member that holds the request's root. T is the component's trace about to be decided (the
// processor's held trace, internal/observe's waiting records).
//
// The component calls Hold with the traces it is about to decide; those it returns are decided
// now, the others are passed to release later, when their keys bind or their wait is over (in
// one batch per wake-up). Close releases every trace still waiting.
type Gate[T comparable] struct {
	s       *Sharer
	id      func(T) verdict.TraceID
	release func([]T)
	now     func() time.Time

	mu      sync.Mutex
	waiting []waiter[T] // in order of their deadline (the wait is the same for every trace)
	passing map[T]struct{}
	// releasing counts the traces taken off waiting and not yet handed over by release: owed
	// (Owed) while they are decided.
	releasing int
	closed    bool

	kick chan struct{} // buffered 1: a trace began to wait with none waiting before
	stop chan struct{}
	done chan struct{}
}

type waiter[T any] struct {
	t        T
	keys     []uint64
	linked   []verdict.TraceID
	deadline time.Time
}

// NewGate returns a Gate releasing held traces through release, and starts its loop.
func NewGate[T comparable](s *Sharer, id func(T) verdict.TraceID, release func([]T)) *Gate[T] {
	g := &Gate[T]{
		s: s, id: id, release: release, now: time.Now,
		passing: map[T]struct{}{},
		kick:    make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	s.waitingN = g.Waiting
	go g.loop()
	return g
}

// Hold returns the traces of ready that are decided now, in order; the others wait.
func (g *Gate[T]) Hold(ready []T) []T {
	now := g.now()
	out := ready[:0:0]
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range ready {
		if _, ok := g.passing[t]; ok {
			delete(g.passing, t)
			out = append(out, t)
			continue
		}
		id := g.id(t)
		keys, linked := g.s.keysOf(id)
		if len(keys) == 0 {
			out = append(out, t)
			continue
		}
		if g.closed || g.s.cfg.Wait <= 0 || len(g.waiting) >= g.s.cfg.MaxWaiting || g.s.bound(keys, linked, false) {
			g.s.bound(keys, linked, true)
			g.s.forget(id)
			out = append(out, t)
			continue
		}
		if len(g.waiting) == 0 {
			select {
			case g.kick <- struct{}{}:
			default:
			}
		}
		g.waiting = append(g.waiting, waiter[T]{t: t, keys: keys, linked: linked, deadline: now.Add(g.s.cfg.Wait)})
	}
	return out
}

// Waiting is the number of traces waiting.
func (g *Gate[T]) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiting)
}

// Owed is the number of traces the gate still owes its release function: those waiting and
// those taken off the wait whose release has not returned yet.
func (g *Gate[T]) Owed() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiting) + g.releasing
}

// releaseTaken hands the traces check took over to release; until it returns they are owed.
func (g *Gate[T]) releaseTaken(out []T) {
	if len(out) == 0 {
		return
	}
	g.release(out)
	g.mu.Lock()
	g.releasing -= len(out)
	g.mu.Unlock()
}

// check takes the waiting traces whose keys bind now or whose wait is over (all when flush),
// counts their look-ups, and marks them to pass Hold; they stay owed until releaseTaken has
// handed them over.
func (g *Gate[T]) check(flush bool) []T {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []T
	kept := g.waiting[:0]
	for _, w := range g.waiting {
		if flush || !now.Before(w.deadline) || g.s.bound(w.keys, w.linked, false) {
			g.s.bound(w.keys, w.linked, true)
			g.s.forget(g.id(w.t))
			g.passing[w.t] = struct{}{}
			out = append(out, w.t)
			continue
		}
		kept = append(kept, w)
	}
	clear(g.waiting[len(kept):])
	g.waiting = kept
	g.releasing += len(out)
	return out
}

// next is the time until the first deadline, or 0 when nothing waits.
func (g *Gate[T]) next() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.waiting) == 0 {
		return 0
	}
	return max(g.waiting[0].deadline.Sub(g.now()), time.Millisecond)
}

func (g *Gate[T]) loop() {
	defer close(g.done)
	// Wakes on arriving records and at the first deadline; at most every 10 ms on records, so
	// a busy topic does not make it scan the waiting traces for every fetch.
	const idle = time.Second
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-g.s.updated:
			time.Sleep(10 * time.Millisecond)
		case <-g.kick:
		case <-t.C:
		}
		g.releaseTaken(g.check(false))
		d := g.next()
		if d == 0 {
			d = idle
		}
		t.Reset(d)
	}
}

// Close stops the loop and releases every waiting trace; Hold passes everything afterwards.
func (g *Gate[T]) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	g.mu.Unlock()
	close(g.stop)
	<-g.done
	g.releaseTaken(g.check(true))
}
