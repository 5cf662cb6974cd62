package orphanprocessor

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// TestRestartStartsClean: a processor made by the factory after another was shut down holds
// nothing and remembers no root.
func TestRestartStartsClean(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.DecisionWait = time.Hour
	for round := range 2 {
		sink := new(consumertest.TracesSink)
		p, err := f.CreateTraces(context.Background(), nopSettings(), cfg, sink)
		require.NoError(t, err)
		require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
		td := ptrace.NewTraces()
		if round == 0 {
			addSpan(td, "gw", 1, 1, 0, ptrace.SpanKindServer, 0, 1)
		}
		addSpan(td, "gw", 1, 2, 1, ptrace.SpanKindClient, 0.5, 2)
		require.NoError(t, p.ConsumeTraces(context.Background(), td))
		assert.Zero(t, sink.SpanCount())
		require.NoError(t, p.Shutdown(context.Background()))
		attrs := spanAttrs(sink.AllTraces())
		lv, _ := attrs[pcommon.SpanID{2, 1}].Get(verdict.AttrLiveness)
		if round == 0 {
			assert.Equal(t, "orphaned", lv.Str())
		} else {
			// The new instance never saw the root: unknown, not judged against old state.
			assert.Equal(t, "unknown", lv.Str())
		}
	}
}

// TestLateSpanJudgedAgainstRetainedRoot: a span arriving after its trace was decided is held
// for the wait like any other and judged against the kept root record.
func TestLateSpanJudgedAgainstRetainedRoot(t *testing.T) {
	cfg := testConfig(time.Minute)
	p, clk, sink := newSinkProcessor(t, cfg) // due() is driven by hand
	now := clk.Now()
	td := ptrace.NewTraces()
	addSpan(td, "gw", 1, 1, 0, ptrace.SpanKindServer, 0, 2) // completed: not held after its release
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.NoError(t, p.release(context.Background(), p.due(now.Add(time.Minute))))
	require.Equal(t, 1, sink.SpanCount())

	clk.Advance(2 * time.Minute)
	now = clk.Now()
	late := ptrace.NewTraces()
	addSpan(late, "worker", 1, 2, 1, ptrace.SpanKindClient, 1, 5)
	require.NoError(t, p.ConsumeTraces(context.Background(), late))
	assert.Equal(t, 1, sink.SpanCount(), "a late span waits like any other")
	require.NoError(t, p.release(context.Background(), p.due(now.Add(time.Minute))))
	require.Equal(t, 2, sink.SpanCount())
	a := spanAttrs(sink.AllTraces())[pcommon.SpanID{2, 1}]
	lv, _ := a.Get(verdict.AttrLiveness)
	ag, _ := a.Get(verdict.AttrAfterGone)
	assert.Equal(t, "orphaned", lv.Str())
	assert.InDelta(t, 3.0, ag.Double(), 1e-9)
	require.NoError(t, p.Shutdown(context.Background()))
}

// TestAbandonedRootHeldForItsDepth: a cancelled root stays after its trace's release, until
// decision_wait after it arrived, and an orphan that arrives meanwhile (three service hops down,
// its chain complete) deepens the orphaned depth written on it.
func TestAbandonedRootHeldForItsDepth(t *testing.T) {
	_, p, clk, sink := newWaitsProcessor(t, time.Minute, 5*time.Second) // due() is driven by hand
	ctx := context.Background()
	start := clk.Now()
	td := ptrace.NewTraces()
	httpStatus(addSpan(td, "gw", 1, 1, 0, ptrace.SpanKindServer, 0, 2), 499)
	canceled(addSpan(td, "gw", 1, 2, 1, ptrace.SpanKindClient, 0.1, 2))
	require.NoError(t, p.ConsumeTraces(ctx, td))
	clk.Advance(5 * time.Second)
	require.NoError(t, p.release(ctx, p.due(clk.Now())))
	require.Equal(t, 1, sink.SpanCount(), "the client span leaves, the cancelled root stays")

	clk.Advance(20 * time.Second)
	late := ptrace.NewTraces()
	addSpan(late, "agent", 1, 3, 2, ptrace.SpanKindServer, 0.2, 9)
	addSpan(late, "agent", 1, 4, 3, ptrace.SpanKindClient, 0.3, 8.5)
	addSpan(late, "tool", 1, 5, 4, ptrace.SpanKindServer, 0.4, 8)
	require.NoError(t, p.ConsumeTraces(ctx, late))
	require.NoError(t, p.release(ctx, p.due(clk.Now().Add(5*time.Second))))
	require.Equal(t, 4, sink.SpanCount())

	require.Empty(t, p.dueRoots(start.Add(time.Minute-time.Nanosecond), -1), "held until decision_wait after its arrival")
	require.NoError(t, p.releaseRoots(ctx, p.dueRoots(start.Add(time.Minute), -1)))
	require.Equal(t, 5, sink.SpanCount())
	a := spanAttrs(sink.AllTraces())[pcommon.SpanID{1, 1}]
	depth, _ := a.Get(verdict.AttrOrphanedDepth)
	reach, _ := a.Get(verdict.AttrCancelReachHops)
	assert.Equal(t, int64(2), depth.Int(), "agent and tool were still working after the gone time")
	assert.Equal(t, int64(0), reach.Int())
	require.NoError(t, p.Shutdown(ctx))
}

// TestConcurrentConsumeWhileReleasing runs ConsumeTraces from several goroutines while the
// loop releases traces (for -race: the test clock moves on all the while), and checks that
// every span comes out exactly once.
func TestConcurrentConsumeWhileReleasing(t *testing.T) {
	cfg := testConfig(5 * time.Millisecond)
	p, clk, sink := newSinkProcessor(t, cfg)
	startTestProcessor(t, p, clk)
	stop, ticking := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ticking)
		for {
			select {
			case <-stop:
				return
			default:
				clk.Advance(time.Millisecond)
				runtime.Gosched()
			}
		}
	}()
	var wg sync.WaitGroup
	const workers, traces = 4, 200
	for w := range workers {
		wg.Go(func() {
			for i := range traces {
				td := ptrace.NewTraces()
				tid := pcommon.TraceID{byte(w), byte(i), byte(i >> 8), 3}
				for s := byte(1); s <= 3; s++ {
					sp := addSpan(td, "svc", 0, s, 0, ptrace.SpanKindClient, 0, 1)
					sp.SetTraceID(tid)
					if s > 1 {
						sp.SetParentSpanID(pcommon.SpanID{1, 1})
					}
				}
				assert.NoError(t, p.ConsumeTraces(context.Background(), td))
			}
		})
	}
	wg.Wait()
	close(stop)
	<-ticking
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, workers*traces*3, sink.SpanCount())
}
