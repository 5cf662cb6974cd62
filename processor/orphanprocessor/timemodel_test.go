package orphanprocessor

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// postAttributes is the attributes of every span named POST in out (the keyed resends'
// attempts), in order.
func postAttributes(out []ptrace.Traces) []pcommon.Map {
	var as []pcommon.Map
	for _, td := range out {
		for _, f := range tdwalk.Flatten(td) {
			if f.Span.Name() == "POST" {
				as = append(as, f.Span.Attributes())
			}
		}
	}
	return as
}

// requireOpenAttempts checks that as are attempts 1, 2 and 3, in order, each leaving with its
// run open (no run outcome on it).
func requireOpenAttempts(t *testing.T, as []pcommon.Map) {
	t.Helper()
	require.Len(t, as, 3)
	for i, a := range as {
		n, _ := a.Get(verdict.AttrAttempt)
		assert.Equal(t, int64(i+1), n.Int(), "attempt %d", i+1)
		_, hasOutcome := a.Get(verdict.AttrRunOutcome)
		assert.False(t, hasOutcome, "the run is open when attempt %d leaves", i+1)
	}
}

// carriedEvents returns the orphanwatch.verdict events of the output, by the span ID they are
// for, with the span that carried each.
func carriedEvents(out []ptrace.Traces) map[string][]pcommon.Map {
	m := map[string][]pcommon.Map{}
	for _, td := range out {
		for _, f := range tdwalk.Flatten(td) {
			evs := f.Span.Events()
			for i := 0; i < evs.Len(); i++ {
				if evs.At(i).Name() == verdict.EventVerdict {
					id, _ := evs.At(i).Attributes().Get(verdict.AttrEventSpanID)
					m[id.Str()] = append(m[id.Str()], evs.At(i).Attributes())
				}
			}
		}
	}
	return m
}

func str(m pcommon.Map, k string) string {
	v, _ := m.Get(k)
	return v.AsString()
}

// TestKeyJoinsRunAcrossTraces: a client re-sends one Idempotency-Key in two new traces after
// its first try failed (DESIGN.md "run": attempts in other traces join a run through the same
// idempotency key). One run of three attempts, numbered 1, 2, 3, each leaving at once with no
// outcome: a keyed run goes on after a success (a client that never got the answer re-sends
// it), so it is over only when run_timeout passed with no re-send (DESIGN.md "Run outcomes");
// then its outcome, success, is carried once for the third, the first that succeeded.
func TestKeyJoinsRunAcrossTraces(t *testing.T) {
	cfg, p, clk, sink := newWaitsProcessor(t, time.Minute, time.Second)
	ctx := context.Background()
	clk.Advance(t0.Sub(clk.Now()))
	for i, status := range []int64{504, 503, 200} {
		tr := byte(i + 1)
		start := float64(i) * 10
		td := ptrace.NewTraces()
		keyedResend(td, tr, start, status)
		clk.Advance(at(start + 3).AsTime().Sub(clk.Now()))
		require.NoError(t, p.ConsumeTraces(ctx, td))
		clk.Advance(2 * time.Second)
		require.NoError(t, p.release(ctx, p.due(clk.Now())))
		require.Equal(t, 2*(i+1), sink.SpanCount(), "trace %d leaves after the wait after its root", tr)
	}
	requireOpenAttempts(t, postAttributes(sink.AllTraces()))
	_, _, open := p.corr.Kept()
	assert.Equal(t, 1, open, "the keyed run waits for a re-send")
	p.sweep(ctx, clk.Now().Add(cfg.RunTimeout))
	assert.Empty(t, carriedEvents(sink.AllTraces()), "not before run_timeout and decision_wait passed")
	p.sweep(ctx, clk.Now().Add(cfg.RunTimeout+cfg.DecisionWait+cfg.ClockSkewTolerance+time.Second))
	ev := carriedEvents(sink.AllTraces())[pcommon.SpanID{2, 1}.String()]
	require.Len(t, ev, 1, "the outcome carried once, for the third attempt")
	assert.Equal(t, pcommon.TraceID{3, 1}.String(), str(ev[0], verdict.AttrEventTraceID))
	assert.Equal(t, "success", str(ev[0], verdict.AttrRunOutcome))
	assert.Equal(t, "3", str(ev[0], verdict.AttrRunAttempts))
	_, _, open = p.corr.Kept()
	assert.Zero(t, open, "the run is closed")
	require.NoError(t, p.Shutdown(ctx))
	assert.Len(t, carriedEvents(sink.AllTraces()), 1, "nothing more was owed")
}

