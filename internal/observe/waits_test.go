package observe_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/observe"
	"github.com/orphanwatch/orphanwatch/internal/rulesconfig"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/spanbuild"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Each job decision_wait had is a setting of its own (issue 28 item 4): these tests show
// abandoned_root_hold and chain_wait each govern their job in observe mode, decision_wait held
// at 30 s.

var t0 = time.Unix(1_700_000_000, 0)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// counted is a Sink that notes, by span, when each verdict counted after its span left was
// counted (on the observer's clock) and with what verdict.
type counted struct {
	mu    sync.Mutex
	now   *time.Time
	at    map[verdict.SpanID]time.Time
	later map[verdict.SpanID]verdict.Verdict
}

func (c *counted) Resource(pcommon.Resource) any                             { return nil }
func (c *counted) Keep(any, ptrace.Span) any                                 { return nil }
func (c *counted) Decided(any, ptrace.Span, *verdict.Span, *verdict.Verdict) {}
func (c *counted) Later(cv *verdict.Carried) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.at[cv.Span.SpanID]; !ok {
		c.at[cv.Span.SpanID] = *c.now
		c.later[cv.Span.SpanID] = cv.Verdict
	}
}

func (c *counted) when(id byte) (time.Time, verdict.Verdict, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sid := verdict.SpanID{id, 1}
	at, ok := c.at[sid]
	return at, c.later[sid], ok
}

// addSpan appends a span of trace 1 in its own resource.
func addSpan(td ptrace.Traces, service string, id, parent byte, kind ptrace.SpanKind, start, end float64) ptrace.Span {
	return spanbuild.Add(td, t0, service, service+"-op", 1, id, parent, kind, start, end)
}

// observer is an Observer with cfg on a clock the test moves (step).
type observer struct {
	o    *observe.Observer
	now  time.Time
	sink *counted
}

func newObserver(t *testing.T, cfg rulesconfig.Config) *observer {
	t.Helper()
	ob := &observer{now: at(0)}
	ob.sink = &counted{now: &ob.now, at: map[verdict.SpanID]time.Time{}, later: map[verdict.SpanID]verdict.Verdict{}}
	require.NoError(t, cfg.Validate(rulesconfig.DefaultLimits()))
	o, err := observe.New(cfg, rulesconfig.DefaultLimits(), ob.sink, observe.Settings{Now: func() time.Time { return ob.now }})
	require.NoError(t, err)
	ob.o = o
	t.Cleanup(o.Shutdown)
	return ob
}

// step moves the clock to s seconds, ticking every TickInterval on the way.
func (ob *observer) step(s float64) {
	for end := at(s); ob.now.Before(end); {
		ob.now = ob.now.Add(observe.TickInterval)
		if ob.now.After(end) {
			ob.now = end
		}
		ob.o.Tick()
	}
}

// consume hands td over at s seconds.
func (ob *observer) consume(s float64, td ptrace.Traces) {
	ob.step(s)
	ob.o.Consume(td)
}

// abandoned is a cancelled root (0-3 s) with a child ended before it.
func abandoned() ptrace.Traces {
	td := ptrace.NewTraces()
	root := addSpan(td, "gateway", 1, 0, ptrace.SpanKindServer, 0, 3)
	root.Attributes().PutInt("http.response.status_code", 499)
	addSpan(td, "gateway", 2, 1, ptrace.SpanKindClient, 0.1, 2.9)
	return td
}

// one is a trace of one span, under parent.
func one(service string, id, parent byte, start, end float64) ptrace.Traces {
	td := ptrace.NewTraces()
	addSpan(td, service, id, parent, ptrace.SpanKindServer, start, end)
	return td
}

// afterAbandoned is an observer with cfg that took the abandoned trace at 3 s, then a late
// researcher span (id under parent, from start) ending and handed over at late s, and stepped
// to end s.
func afterAbandoned(t *testing.T, cfg rulesconfig.Config, id, parent byte, start, late, end float64) *observer {
	t.Helper()
	ob := newObserver(t, cfg)
	ob.consume(3, abandoned())
	ob.consume(late, one("researcher", id, parent, start, late))
	ob.step(end)
	return ob
}

// counted requires span id to have been counted; it returns when, with what verdict.
func (ob *observer) counted(t *testing.T, id byte) (time.Time, verdict.Verdict) {
	t.Helper()
	when, v, ok := ob.sink.when(id)
	require.True(t, ok, "span %d counted", id)
	return when, v
}

func durOf(d time.Duration) *time.Duration { return &d }

// TestAbandonedRootHoldGovernsTheCount: the cancelled root's verdict is counted
// abandoned_root_hold after it arrived (decision_wait when unset; at its trace's decision with
// 0), and an orphan arriving at 8 s (decided at 10 s) deepens it only while it is held.
func TestAbandonedRootHoldGovernsTheCount(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hold    *time.Duration
		counted float64 // the root arrived at 3 s, its trace was decided at 5 s
		depth   int
	}{
		{"unset: decision_wait", nil, 33, 1},
		{"8s", durOf(8 * time.Second), 11, 1},
		{"4s", durOf(4 * time.Second), 7, 0},
		{"0: not held", durOf(0), 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rulesconfig.Default()
			cfg.AbandonedRootHold = tc.hold
			when, v := afterAbandoned(t, cfg, 3, 2, 0.2, 8, 40).counted(t, 1) // the root
			assert.True(t, v.HasReach, "an abandoned root")
			// Counted at the first tick at or after its due moment.
			assert.False(t, when.Before(at(tc.counted)), "counted at %s, due %.1f s", when.Sub(t0), tc.counted)
			assert.True(t, when.Before(at(tc.counted).Add(observe.TickInterval+time.Millisecond)), "counted at %s, due %.1f s", when.Sub(t0), tc.counted)
			assert.Equal(t, tc.depth, v.OrphanedDepthHops)
		})
	}
}

// TestChainWaitGovernsTheIncompleteChain: a span whose chain to its root is incomplete (its
// parent never comes) is decided provisionally at 8 s and counted chain_wait after that, at
// the next sweep (decision_wait when unset).
func TestChainWaitGovernsTheIncompleteChain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		wait     *time.Duration
		from, to float64 // counted within
	}{
		{"unset: decision_wait", nil, 38, 39.2},
		{"4s", durOf(4 * time.Second), 12, 13.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rulesconfig.Default()
			cfg.ChainWait = tc.wait
			when, v := afterAbandoned(t, cfg, 4, 5, 0.5, 6, 45).counted(t, 4)
			assert.Equal(t, verdict.LivenessOrphaned, v.Liveness)
			assert.True(t, when.After(at(tc.from)) && when.Before(at(tc.to)), "counted at %s, want within %.1f-%.1f s", when.Sub(t0), tc.from, tc.to)
		})
	}
}
