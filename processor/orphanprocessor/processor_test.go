package orphanprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// TestHoldsForTheWaitAfterRootThenReleasesWithVerdicts: a trace whose root came is released
// decision_wait_after_root after the root's arrival, not decision_wait after its first span.
func TestHoldsForTheWaitAfterRootThenReleasesWithVerdicts(t *testing.T) {
	cfg, p, clk, sink := newWaitsProcessor(t, time.Minute, 5*time.Second) // due() is driven by hand
	now := clk.Now()

	td := ptrace.NewTraces()
	httpStatus(addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3), 499)
	canceled(addSpan(td, "gateway", 1, 2, 1, ptrace.SpanKindClient, 0.01, 3))
	addSpan(td, "researcher", 1, 3, 2, ptrace.SpanKindServer, 0.02, 6.55)
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	assert.Equal(t, 0, sink.SpanCount(), "spans must wait for the decision")

	require.NoError(t, p.release(context.Background(), p.due(now.Add(5*time.Second-1))))
	assert.Equal(t, 0, sink.SpanCount())
	require.NoError(t, p.release(context.Background(), p.due(now.Add(5*time.Second))))
	require.Equal(t, 2, sink.SpanCount(), "the cancelled root is held for its orphaned depth")
	require.NoError(t, p.releaseRoots(context.Background(), p.dueRoots(now.Add(time.Minute), -1)))
	require.Equal(t, 3, sink.SpanCount())

	attrs := spanAttrs(sink.AllTraces())
	r := attrs[pcommon.SpanID{1, 1}]
	reason, _ := r.Get(verdict.AttrRootEndReason)
	assert.Equal(t, "cancelled", reason.Str())
	srv := attrs[pcommon.SpanID{3, 1}]
	lv, _ := srv.Get(verdict.AttrLiveness)
	assert.Equal(t, "orphaned", lv.Str())
	ag, _ := srv.Get(verdict.AttrAfterGone)
	assert.InDelta(t, 3.55, ag.Double(), 1e-9)
	caller, _ := srv.Get(verdict.AttrCallerService)
	assert.Equal(t, "gateway", caller.Str())
	_, hasOutcome := attrs[pcommon.SpanID{2, 1}].Get(verdict.AttrRunOutcome)
	assert.False(t, hasOutcome, "the run is open: a try started before its loop (the root) ended may still come")
	// The run is over decision_wait after its loop ended (runOverAt): its outcome is carried.
	p.sweep(context.Background(), at(3).AsTime().Add(cfg.DecisionWait+cfg.ClockSkewTolerance+time.Second))
	ev := carriedEvents(sink.AllTraces())[pcommon.SpanID{2, 1}.String()]
	require.Len(t, ev, 1)
	assert.Equal(t, "cancelled", str(ev[0], verdict.AttrRunOutcome), "the client call noticed the cancellation")
	require.NoError(t, p.Shutdown(context.Background()))
}

func TestShutdownReleasesEverySpan(t *testing.T) {
	cfg := testConfig(time.Hour)
	p, _, sink := newSinkProcessor(t, cfg)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	td := ptrace.NewTraces()
	for tr := byte(1); tr <= 20; tr++ {
		addSpan(td, "a", tr, 1, 0, ptrace.SpanKindServer, 0, 1)
		addSpan(td, "b", tr, 2, 1, ptrace.SpanKindClient, 0.1, 0.5)
	}
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	assert.Equal(t, 0, sink.SpanCount())
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, 40, sink.SpanCount())
}

func TestMaxTracesDecidesTheOldestEarly(t *testing.T) {
	cfg := testConfig(time.Hour)
	cfg.Limits.MaxTraces = 3
	p, _, sink := newSinkProcessor(t, cfg)
	for tr := byte(1); tr <= 5; tr++ {
		td := ptrace.NewTraces()
		addSpan(td, "a", tr, 1, 0, ptrace.SpanKindServer, 0, 1)
		require.NoError(t, p.ConsumeTraces(context.Background(), td))
	}
	// Traces 1 and 2 were evicted: decided and passed on, not dropped.
	require.Equal(t, 2, sink.SpanCount())
	ids := map[pcommon.TraceID]bool{}
	for _, td := range sink.AllTraces() {
		ids[td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID()] = true
	}
	assert.True(t, ids[pcommon.TraceID{1, 1}])
	assert.True(t, ids[pcommon.TraceID{2, 1}])
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, 5, sink.SpanCount())
}

func TestMaxSpansPerTraceDecidesEarly(t *testing.T) {
	cfg := testConfig(time.Hour)
	cfg.Limits.MaxSpansPerTrace = 10
	p, _, sink := newSinkProcessor(t, cfg)
	td := ptrace.NewTraces()
	addSpan(td, "a", 1, 1, 0, ptrace.SpanKindServer, 0, 10)
	for i := byte(2); i < 26; i++ {
		addSpan(td, "a", 1, i, 1, ptrace.SpanKindInternal, 0.1, 0.2)
	}
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	assert.Equal(t, 20, sink.SpanCount(), "two full holdings of 10 spans go on at once")
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, 25, sink.SpanCount())
	// Spans of the later holdings are still judged against the root record.
	for _, a := range spanAttrs(sink.AllTraces()) {
		lv, ok := a.Get(verdict.AttrLiveness)
		require.True(t, ok)
		assert.Equal(t, "live", lv.Str())
	}
}