// TestRunClosedByItsTimeoutIsCarried: a keyed run whose last attempt failed retryably stays open
// (a re-send may come in another trace); when run_timeout has passed with nothing more, the
// sweep closes it and its outcome leaves on a carrier span of its trace, once.
func TestRunClosedByItsTimeoutIsCarried(t *testing.T) {
	cfg := testConfig(time.Minute)
	cfg.DecisionWaitAfterRoot = time.Second
	cfg.RunTimeout = time.Minute
	p, clk, sink := newSinkProcessor(t, cfg)
	ctx := context.Background()
	clk.Advance(at(3).AsTime().Sub(clk.Now()))
	td := ptrace.NewTraces()
	openKeyedRun(td)
	require.NoError(t, p.ConsumeTraces(ctx, td))
	clk.Advance(2 * time.Second)
	require.NoError(t, p.release(ctx, p.due(clk.Now())))
	require.Equal(t, 2, sink.SpanCount())
	_, hasOutcome := spanAttrs(sink.AllTraces())[pcommon.SpanID{2, 1}].Get(verdict.AttrRunOutcome)
	assert.False(t, hasOutcome, "the run is open")

	p.sweep(ctx, clk.Now().Add(30*time.Second))
	assert.Equal(t, 2, sink.SpanCount(), "not yet: run_timeout has not passed")
	clk.Advance(2 * time.Minute)
	p.sweep(ctx, clk.Now())
	require.Equal(t, 3, sink.SpanCount(), "a carrier span")
	ev := carriedEvents(sink.AllTraces())[pcommon.SpanID{2, 1}.String()]
	require.Len(t, ev, 1)
	assert.Equal(t, "retryable_failure", str(ev[0], verdict.AttrRunOutcome))
	assert.Equal(t, "1", str(ev[0], verdict.AttrRunAttempts))
	assert.Equal(t, "error", str(ev[0], verdict.AttrRunResult))
	_, hasLiveness := ev[0].Get(verdict.AttrLiveness)
	assert.False(t, hasLiveness, "only the run's outcome: the attempt was counted when it left")
	carrier := sink.AllTraces()[len(sink.AllTraces())-1].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	assert.Equal(t, verdict.CarrierSpanName, carrier.Name())
	assert.Equal(t, pcommon.TraceID{1, 1}, carrier.TraceID())
	assert.Equal(t, pcommon.SpanID{2, 1}, carrier.ParentSpanID())
	p.sweep(ctx, clk.Now().Add(time.Hour))
	require.NoError(t, p.Shutdown(ctx))
	assert.Equal(t, 3, sink.SpanCount(), "carried once")
}

