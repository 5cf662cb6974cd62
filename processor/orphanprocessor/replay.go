package orphanprocessor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
)

// Replay runs the orphan processor over recorded spans on the recording's own clock, so that
// a trace file gets the verdicts a collector would have given the same spans as they arrived
// (`orphanwatch analyze`). It is the processor of the collector, with its configuration and
// time model (docs/verdicts.md "When verdicts are decided": the wait after a root, deferred
// spans and carried verdicts, held abandoned roots, runs kept open until run_timeout and
// joined across traces by an idempotency key); only its clock differs. Time is what the caller
// says: ConsumeTraces hands a batch over at the moment given (a collector receives a span
// about when it ends), and on the way there the replay stops at every moment the release
// loop's timer would fire on a collector's wall clock — a held trace or abandoned root due, a
// sweep while verdicts are owed or runs are open — and does there what the loop does. Drain
// then lets time run on until nothing is held or owed (past max_request_duration and
// run_timeout where needed).
//
// A Replay runs no goroutine of its own (but ConsumeTogether's while it runs) and is not safe
// for concurrent use; next is called from the caller's goroutine (and ConsumeTogether's). `keys` is ignored (no key sharing): a replay sees every span in one process.
type Replay struct {
	p   *orphanProcessor
	clk *replayClock
}

// NewReplay creates a replay of the orphan processor with cfg (validated here), passing the
// spans it releases, with their verdicts, to next. set is as for the factory: its telemetry
// settings receive the processor's own metrics.
func NewReplay(set processor.Settings, cfg *Config, next consumer.Traces) (*Replay, error) {
	if cfg == nil {
		return nil, errors.New("orphan replay: nil configuration")
	}
	c := *cfg
	c.Keys = nil // keys are not shared: a replay sees every span in one process
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p, err := newOrphanProcessor(set, &c, next)
	if err != nil {
		return nil, err
	}
	clk := &replayClock{}
	p.clock = clk
	return &Replay{p: p, clk: clk}, nil
}

// Now is the replay's clock: the latest moment given to ConsumeTraces or AdvanceTo, or reached
// by Drain; the zero time before any.
func (r *Replay) Now() time.Time { return r.clk.now }

// ConsumeTraces advances the clock to at (AdvanceTo) and hands td to the processor, as a
// collector receiving td at that moment. The processor owns td from then on (it writes the
// verdicts onto its spans and passes them on). A moment before the clock is taken as the
// clock: time does not run back.
func (r *Replay) ConsumeTraces(ctx context.Context, at time.Time, td ptrace.Traces) error {
	err := r.AdvanceTo(ctx, at)
	return errors.Join(err, r.p.ConsumeTraces(ctx, td))
}

// ConsumeTogether advances the clock to at (AdvanceTo) and hands every batch of tds to the
// processor at that moment, each from a goroutine of its own, as a collector's receivers hand
// over batches that arrive together; it returns when all were taken in. The traces' shards are
// locked in turn (no lock is held across a batch), so the batches are taken in side by side.
// The error joins the batches' errors.
func (r *Replay) ConsumeTogether(ctx context.Context, at time.Time, tds []ptrace.Traces) error {
	err := r.AdvanceTo(ctx, at)
	errs := make([]error, len(tds))
	var wg sync.WaitGroup
	for i, td := range tds {
		wg.Go(func() { errs[i] = r.p.ConsumeTraces(ctx, td) })
	}
	wg.Wait()
	return errors.Join(append(errs, err)...)
}

// maxIdleSteps bounds the steps at one moment that release nothing new; more is a bug, not
// a long replay.
const maxIdleSteps = 16

// AdvanceTo moves the clock to at, stopping at every moment on the way at which the release
// loop's timer would fire, in order, and doing there what the loop does: pass on the held
// traces and abandoned roots that are due and sweep what the correlator keeps (verdicts whose
// root did not come within max_request_duration, runs past their run_timeout). The error is
// the next consumer's refusals, joined (the spans are counted as dropped, as the loop does).
func (r *Replay) AdvanceTo(ctx context.Context, at time.Time) error {
	err := r.advance(ctx, at, true)
	if at.After(r.clk.now) {
		r.clk.now = at
	}
	return err
}

// advance fires the release loop's timer at each moment it would fire, up to at when bounded,
// else until nothing is held or owed.
func (r *Replay) advance(ctx context.Context, at time.Time, bounded bool) error {
	var errs []error
	idle := 0
	for {
		d, ok := r.p.untilNextDue()
		if !ok {
			break
		}
		next := r.clk.now.Add(d)
		if bounded && next.After(at) {
			break
		}
		if d == 0 {
			if idle++; idle > maxIdleSteps {
				return errors.Join(append(errs, fmt.Errorf("orphan replay: the processor makes no progress at %s", next))...)
			}
		} else {
			idle = 0
		}
		r.clk.now = next
		errs = append(errs, r.fire(ctx, next))
	}
	return errors.Join(errs...)
}

// fire is one firing of the release loop's timer at now (orphanProcessor.loop).
func (r *Replay) fire(ctx context.Context, now time.Time) error {
	p := r.p
	err := p.dropped(ctx, p.release(ctx, p.due(now)))
	err = errors.Join(err, p.dropped(ctx, p.releaseRoots(ctx, p.dueRoots(now, -1))))
	p.sweep(ctx, now)
	return err
}

// Drain lets the clock run on, as AdvanceTo does, until the processor holds no span and owes no
// verdict: every held trace and root released, every deferred verdict carried (at the latest
// max_request_duration after it was deferred), every open run closed (at the latest run_timeout
// after its last attempt ended). It returns the moment reached. Time runs on at most the
// longest wait (decision_wait, chain_wait, abandoned_root_hold) + max_request_duration +
// run_timeout + clock_skew_tolerance (and two sweeps): what is still kept then (runs left open
// for good by run_timeout 0) is closed by Shutdown, carried as at a collector's shutdown. The processor stays usable: spans consumed after Drain
// meet what it remembers (root records, trace memos).
func (r *Replay) Drain(ctx context.Context) (time.Time, error) {
	c := r.p.cfg
	limit := r.clk.now.Add(c.LongestWait() + c.MaxRequestDuration + c.RunTimeout + c.ClockSkewTolerance + 2*sweepInterval)
	err := r.advance(ctx, limit, true)
	return r.clk.now, err
}

// Shutdown shuts the processor down as a collector does: whatever is still held is decided and
// passed on, and whatever is still owed is carried (after Drain, nothing).
func (r *Replay) Shutdown(ctx context.Context) error { return r.p.Shutdown(ctx) }

// replayClock is a Replay's clock: it reads the moment the replay has reached. Its timers never
// fire: the release loop does not run (it is not started), the Replay steps it.
type replayClock struct{ now time.Time }

func (c *replayClock) Now() time.Time { return c.now }

func (c *replayClock) NewTimer(time.Duration) clockTimer { return idleTimer{} }

// idleTimer is a timer that never fires.
type idleTimer struct{}

func (idleTimer) C() <-chan time.Time { return nil }
func (idleTimer) Reset(time.Duration) {}
func (idleTimer) Stop()               {}