func TestZeroWaitDecidesEachBatch(t *testing.T) {
	cfg := testConfig(0)
	p, _, sink := newSinkProcessor(t, cfg)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	td := ptrace.NewTraces()
	addSpan(td, "a", 1, 1, 0, ptrace.SpanKindServer, 0, 1)
	addSpan(td, "a", 1, 2, 1, ptrace.SpanKindInternal, 0.5, 2)
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.Equal(t, 2, sink.SpanCount())
	lv, _ := spanAttrs(sink.AllTraces())[pcommon.SpanID{2, 1}].Get(verdict.AttrLiveness)
	assert.Equal(t, "orphaned", lv.Str())
	require.NoError(t, p.Shutdown(context.Background()))
}

func TestZeroTraceIDPassesThroughUnchanged(t *testing.T) {
	cfg := testConfig(time.Hour)
	p, _, sink := newSinkProcessor(t, cfg)
	td := ptrace.NewTraces()
	sp := addSpan(td, "a", 0, 1, 0, ptrace.SpanKindServer, 0, 1)
	sp.SetTraceID(pcommon.TraceID{})
	sp.Attributes().PutStr("keep", "me")
	want := ptrace.NewTraces()
	td.CopyTo(want)
	// Passed on at once, unchanged but for liveness unknown (seen, not judged).
	want.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().PutStr(verdict.AttrLiveness, "unknown")
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.Equal(t, 1, sink.SpanCount())
	assert.Equal(t, want, sink.AllTraces()[0])
	require.NoError(t, p.Shutdown(context.Background()))
}

// TestLoopReleasesAfterTheWait drives the release loop on the test clock: a trace whose root
// came is released exactly decision_wait_after_root after the root arrived, not a nanosecond
// earlier; one whose root has not come, decision_wait after its first span, deferred.
func TestLoopReleasesAfterTheWait(t *testing.T) {
	const wait, afterRoot = 30 * time.Second, 5 * time.Second
	_, p, clk, sink := newWaitsProcessor(t, wait, afterRoot)
	startTestProcessor(t, p, clk)
	clk.Advance(time.Hour) // idle: nothing to fire
	arrived := clk.Now()
	td := ptrace.NewTraces()
	addSpan(td, "a", 1, 1, 0, ptrace.SpanKindServer, 0, 1)
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.Equal(t, arrived.Add(afterRoot), clk.waitArmed(t))

	clk.Advance(afterRoot - time.Nanosecond)
	assert.Zero(t, sink.SpanCount())
	clk.Advance(time.Nanosecond)
	clk.waitIdle(t, p) // released, nothing left to wait for
	assert.Equal(t, 1, sink.SpanCount())

	// A child whose root has not come: decision_wait, then it leaves deferred.
	arrived = clk.Now()
	td = ptrace.NewTraces()
	addSpan(td, "a", 2, 2, 1, ptrace.SpanKindClient, 0, 1)
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.Equal(t, arrived.Add(wait), clk.waitArmed(t))
	clk.Advance(wait - time.Nanosecond)
	assert.Equal(t, 1, sink.SpanCount())
	clk.Advance(time.Nanosecond)
	require.Eventually(t, func() bool { return sink.SpanCount() == 2 }, 5*time.Second, time.Millisecond)
	def, ok := spanAttrs(sink.AllTraces())[pcommon.SpanID{2, 1}].Get(verdict.AttrDeferred)
	require.True(t, ok)
	assert.True(t, def.Bool())
	require.NoError(t, p.Shutdown(context.Background()))
}

// TestArrivalWakesTheLoop: a trace that arrives while nothing is held wakes the loop, which
// arms its timer for the trace's due time; the next traces (something is held) do not wake it,
// and after each release the timer is armed for the next trace due. Before the wake channel
// was created the loop never heard of the arrival.
func TestArrivalWakesTheLoop(t *testing.T) {
	const wait = 10 * time.Second
	_, p, clk, sink := newWaitsProcessor(t, time.Minute, wait)
	startTestProcessor(t, p, clk)
	clk.Advance(3 * time.Second)
	first := clk.Now()
	td := ptrace.NewTraces()
	addSpan(td, "a", 1, 1, 0, ptrace.SpanKindServer, 0, 1)
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.Equal(t, first.Add(wait), clk.waitArmed(t), "the arrival must wake the loop")

	clk.Advance(4 * time.Second)
	second := clk.Now()
	td = ptrace.NewTraces()
	addSpan(td, "a", 2, 1, 0, ptrace.SpanKindServer, 0, 1)
	require.NoError(t, p.ConsumeTraces(context.Background(), td))

	clk.Advance(6 * time.Second) // the first trace is due
	require.Equal(t, second.Add(wait), clk.waitArmed(t), "armed for the second trace")
	assert.Equal(t, 1, sink.SpanCount())
	clk.Advance(4 * time.Second)
	clk.waitIdle(t, p)
	assert.Equal(t, 2, sink.SpanCount())
	select {
	case ev := <-clk.events:
		t.Fatalf("unexpected timer event %v: the second arrival woke the loop", ev)
	default:
	}
}