// TestRootThatNeverComes: spans whose root has not come leave after decision_wait, deferred;
// after max_request_duration they are judged without it (unknown, unknown_root), carried on a
// carrier span: never counted live, never lost.
func TestRootThatNeverComes(t *testing.T) {
	cfg := testConfig(30 * time.Second)
	cfg.MaxRequestDuration = 10 * time.Minute
	p, clk, sink := newSinkProcessor(t, cfg)
	ctx := context.Background()
	td := ptrace.NewTraces()
	addSpan(td, "agent", 1, 2, 1, ptrace.SpanKindServer, 0, 5)
	addSpan(td, "agent", 1, 3, 2, ptrace.SpanKindClient, 1, 2).Attributes().PutInt("http.response.status_code", 200)
	require.NoError(t, p.ConsumeTraces(ctx, td))
	clk.Advance(30 * time.Second)
	require.NoError(t, p.release(ctx, p.due(clk.Now())))
	require.Equal(t, 2, sink.SpanCount())
	for id, a := range spanAttrs(sink.AllTraces()) {
		d, _ := a.Get(verdict.AttrDeferred)
		assert.True(t, d.Bool(), "span %v deferred", id)
		_, hasLiveness := a.Get(verdict.AttrLiveness)
		assert.False(t, hasLiveness)
	}
	_, pending, _ := p.corr.Kept()
	assert.Equal(t, 2, pending)

	clk.Advance(9 * time.Minute)
	p.sweep(ctx, clk.Now())
	assert.Equal(t, 2, sink.SpanCount())
	clk.Advance(2 * time.Minute)
	p.sweep(ctx, clk.Now())
	require.Equal(t, 3, sink.SpanCount())
	ev := carriedEvents(sink.AllTraces())
	require.Len(t, ev, 2)
	call := ev[pcommon.SpanID{3, 1}.String()]
	require.Len(t, call, 1)
	assert.Equal(t, "unknown", str(call[0], verdict.AttrLiveness))
	assert.Equal(t, "unknown_root", str(call[0], verdict.AttrRunOutcome))
	assert.Equal(t, "agent", str(call[0], "service.name"))
	_, pending, _ = p.corr.Kept()
	assert.Zero(t, pending)
	require.NoError(t, p.Shutdown(ctx))
	assert.Equal(t, 3, sink.SpanCount())
}

// TestRootArrivesAfterItsSpansLeft: the spans that left deferred get their verdicts when the
// root arrives, as events on the root: counted once, with the run never split.
func TestRootArrivesAfterItsSpansLeft(t *testing.T) {
	_, p, clk, sink := newWaitsProcessor(t, 30*time.Second, 5*time.Second)
	ctx := context.Background()
	clk.Advance(at(40).AsTime().Sub(clk.Now()))
	// A request of 100 s: a loop's first two attempts fail, arrive, and leave deferred.
	early := ptrace.NewTraces()
	addSpan(early, "agent", 1, 2, 1, ptrace.SpanKindServer, 0.5, 99)
	for i, end := range []float64{10, 30} {
		a := addSpan(early, "agent", 1, byte(3+i), 2, ptrace.SpanKindClient, end-5, end)
		a.SetName("GET")
		a.Attributes().PutInt("http.response.status_code", 503)
	}
	// The loop span (2) ended at 99: it is in the early batch only to give the attempts a
	// complete chain below the root; the root comes last.
	require.NoError(t, p.ConsumeTraces(ctx, early))
	clk.Advance(30 * time.Second)
	require.NoError(t, p.release(ctx, p.due(clk.Now())))
	require.Equal(t, 3, sink.SpanCount())

	clk.Advance(at(101).AsTime().Sub(clk.Now()))
	late := ptrace.NewTraces()
	a := addSpan(late, "agent", 1, 5, 2, ptrace.SpanKindClient, 50, 60)
	a.SetName("GET")
	a.Attributes().PutInt("http.response.status_code", 200)
	httpStatus(addSpan(late, "gw", 1, 1, 0, ptrace.SpanKindServer, 0, 100), 200)
	require.NoError(t, p.ConsumeTraces(ctx, late))
	clk.Advance(5 * time.Second)
	require.NoError(t, p.release(ctx, p.due(clk.Now())))
	require.Equal(t, 5, sink.SpanCount())

	attrs := spanAttrs(sink.AllTraces())
	last := attrs[pcommon.SpanID{5, 1}]
	assert.Equal(t, "3", str(last, verdict.AttrAttempt), "the run goes on from the attempts that left")
	assert.Equal(t, "success", str(last, verdict.AttrRunOutcome))
	assert.Equal(t, "3", str(last, verdict.AttrRunAttempts))
	ev := carriedEvents(sink.AllTraces())
	require.Len(t, ev, 3, "the three spans that left before their root")
	for _, id := range []pcommon.SpanID{{2, 1}, {3, 1}, {4, 1}} {
		e := ev[id.String()]
		require.Len(t, e, 1, "span %v carried once", id)
		assert.Equal(t, "live", str(e[0], verdict.AttrLiveness))
	}
	assert.Equal(t, "2", str(ev[pcommon.SpanID{4, 1}.String()][0], verdict.AttrAttempt))
	_, hasOutcome := ev[pcommon.SpanID{4, 1}.String()][0].Get(verdict.AttrRunOutcome)
	assert.False(t, hasOutcome)
	assert.Equal(t, "GET", str(ev[pcommon.SpanID{3, 1}.String()][0], verdict.AttrEventSpanName))
	rootEvents := attrs[pcommon.SpanID{1, 1}]
	assert.Equal(t, "completed", str(rootEvents, verdict.AttrRootEndReason))
	_, pending, open := p.corr.Kept()
	assert.Zero(t, pending)
	assert.Zero(t, open)
	require.NoError(t, p.Shutdown(ctx))
}

