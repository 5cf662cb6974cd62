// Package heldroots keeps abandoned roots after their trace's release (the orphan processor's
// spans, the observing exporter's verdicts) until abandoned_root_hold after they arrived: by
// trace, so that a later release of the trace raises their reach and depth, and in the order
// they came, which is the order they are due (all wait the same).
package heldroots

import (
	"slices"
	"sync"
	"time"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Held is the roots held, each an *R. The zero value holds none and is ready to use; safe for
// concurrent use.
type Held[R any] struct {
	mu      sync.Mutex
	byTrace map[verdict.TraceID][]*R
	queue   []entry[R] // in order of arrival, which is due order
}

type entry[R any] struct {
	trace verdict.TraceID
	due   time.Time
	r     *R
}

// Add holds r, a root of trace t, until due, and returns how many roots are held.
func (h *Held[R]) Add(t verdict.TraceID, due time.Time, r *R) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byTrace == nil {
		h.byTrace = map[verdict.TraceID][]*R{}
	}
	h.byTrace[t] = append(h.byTrace[t], r)
	h.queue = append(h.queue, entry[R]{trace: t, due: due, r: r})
	return len(h.queue)
}

// Update calls f on each root of trace t held, with h locked (f must not call h).
func (h *Held[R]) Update(t verdict.TraceID, f func(*R)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.byTrace[t] {
		f(r)
	}
}

// Take takes, in order of arrival, the roots due at now (every one with a zero now) when n < 0;
// the n oldest, due or not, when n >= 0.
func (h *Held[R]) Take(now time.Time, n int) []*R {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*R
	for len(h.queue) > 0 {
		e := h.queue[0]
		if n == 0 || (n < 0 && !now.IsZero() && e.due.After(now)) {
			break
		}
		n--
		h.queue[0] = entry[R]{}
		h.queue = h.queue[1:]
		out = append(out, e.r)
		rs := slices.DeleteFunc(h.byTrace[e.trace], func(x *R) bool { return x == e.r })
		if len(rs) == 0 {
			delete(h.byTrace, e.trace)
		} else {
			h.byTrace[e.trace] = rs
		}
	}
	return out
}

// Len returns how many roots are held.
func (h *Held[R]) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queue)
}

// NextDue is when the first root held is due; zero when none is held.
func (h *Held[R]) NextDue() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.queue) == 0 {
		return time.Time{}
	}
	return h.queue[0].due
}
