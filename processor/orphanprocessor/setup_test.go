package orphanprocessor

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/spanbuild"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// The processor tests' shared setup: span builders, a processor on a test clock, and the
// settings every test creates it with.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns t0 + s seconds as a pdata timestamp.
func at(s float64) pcommon.Timestamp { return spanbuild.At(t0, s) }

// addSpan appends a span to td in its own resource, named after its service.
func addSpan(td ptrace.Traces, service string, trace byte, id, parent byte, kind ptrace.SpanKind, start, end float64) ptrace.Span {
	return spanbuild.Add(td, t0, service, service+"-op", trace, id, parent, kind, start, end)
}

// spanAttrs maps every span ID of td to the span's attributes.
func spanAttrs(td []ptrace.Traces) map[pcommon.SpanID]pcommon.Map {
	out := map[pcommon.SpanID]pcommon.Map{}
	for _, t := range td {
		for _, f := range tdwalk.Flatten(t) {
			out[f.Span.SpanID()] = f.Span.Attributes()
		}
	}
	return out
}

func nopSettings() processor.Settings { return processortest.NewNopSettings(metadata.Type) }

// testConfig is the default configuration with the given decision_wait.
func testConfig(wait time.Duration) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.DecisionWait = wait
	return cfg
}

// newTestProcessor creates a processor with nop settings, on a test clock, passing on to next
// (a new TracesSink when nil). It is shut down at the end of the test if the test did not.
func newTestProcessor(t *testing.T, cfg *Config, next consumer.Traces) (*orphanProcessor, *fakeClock) {
	t.Helper()
	return newTestProcessorWith(t, nopSettings(), cfg, next)
}

func newTestProcessorWith(t *testing.T, set processor.Settings, cfg *Config, next consumer.Traces) (*orphanProcessor, *fakeClock) {
	t.Helper()
	if next == nil {
		next = new(consumertest.TracesSink)
	}
	p, err := newOrphanProcessor(set, cfg, next)
	require.NoError(t, err)
	clk := newFakeClock(t0)
	p.clock = clk
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p, clk
}

// sinkOf returns the sink a test processor passes on to.
func sinkOf(p *orphanProcessor) *consumertest.TracesSink { return p.next.(*consumertest.TracesSink) }

// newSinkProcessor is newTestProcessor passing to a TracesSink, returned too.
func newSinkProcessor(t *testing.T, cfg *Config) (*orphanProcessor, *fakeClock, *consumertest.TracesSink) {
	t.Helper()
	p, clk := newTestProcessor(t, cfg, nil)
	return p, clk, sinkOf(p)
}

// newWaitsProcessor is newSinkProcessor with decision_wait wait and decision_wait_after_root
// afterRoot (the rest as created), its settings returned too.
func newWaitsProcessor(t *testing.T, wait, afterRoot time.Duration) (*Config, *orphanProcessor, *fakeClock, *consumertest.TracesSink) {
	t.Helper()
	cfg := testConfig(wait)
	cfg.DecisionWaitAfterRoot = afterRoot
	p, clk, sink := newSinkProcessor(t, cfg)
	return cfg, p, clk, sink
}

// newTestReplay creates a Replay with nop settings passing on to a new TracesSink, returned too.
func newTestReplay(t *testing.T, cfg *Config) (*Replay, *consumertest.TracesSink) {
	t.Helper()
	sink := new(consumertest.TracesSink)
	r, err := NewReplay(nopSettings(), cfg, sink)
	require.NoError(t, err)
	return r, sink
}

// drainReplay drains r and shuts it down; it returns the moment the replay reached.
func drainReplay(t *testing.T, r *Replay) time.Time {
	t.Helper()
	ctx := context.Background()
	reached, err := r.Drain(ctx)
	require.NoError(t, err)
	require.NoError(t, r.Shutdown(ctx))
	return reached
}

// startTestProcessor starts p and waits until its loop is running (it stops its timer first).
func startTestProcessor(t *testing.T, p *orphanProcessor, clk *fakeClock) {
	t.Helper()
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	clk.waitStopped(t)
}

func newBufferLogger(w *bytes.Buffer) *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(&lockedWriter{w: w}), zapcore.DebugLevel))
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// fakeClock is a clock the test moves by hand. Every arming and stopping of one of its timers
// is reported on events, so a test can wait for the release loop to have acted instead of
// sleeping.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	events chan timerEvent
}