// TestCarriedUsageCountedOnce: a span with token usage but no model (no model call of the
// processor's; the exporter counts it from gen_ai.usage) leaves deferred; carried whole on its
// root, its tokens count once, as in one decision; the run's outcome carried alone counts none.
func TestCarriedUsageCountedOnce(t *testing.T) {
	build := func() (ptrace.Traces, ptrace.Traces) {
		early, late := ptrace.NewTraces(), ptrace.NewTraces()
		agent := addSpan(early, "agent", 1, 2, 1, ptrace.SpanKindServer, 0.5, 9)
		agent.Attributes().PutStr("rpc.system", "grpc")
		call := addSpan(early, "agent", 1, 3, 2, ptrace.SpanKindClient, 1, 2)
		call.Attributes().PutInt("gen_ai.usage.input_tokens", 700)
		call.Attributes().PutInt("http.response.status_code", 200)
		addSpan(late, "gw", 1, 1, 0, ptrace.SpanKindServer, 0, 10)
		return early, late
	}
	e1, l1 := build()
	want := recordedSeries(t, runBatches(t, []ptrace.Traces{e1, l1}))
	require.Equal(t, 700.0, want["orphanwatch_spend_tokens_total,direction=input,liveness=live,model=unknown,service_name=agent"])

	e2, l2 := build()
	got := recordedSeries(t, runDecisions(t, []ptrace.Traces{e2, l2}))
	assert.Equal(t, want, got)
}

// TestRunOverWhenItsLoopEnded: a run whose loop (the attempts' parent) ended after its attempts
// is over decision_wait after the loop ended (runOverAt, step 6: a try started before the loop's
// span ended may still come); the same run with an idempotency key may go on in another trace,
// so it stays open until run_timeout (step 4), whatever its loop recorded (DESIGN.md "Run
// outcomes"). Both end cancelled: the loop recorded the cancellation, nothing went on after it.
func TestRunOverWhenItsLoopEnded(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		cfg := testConfig(10 * time.Second)
		cfg.DecisionWaitAfterRoot = time.Second
		cfg.RunTimeout = 5 * time.Minute
		p, clk, sink := newSinkProcessor(t, cfg)
		ctx := context.Background()
		clk.Advance(at(4).AsTime().Sub(clk.Now()))
		td := ptrace.NewTraces()
		httpStatus(addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3), 499)
		loop := canceled(addSpan(td, "researcher", 1, 2, 1, ptrace.SpanKindServer, 0.01, 3.01))
		loop.Status().SetCode(ptrace.StatusCodeError)
		for i, tm := range [2][2]float64{{0.1, 0.3}, {0.8, 1.0}} {
			call := addSpan(td, "researcher", 1, byte(3+i), 2, ptrace.SpanKindClient, tm[0], tm[1])
			if keyed {
				call.Attributes().PutStr("http.request.header.idempotency-key", "search-1")
			}
			call.Attributes().PutInt("http.response.status_code", 503)
		}
		require.NoError(t, p.ConsumeTraces(ctx, td))
		clk.Advance(2 * time.Second)
		require.NoError(t, p.release(ctx, p.due(clk.Now())))
		require.GreaterOrEqual(t, sink.SpanCount(), 3, "the attempts and the loop left (the abandoned root may be held)")
		_, _, open := p.corr.Kept()
		require.Equal(t, 1, open, "the run is open at first (keyed: %v)", keyed)

		clk.Advance(10 * time.Second) // past decision_wait after the loop's end
		p.sweep(ctx, clk.Now())
		_, _, open = p.corr.Kept()
		if keyed {
			assert.Equal(t, 1, open, "a keyed run: open until run_timeout")
			clk.Advance(5 * time.Minute)
			p.sweep(ctx, clk.Now())
			_, _, open = p.corr.Kept()
		}
		assert.Zero(t, open, "closed (keyed: %v)", keyed)
		ev := carriedEvents(sink.AllTraces())[pcommon.SpanID{4, 1}.String()]
		require.Len(t, ev, 1)
		assert.Equal(t, "cancelled", str(ev[0], verdict.AttrRunOutcome))
		assert.Equal(t, "2", str(ev[0], verdict.AttrRunAttempts))
		require.NoError(t, p.Shutdown(ctx))
	}
}

