// Package latency measures how soon a request's verdicts are Counted, for the components that
// decide verdicts (the orphan processor, the observing orphanmetrics exporter and connector).
package latency

import (
	"sync"
	"time"

	"github.com/orphanwatch/orphanwatch/internal/fifo"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Tracker is a component's own measure of how soon a request's verdicts are Counted
// (DESIGN.md "When verdicts are decided": soon after a trace's root arrives): for each request,
// the time from its root span's arrival to the last verdict Counted for it, written on its
// spans or carried (a run closed later, an abandoned root held for its depth, a late span).
// It is observed (otelcol_processor_orphan_verdict_latency, otelcol_exporter_orphanmetrics_verdict_latency) once nothing more can come for the
// request: horizon after its last verdict, the longest the time model keeps anything of a
// request that has its root (run_timeout plus decision_wait and the clock-skew tolerance, as a
// run waits for a further attempt, and a sweep). Requests are tracked within max entries (limits.max_traces); when full, the one
// whose last verdict is oldest is observed early.
//
// Cost: one map entry per request for the horizon, and one queue mark per release or carried
// verdict of a request, not per span.
type Tracker struct {
	mu      sync.Mutex
	reqs    map[verdict.TraceID]reqTimes
	marks   fifo.Queue[latencyMark] // in time order; stale when the request moved on since
	horizon time.Duration
	max     int
	observe func(seconds float64)
}

// reqTimes is when a request's root arrived and when its last verdict was Counted (zero: none
// yet).
type reqTimes struct{ root, last time.Time }

// latencyMark is a moment something was recorded for a request.
type latencyMark struct {
	t  verdict.TraceID
	at time.Time
}

// New returns a Tracker that calls observe with each request's latency in seconds, tracking at
// most max requests for horizon after their last verdict.
func New(horizon time.Duration, max int, observe func(float64)) *Tracker {
	return &Tracker{reqs: map[verdict.TraceID]reqTimes{}, horizon: horizon, max: max, observe: observe}
}

// RootArrived records the arrival of trace t's root (the first one: a second root of the trace
// is the same request's for this measure).
func (l *Tracker) RootArrived(t verdict.TraceID, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.reqs[t]; ok {
		return
	}
	for len(l.reqs) >= l.max && l.expireOne(time.Time{}) {
	}
	l.reqs[t] = reqTimes{root: now}
	l.marks.Push(latencyMark{t, now})
}

// Counted records that verdicts of trace t were Counted now; nothing for a trace whose root
// has not arrived (its verdicts are deferred until it does).
func (l *Tracker) Counted(t verdict.TraceID, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.reqs[t]
	if !ok {
		return
	}
	r.last = now
	l.reqs[t] = r
	l.marks.Push(latencyMark{t, now})
}

// expire observes the requests whose last verdict is more than horizon before now; a zero now
// observes every request (shutdown).
func (l *Tracker) Expire(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.expireOne(now) {
	}
}

// Tracking reports whether a request waits to be observed.
func (l *Tracker) Tracking() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs) > 0
}

// NextExpiry is when the next request is observed (its last verdict plus the horizon, or a
// stale mark's: an early wake-up finds nothing and looks again); false when none is tracked.
// The release loop wakes for it when nothing else is held or owed.
func (l *Tracker) NextExpiry() (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m, ok := l.marks.Peek()
	if !ok || len(l.reqs) == 0 {
		return time.Time{}, false
	}
	return m.at.Add(l.horizon + time.Millisecond), true
}

// expireOne observes the request at the front of the marks when its horizon has passed before
// now (any, when now is zero); false when there is none. Stale marks are dropped on the way.
func (l *Tracker) expireOne(now time.Time) bool {
	for {
		m, ok := l.marks.Peek()
		if !ok {
			return false
		}
		r, live := l.reqs[m.t]
		latest := r.root
		if !r.last.IsZero() {
			latest = r.last
		}
		if !live || !m.at.Equal(latest) {
			l.marks.Pop() // the request was observed, or moved on since this mark
			continue
		}
		if !now.IsZero() && now.Sub(m.at) <= l.horizon {
			return false
		}
		l.marks.Pop()
		delete(l.reqs, m.t)
		if !r.last.IsZero() {
			l.observe(r.last.Sub(r.root).Seconds())
		}
		return true
	}
}