// timerEvent is a timer armed for deadline, or stopped (deadline zero).
type timerEvent struct{ deadline time.Time }

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, events: make(chan timerEvent, 4096)}
}

// report records a timer event; tests that look at events read them as they come, the others
// never fill the buffer enough to matter (events beyond it are dropped, never blocking the loop).
func (c *fakeClock) report(ev timerEvent) {
	select {
	case c.events <- ev:
	default:
	}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) clockTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clk: c, c: make(chan time.Time, 1), armed: true, deadline: c.now.Add(d)}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock by d and fires the timers whose deadline has come.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		if t.armed && !t.deadline.After(c.now) {
			t.fireLocked()
		}
	}
}

// waitArmed waits for the next timer event and requires it to arm a timer; it returns the
// deadline.
func (c *fakeClock) waitArmed(t *testing.T) time.Time {
	t.Helper()
	ev := c.next(t)
	require.False(t, ev.deadline.IsZero(), "the loop stopped its timer instead of arming it")
	return ev.deadline
}

// waitStopped waits for the next timer event and requires it to stop a timer.
func (c *fakeClock) waitStopped(t *testing.T) {
	t.Helper()
	ev := c.next(t)
	require.True(t, ev.deadline.IsZero(), "the loop armed its timer for %v instead of stopping it", ev.deadline)
}

func (c *fakeClock) next(t *testing.T) timerEvent {
	t.Helper()
	select {
	case ev := <-c.events:
		return ev
	case <-time.After(10 * time.Second): // a failure, not a wait: the loop acts at once
		t.Fatal("the release loop did not touch its timer")
		return timerEvent{}
	}
}

type fakeTimer struct {
	clk      *fakeClock
	c        chan time.Time
	armed    bool
	deadline time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Reset(d time.Duration) {
	c := t.clk
	c.mu.Lock()
	select { // Go 1.23 timers: a pending expiry is discarded
	case <-t.c:
	default:
	}
	t.armed, t.deadline = true, c.now.Add(d)
	if d <= 0 {
		t.fireLocked()
	}
	c.report(timerEvent{deadline: t.deadline})
	c.mu.Unlock()
}

func (t *fakeTimer) Stop() {
	c := t.clk
	c.mu.Lock()
	t.armed = false
	select {
	case <-t.c:
	default:
	}
	c.report(timerEvent{})
	c.mu.Unlock()
}

func (t *fakeTimer) fireLocked() {
	t.armed = false
	select {
	case t.c <- t.clk.now:
	default:
	}
}

// waitIdle waits for the next timer event and requires the loop to have nothing to wait for
// but the observation of a request's verdict latency (latency.go): its timer stopped, or armed
// for that observation, minutes away.
func (c *fakeClock) waitIdle(t *testing.T, p *orphanProcessor) {
	t.Helper()
	ev := c.next(t)
	if ev.deadline.IsZero() {
		return
	}
	at, ok := p.lat.NextExpiry()
	require.True(t, ok, "the loop armed its timer for %v with nothing held, owed or tracked", ev.deadline)
	require.Equal(t, at, ev.deadline, "the loop armed its timer for something else than a latency observation")
	require.Greater(t, ev.deadline.Sub(c.Now()), time.Minute, "a latency observation is minutes away")
}

// httpStatus records code as sp's HTTP response status code and returns sp.
func httpStatus(sp ptrace.Span, code int64) ptrace.Span {
	sp.Attributes().PutInt("http.response.status_code", code)
	return sp
}

// canceled records sp as a call its caller cancelled (error.type "context canceled") and
// returns sp.
func canceled(sp ptrace.Span) ptrace.Span {
	sp.Attributes().PutStr("error.type", "context canceled")
	return sp
}

// openKeyedRun adds trace 1 to td: the shop's root (0-2 s) and its attempt with Idempotency-Key
// order-7 that failed retryably (503), a run that stays open until run_timeout.
func openKeyedRun(td ptrace.Traces) {
	addSpan(td, "shop", 1, 1, 0, ptrace.SpanKindServer, 0, 2)
	call := addSpan(td, "shop", 1, 2, 1, ptrace.SpanKindClient, 0.1, 1.9)
	call.Attributes().PutStr("http.request.header.idempotency-key", "order-7")
	call.Attributes().PutInt("http.response.status_code", 503)
}
