package orphanprocessor

import "time"

// clock is where the processor takes its time from: the release loop's timer and every "now".
// Production uses the wall clock; tests drive their own (as tail_sampling injects its ticker
// and servicegraph its clock), so no test waits for real time to pass.
type clock interface {
	Now() time.Time
	NewTimer(d time.Duration) clockTimer
}

// clockTimer is the part of *time.Timer the loop uses.
type clockTimer interface {
	C() <-chan time.Time
	// Reset re-arms the timer to fire d from now, discarding a pending expiry (Go 1.23 timers).
	Reset(d time.Duration)
	Stop()
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) NewTimer(d time.Duration) clockTimer { return wallTimer{time.NewTimer(d)} }

type wallTimer struct{ t *time.Timer }

func (w wallTimer) C() <-chan time.Time   { return w.t.C }
func (w wallTimer) Reset(d time.Duration) { w.t.Reset(d) }
func (w wallTimer) Stop()                 { w.t.Stop() }
