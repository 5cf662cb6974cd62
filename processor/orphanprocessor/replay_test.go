package orphanprocessor

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// replay feeds td's spans to a Replay in the order they end, each group of spans that end
// together as one batch handed over at that moment, drains it and shuts it down. It returns
// the output and the moment the replay reached.
func replay(t *testing.T, cfg *Config, td ptrace.Traces) ([]ptrace.Traces, time.Time) {
	t.Helper()
	r, sink := newTestReplay(t, cfg)
	for _, e := range tdwalk.ByEnd(td) {
		require.NoError(t, r.ConsumeTraces(context.Background(), e.End.AsTime(), e.Traces()))
		require.True(t, r.Now().Equal(e.End.AsTime()), "the clock is where the batch was handed over")
	}
	reached := drainReplay(t, r)
	return sink.AllTraces(), reached
}

// TestReplayScenarios: every scenario replayed on its own clock, with the default waits (30 s,
// 2 s after the root, run_timeout 5 min), gives the verdicts of expected.json once the
// carried ones are read as the spans' own, and the exporter's series of one decision.
func TestReplayScenarios(t *testing.T) {
	for _, sc := range loadScenarios(t) {
		t.Run(sc.dir, func(t *testing.T) {
			cfg := scenarioConfig()
			cfg.DecisionWait = 30 * time.Second
			in := ptrace.NewTraces()
			sc.traces.CopyTo(in)
			out, _ := replay(t, cfg, in)
			checkScenario(t, sc, effective(t, out))
			one := ptrace.NewTraces()
			sc.traces.CopyTo(one)
			assert.Equal(t, recordedSeries(t, runBatches(t, []ptrace.Traces{one})), recordedSeries(t, out))
		})
	}
}

// keyedResends is a client re-sending one Idempotency-Key in three traces, 10 s apart: the
// first two tries fail retryably (504, 503), the last gets the given status.
func keyedResends(last int64) ptrace.Traces {
	td := ptrace.NewTraces()
	for i, status := range []int64{504, 503, last} {
		keyedResend(td, byte(i+1), float64(i)*10, status)
	}
	return td
}

// keyedResend adds trace tr of keyedResends to td: the shop's root from start to start+2 s and
// its POST to payments with Idempotency-Key order-42, answered status.
func keyedResend(td ptrace.Traces, tr byte, start float64, status int64) {
	addSpan(td, "shop", tr, 1, 0, ptrace.SpanKindServer, start, start+2)
	call := addSpan(td, "shop", tr, 2, 1, ptrace.SpanKindClient, start+0.1, start+1.9)
	call.SetName("POST")
	call.Attributes().PutStr("http.request.method", "POST")
	call.Attributes().PutStr("server.address", "payments")
	call.Attributes().PutStr("http.request.header.idempotency-key", "order-42")
	call.Attributes().PutInt("http.response.status_code", status)
}

// TestReplayJoinsKeyedRunAcrossTraces: the re-sends are one run, as on a collector
// (TestKeyJoinsRunAcrossTraces): attempts 1, 2, 3, none with an outcome when it leaves; the
// run's outcome, success, is carried once for the third when the drain passes its run_timeout
// (a keyed run goes on after a success). Deciding each batch at once (decision_wait 0) closes
// each trace's run by itself.
func TestReplayJoinsKeyedRunAcrossTraces(t *testing.T) {
	attempts := func(out []ptrace.Traces) []pcommon.Map {
		as := postAttributes(out)
		sort.Slice(as, func(i, j int) bool {
			a, _ := as[i].Get("http.response.status_code")
			b, _ := as[j].Get("http.response.status_code")
			return a.Int() > b.Int() // 504, 503, 200
		})
		return as
	}
	out, _ := replay(t, testConfig(30*time.Second), keyedResends(200))
	requireOpenAttempts(t, attempts(out))
	evs := carriedEvents(out)
	require.Len(t, evs, 1)
	ev := evs[pcommon.SpanID{2, 1}.String()]
	require.Len(t, ev, 1, "the outcome carried once, for the third attempt")
	assert.Equal(t, pcommon.TraceID{3, 1}.String(), str(ev[0], verdict.AttrEventTraceID))
	assert.Equal(t, "success", str(ev[0], verdict.AttrRunOutcome))
	assert.Equal(t, "3", str(ev[0], verdict.AttrRunAttempts))

	out, _ = replay(t, testConfig(0), keyedResends(200))
	outcomes := 0
	for _, a := range attempts(out) {
		if _, ok := a.Get(verdict.AttrRunOutcome); ok {
			outcomes++
		}
	}
	assert.Equal(t, 3, outcomes, "decision_wait 0: three runs of one attempt")
}