// Each job decision_wait had is a setting of its own (issue 28 item 4); these tests show each
// setting governs its job, with decision_wait held at 30 s.

func durOf(d time.Duration) *time.Duration { return &d }

// abandonedTrace is a cancelled root (0-3 s, arriving at 3) with a child ended before it.
func abandonedTrace() ptrace.Traces {
	td := ptrace.NewTraces()
	root := addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3)
	root.Attributes().PutInt("http.response.status_code", 499)
	addSpan(td, "gateway", 1, 2, 1, ptrace.SpanKindClient, 0.1, 2.9)
	return td
}

// lateOrphan is a server span under the root's child, ended (and arriving) at 8 s, after the
// root was cancelled: an orphan one hop below the root's call.
func lateOrphan() ptrace.Traces { return researcherSpan(3, 2, 0.2, 8) }

// TestAbandonedRootHoldGovernsTheHeldRoot: the cancelled root leaves abandoned_root_hold after
// it arrived, not decision_wait; so an orphan arriving after the hold no longer deepens it, one
// arriving within it does. 0 holds no root: it leaves with its trace.
func TestAbandonedRootHoldGovernsTheHeldRoot(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hold      *time.Duration
		leaves    float64 // when the root leaves (it arrived at 3)
		depthHops int64   // its orphaned depth then
	}{
		{"unset: decision_wait", nil, 33, 1},
		{"8s", durOf(8 * time.Second), 11, 1},
		{"4s", durOf(4 * time.Second), 7, 0},
		{"0: not held", durOf(0), 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(30 * time.Second)
			cfg.AbandonedRootHold = tc.hold
			r, sink := newTestReplay(t, cfg)
			ctx := context.Background()
			rootLeft := func() bool {
				_, ok := spanAttrs(sink.AllTraces())[pcommon.SpanID{1, 1}]
				return ok
			}
			require.NoError(t, r.ConsumeTraces(ctx, at(3).AsTime(), abandonedTrace()))
			orphanIn := false
			for _, step := range []struct {
				at   float64
				left bool
			}{{tc.leaves - 0.1, false}, {tc.leaves, true}} {
				if step.at >= 8 && !orphanIn {
					require.NoError(t, r.ConsumeTraces(ctx, at(8).AsTime(), lateOrphan()))
					orphanIn = true
				}
				require.NoError(t, r.AdvanceTo(ctx, at(step.at).AsTime()))
				assert.Equal(t, step.left, rootLeft(), "at %.1f s: the root leaves at %.1f s", step.at, tc.leaves)
			}
			require.True(t, rootLeft())
			attrs := spanAttrs(sink.AllTraces())[pcommon.SpanID{1, 1}]
			reason, _ := attrs.Get(verdict.AttrRootEndReason)
			assert.Equal(t, "cancelled", reason.Str())
			depth, _ := attrs.Get(verdict.AttrOrphanedDepth)
			assert.Equal(t, tc.depthHops, depth.Int(), "the orphan arriving at 8 s (decided at 10 s) counts only while the root is held")
			if !orphanIn {
				require.NoError(t, r.ConsumeTraces(ctx, at(8).AsTime(), lateOrphan()))
			}
			drainReplay(t, r)
		})
	}
}

// brokenChain is a span under a parent that never arrives (span 5), ended (and arriving) at
// 6 s, after the root was cancelled: orphaned under the root known, its chain to it
// incomplete.
func brokenChain() ptrace.Traces { return researcherSpan(4, 5, 0.5, 6) }

// researcherSpan is trace 1's server span id (under parent) of the researcher, alone in a batch.
func researcherSpan(id, parent byte, start, end float64) ptrace.Traces {
	td := ptrace.NewTraces()
	addSpan(td, "researcher", 1, id, parent, ptrace.SpanKindServer, start, end)
	return td
}

// TestChainWaitGovernsTheIncompleteChain: a span whose chain to its root is incomplete leaves
// deferred (provisional) and its verdict is carried chain_wait after that, at the next sweep,
// not decision_wait.
func TestChainWaitGovernsTheIncompleteChain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wait    *time.Duration
		carried float64 // the span left deferred at 8 s; its verdict is carried by then
	}{
		{"unset: decision_wait", nil, 39},
		{"4s", durOf(4 * time.Second), 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(30 * time.Second)
			cfg.ChainWait = tc.wait
			r, sink := newTestReplay(t, cfg)
			ctx := context.Background()
			require.NoError(t, r.ConsumeTraces(ctx, at(3).AsTime(), abandonedTrace()))
			require.NoError(t, r.ConsumeTraces(ctx, at(6).AsTime(), brokenChain()))
			require.NoError(t, r.AdvanceTo(ctx, at(8).AsTime()))
			attrs, ok := spanAttrs(sink.AllTraces())[pcommon.SpanID{4, 1}]
			require.True(t, ok, "left 2 s after it arrived, its root known")
			deferred, _ := attrs.Get(verdict.AttrDeferred)
			require.True(t, deferred.Bool(), "provisional: its chain is incomplete")
			key := pcommon.SpanID{4, 1}.String()
			require.NoError(t, r.AdvanceTo(ctx, at(tc.carried-1.5).AsTime()))
			assert.Empty(t, carriedEvents(sink.AllTraces())[key], "not carried before the chain wait passed")
			require.NoError(t, r.AdvanceTo(ctx, at(tc.carried).AsTime()))
			ev := carriedEvents(sink.AllTraces())[key]
			require.Len(t, ev, 1, "carried once the chain wait passed")
			assert.Equal(t, "orphaned", str(ev[0], verdict.AttrLiveness))
			drainReplay(t, r)
		})
	}
}

// TestDecideEachBatchGovernsTheMode: decide_each_batch decides each batch whole as it arrives
// (the spans leave in ConsumeTraces with their final verdicts, the cancelled root too),
// whatever decision_wait is; without it the same batch is held. decision_wait: 0 still means
// it, and says so once, as deprecated.
func TestDecideEachBatchGovernsTheMode(t *testing.T) {
	for _, tc := range []struct {
		name       string
		wait       time.Duration
		eachBatch  bool
		atOnce     bool
		deprecated bool
	}{
		{"decide_each_batch", 30 * time.Second, true, true, false},
		{"held", 30 * time.Second, false, false, false},
		{"decide_each_batch, decision_wait 0", 0, true, true, false},
		{"decision_wait 0, deprecated", 0, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			set := nopSettings()
			set.Logger = newBufferLogger(&logs)
			cfg := testConfig(tc.wait)
			cfg.DecideEachBatch = tc.eachBatch
			require.NoError(t, cfg.Validate())
			p, _ := newTestProcessorWith(t, set, cfg, nil)
			require.NoError(t, p.ConsumeTraces(context.Background(), abandonedTrace()))
			assert.Equal(t, btoi(tc.deprecated), bytes.Count(logs.Bytes(), []byte("decision_wait: 0 is deprecated")), logs.String())
			attrs := spanAttrs(sinkOf(p).AllTraces())
			if !tc.atOnce {
				assert.Empty(t, attrs, "held")
				return
			}
			require.Len(t, attrs, 2, "both spans left in ConsumeTraces")
			reason, _ := attrs[pcommon.SpanID{1, 1}].Get(verdict.AttrRootEndReason)
			assert.Equal(t, "cancelled", reason.Str(), "the abandoned root is not held")
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