// TestReplayDrainsPastRunTimeout: a keyed run whose last attempt failed retryably stays open
// for a re-send; Drain lets the replay's clock run past its run_timeout (plus decision_wait and
// the clock-skew tolerance: runOverAt), and the run's outcome leaves on a carrier span, once.
func TestReplayDrainsPastRunTimeout(t *testing.T) {
	cfg := testConfig(30 * time.Second)
	out, reached := replay(t, cfg, keyedResends(503))
	lastEnd := at(21.9).AsTime()
	over := lastEnd.Add(cfg.RunTimeout + cfg.DecisionWait + cfg.ClockSkewTolerance)
	assert.True(t, reached.After(over), "reached %s", reached)
	assert.True(t, reached.Before(over.Add(2*sweepInterval)), "reached %s: no later than the sweep after run_timeout", reached)
	ev := carriedEvents(out)[pcommon.SpanID{2, 1}.String()]
	require.Len(t, ev, 1, "the run's outcome carried once, for its last attempt")
	assert.Equal(t, "retryable_failure", str(ev[0], verdict.AttrRunOutcome))
	assert.Equal(t, "3", str(ev[0], verdict.AttrRunAttempts))
	carriers := 0
	for _, td := range out {
		for _, f := range tdwalk.Flatten(td) {
			if v, ok := f.Span.Attributes().Get(verdict.AttrCarrier); ok && v.Bool() {
				carriers++
				assert.True(t, f.Span.StartTimestamp().AsTime().Equal(reached), "made when the sweep closed the run, the last moment of the replay")
			}
		}
	}
	assert.Equal(t, 1, carriers)
}

// TestReplayHoldsAsACollector: a trace's spans leave decision_wait_after_root after its root
// arrived on the replay's clock, not before; an abandoned root stays until decision_wait
// after its arrival.
func TestReplayHoldsAsACollector(t *testing.T) {
	r, sink := newTestReplay(t, testConfig(30*time.Second))
	ctx := context.Background()
	td := ptrace.NewTraces()
	httpStatus(addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3), 499)
	addSpan(td, "gateway", 1, 2, 1, ptrace.SpanKindClient, 0.1, 2.9)
	require.NoError(t, r.ConsumeTraces(ctx, at(3).AsTime(), td))
	require.NoError(t, r.AdvanceTo(ctx, at(4.9).AsTime()))
	assert.Zero(t, sink.SpanCount(), "held for the wait after the root")
	require.NoError(t, r.AdvanceTo(ctx, at(5).AsTime()))
	assert.Equal(t, 1, sink.SpanCount(), "the child leaves 2 s after the root arrived; the cancelled root stays")
	require.NoError(t, r.AdvanceTo(ctx, at(32.9).AsTime()))
	assert.Equal(t, 1, sink.SpanCount())
	require.NoError(t, r.AdvanceTo(ctx, at(33).AsTime()))
	require.Equal(t, 2, sink.SpanCount(), "the root leaves decision_wait after its arrival")
	reason, _ := spanAttrs(sink.AllTraces())[pcommon.SpanID{1, 1}].Get(verdict.AttrRootEndReason)
	assert.Equal(t, "cancelled", reason.Str())
	reached := drainReplay(t, r)
	assert.True(t, reached.Equal(at(33).AsTime()), "nothing owed: the clock stays at %s", reached)
}

// TestNewReplayValidates: a bad configuration is refused with the field's name.
func TestNewReplayValidates(t *testing.T) {
	cfg := testConfig(30 * time.Second)
	cfg.Limits.MaxTraces = 0
	_, err := NewReplay(nopSettings(), cfg, new(consumertest.TracesSink))
	require.ErrorContains(t, err, "limits.max_traces")
}

// TestReplayDrainEndsWithoutRunTimeout: with run_timeout 0 (no timeout) a keyed run whose last
// attempt failed retryably stays open for good; Drain still ends, and Shutdown carries the run's
// outcome, as at a collector's shutdown.
func TestReplayDrainEndsWithoutRunTimeout(t *testing.T) {
	cfg := testConfig(30 * time.Second)
	cfg.RunTimeout = 0
	out, reached := replay(t, cfg, keyedResends(503))
	lastEnd := at(21.9).AsTime()
	assert.False(t, reached.After(lastEnd.Add(cfg.DecisionWait+cfg.MaxRequestDuration+cfg.ClockSkewTolerance+2*sweepInterval)), "reached %s", reached)
	ev := carriedEvents(out)[pcommon.SpanID{2, 1}.String()]
	require.Len(t, ev, 1, "the run's outcome carried once, at shutdown")
	assert.Equal(t, "retryable_failure", str(ev[0], verdict.AttrRunOutcome))
	assert.Equal(t, "3", str(ev[0], verdict.AttrRunAttempts))
}
