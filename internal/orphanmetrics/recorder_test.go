package orphanmetrics

import (
	"bytes"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/recordertest"
)

const sec = time.Second

func newTestRecorder(t testing.TB, mutate func(*Settings)) *Recorder {
	t.Helper()
	cfg := NewDefaultSettings()
	if mutate != nil {
		mutate(cfg)
	}
	r, err := NewRecorder(cfg)
	require.NoError(t, err)
	return r
}

func TestRecordScenario(t *testing.T) {
	r := newTestRecorder(t, nil)
	r.Record(recordertest.Build(t, recordertest.FanOut()...))
	g := r.Gatherer()

	assert.Equal(t, map[string]float64{
		`{operation="call_tool",outcome="delivered_to_nobody",service_name="agent"}`: 1,
		`{operation="chat",outcome="delivered_to_nobody",service_name="agent"}`:      1,
		`{operation="chat",outcome="success",service_name="agent"}`:                  1,
		`{operation="q",outcome="unknown_root",service_name="tools"}`:                1,
	}, samples(t, g, "orphanwatch_runs_total"))

	assert.Equal(t, map[string]float64{
		`{liveness="live",operation="call_tool",service_name="agent"}`:               1,
		`{liveness="outlived_root",operation="call_tool",service_name="agent"}`:      1,
		`{liveness="started_after_gone",operation="call_tool",service_name="agent"}`: 1,
		`{liveness="live",operation="chat",service_name="agent"}`:                    1,
		`{liveness="outlived_root",operation="chat",service_name="agent"}`:           1,
		`{liveness="detached",operation="process job",service_name="tools"}`:         1,
		`{liveness="unknown",operation="q",service_name="tools"}`:                    1,
	}, samples(t, g, "orphanwatch_attempts_total"))

	assert.Equal(t, map[string]float64{
		`{end_reason="cancelled",service_name="agent"}`: 1,
	}, samples(t, g, "orphanwatch_roots_total"))

	// Orphaned spans count their seconds after the gone time (after_gone, at most their
	// duration) as orphaned, the rest as live. live: call_tool#1 2s + live chat 2s + call_tool#2
	// 3.5s-1.5s + orphaned chat 1.25s-0.25s = 7s; orphaned: 1.5s + 1s (started after gone: all
	// of it, after_gone 4 > 1) + 0.25s = 2.75s.
	assert.Equal(t, map[string]float64{
		`{liveness="live",service_name="agent"}`:     7,
		`{liveness="orphaned",service_name="agent"}`: 2.75,
		`{liveness="detached",service_name="tools"}`: 60,
		`{liveness="unknown",service_name="tools"}`:  1,
	}, samples(t, g, "orphanwatch_spend_seconds_total"))

	assert.Equal(t, map[string]float64{
		`{direction="input",liveness="orphaned",model="gpt-4o",service_name="agent"}`:  1000,
		`{direction="output",liveness="orphaned",model="gpt-4o",service_name="agent"}`: 250,
		`{direction="input",liveness="live",model="gpt-4o",service_name="agent"}`:      400,
		`{direction="output",liveness="live",model="gpt-4o",service_name="agent"}`:     100,
	}, samples(t, g, "orphanwatch_spend_tokens_total"))

	assert.Equal(t, map[string]float64{
		`{liveness="orphaned",model="gpt-4o",service_name="agent"}`: 0.0125,
		`{liveness="live",model="gpt-4o",service_name="agent"}`:     0.005,
	}, samples(t, g, "orphanwatch_spend_cost_usd_total"))

	assert.Equal(t, map[string]float64{
		`{liveness="orphaned",model="gpt-4o",service_name="agent"}`: 1,
		`{liveness="live",model="gpt-4o",service_name="agent"}`:     1,
	}, samples(t, g, "orphanwatch_model_calls_total"))

	assert.Equal(t, map[string]float64{
		`{callee_service="tools",caller_service="agent"}`: 1,
	}, samples(t, g, "orphanwatch_unpropagated_total"))

	outlive := samples(t, g, "orphanwatch_outlive_seconds")
	assert.Equal(t, 3.0, outlive[`_count{service_name="agent"}`])
	assert.Equal(t, 5.75, outlive[`_sum{service_name="agent"}`])
	assert.Equal(t, 1.0, outlive[`_bucket{le="0.25",service_name="agent"}`])
	assert.Equal(t, 1.0, outlive[`_bucket{le="1",service_name="agent"}`])
	assert.Equal(t, 2.0, outlive[`_bucket{le="2.5",service_name="agent"}`])
	assert.Equal(t, 3.0, outlive[`_bucket{le="5",service_name="agent"}`])
	assert.Equal(t, 1.0, outlive[`_count{service_name="tools"}`])
	assert.Equal(t, 0.0, outlive[`_bucket{le="1",service_name="tools"}`])
	assert.Equal(t, 1.0, outlive[`_bucket{le="2.5",service_name="tools"}`])
	assert.Len(t, outlive, 2*(2+12))

	for reason, v := range samples(t, g, "orphanwatch_spans_skipped_total") {
		assert.Zero(t, v, reason)
	}
	for label, v := range samples(t, g, "orphanwatch_label_overflow_total") {
		assert.Zero(t, v, label)
	}
}

func TestRecordExemplars(t *testing.T) {
	r := newTestRecorder(t, nil)
	r.Record(recordertest.Build(t, recordertest.FanOut()...))
	g := r.Gatherer()
	tid := traceA.String()
	require.Equal(t, "a1a2a3a4a5a6a7a8a9aaabacadaeafb0", tid)

	runs := exemplars(t, g, "orphanwatch_runs_total")
	assert.Equal(t, tid, runs[`{operation="call_tool",outcome="delivered_to_nobody",service_name="agent"}`]["trace_id"])
	assert.Len(t, runs[`{operation="call_tool",outcome="delivered_to_nobody",service_name="agent"}`]["span_id"], 16)
	assert.Nil(t, runs[`{operation="chat",outcome="success",service_name="agent"}`], "no exemplar on healthy series")
	assert.Nil(t, runs[`{operation="q",outcome="unknown_root",service_name="tools"}`])

	attempts := exemplars(t, g, "orphanwatch_attempts_total")
	assert.Equal(t, tid, attempts[`{liveness="outlived_root",operation="call_tool",service_name="agent"}`]["trace_id"])
	assert.Equal(t, tid, attempts[`{liveness="started_after_gone",operation="call_tool",service_name="agent"}`]["trace_id"])
	assert.Nil(t, attempts[`{liveness="live",operation="call_tool",service_name="agent"}`])
	assert.Nil(t, attempts[`{liveness="detached",operation="process job",service_name="tools"}`])

	for _, name := range []string{"orphanwatch_spend_seconds_total", "orphanwatch_spend_cost_usd_total", "orphanwatch_model_calls_total", "orphanwatch_spend_tokens_total"} {
		for series, ex := range exemplars(t, g, name) {
			if strings.Contains(series, `liveness="orphaned"`) {
				assert.Equal(t, tid, ex["trace_id"], "%s%s", name, series)
			} else {
				assert.Nil(t, ex, "%s%s", name, series)
			}
		}
	}
	assert.Equal(t, tid, exemplars(t, g, "orphanwatch_unpropagated_total")[`{callee_service="tools",caller_service="agent"}`]["trace_id"])
	assert.Equal(t, tid, exemplars(t, g, "orphanwatch_outlive_seconds")[`{service_name="agent"}`]["trace_id"])
}

func TestRecordGatherAndCompare(t *testing.T) {
	r := newTestRecorder(t, func(c *Settings) {
		c.Namespace = "ow"
		c.ConstLabels = map[string]string{"cluster": "eu-1"}
	})
	r.Record(recordertest.Build(t, recordertest.FanOut()...))
	expected := `
# HELP ow_roots_total Root requests by end reason.
# TYPE ow_roots_total counter
ow_roots_total{cluster="eu-1",end_reason="cancelled",service_name="agent"} 1
# HELP ow_unpropagated_total Orphaned spans that entered a service whose caller was not orphaned: the edge the cancellation did not cross.
# TYPE ow_unpropagated_total counter
ow_unpropagated_total{callee_service="tools",caller_service="agent",cluster="eu-1"} 1
`
	assert.Equal(t, strings.TrimPrefix(expected, "\n"), gatherText(t, r.Gatherer(), "ow_roots_total", "ow_unpropagated_total"))
	assert.Empty(t, gatherText(t, r.Gatherer(), "orphanwatch_runs_total"), "the namespace applies to every metric")
	assert.NotEmpty(t, gatherText(t, r.Gatherer(), "ow_runs_total"))
}

func TestSelfAnnotatedSpans(t *testing.T) {
	r := newTestRecorder(t, nil)
	r.Record(recordertest.Build(t, testResource{Service: "app", Spans: []testSpan{
		// int and double tokens, response model preferred over request model.
		{Name: "chat a", TraceID: traceB, End: 2 * sec, Attrs: map[string]any{
			"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5.0,
			"gen_ai.response.model": "gpt-4o-2024-08-06", "gen_ai.request.model": "gpt-4o",
		}},
		// string tokens, request model only.
		{Name: "chat b", TraceID: traceB, End: 1 * sec, Attrs: map[string]any{
			"gen_ai.usage.input_tokens": "7", "gen_ai.usage.output_tokens": " 3 ", "gen_ai.request.model": "claude",
		}},
		// bad token values are ignored and counted; the call still counts.
		{Name: "chat c", TraceID: traceB, End: 1 * sec, Attrs: map[string]any{
			"gen_ai.usage.input_tokens": -5, "gen_ai.usage.output_tokens": "NaN", "gen_ai.request.model": "claude",
		}},
		{Name: "chat d", TraceID: traceB, End: 1 * sec, Attrs: map[string]any{
			"gen_ai.usage.input_tokens": math.Inf(1), "gen_ai.usage.output_tokens": "lots",
		}},
		// The application writes its own verdicts.
		{Name: "chat e", TraceID: traceA, Start: 1 * sec, End: 4 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "orphaned", "orphanwatch.attempt": 2, "orphanwatch.after_gone": 3.0,
			"orphanwatch.spend.model": "claude", "orphanwatch.spend.input_tokens": "20", "orphanwatch.spend.output_tokens": 2,
			"orphanwatch.spend.cost": "0.5",
		}},
		// Annotated by the application with liveness but no orphanwatch.spend.*: the gen_ai
		// fallback applies (not an attempt, judged: no spend seconds).
		{Name: "chat f", TraceID: traceB, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "live", "gen_ai.usage.input_tokens": 1000, "gen_ai.request.model": "claude",
		}},
		// An agent span repeating the usage of the model calls below it: never counted by the
		// fallback, judged or not.
		{Name: "invoke_agent planner", TraceID: traceB, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.spend.repeated": true,
			"gen_ai.usage.input_tokens": 1010, "gen_ai.usage.output_tokens": 20, "gen_ai.request.model": "claude",
		}},
		{Name: "invoke_agent coder", TraceID: traceB, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.spend.repeated": true, "gen_ai.usage.input_tokens": 1010, "gen_ai.response.model": "claude",
		}},
		// A model name alone (an agent span, say) is not a model call.
		{Name: "invoke_agent", TraceID: traceB, End: 1 * sec, Attrs: map[string]any{"gen_ai.request.model": "claude"}},
	}}))
	g := r.Gatherer()

	assert.Equal(t, map[string]float64{
		`{liveness="unknown",model="gpt-4o-2024-08-06",service_name="app"}`: 1,
		`{liveness="unknown",model="claude",service_name="app"}`:            2,
		`{liveness="unknown",model="unknown",service_name="app"}`:           1,
		`{liveness="orphaned",model="claude",service_name="app"}`:           1,
		`{liveness="live",model="claude",service_name="app"}`:               1,
	}, samples(t, g, "orphanwatch_model_calls_total"))
	assert.Equal(t, map[string]float64{
		`{direction="input",liveness="unknown",model="gpt-4o-2024-08-06",service_name="app"}`:  10,
		`{direction="output",liveness="unknown",model="gpt-4o-2024-08-06",service_name="app"}`: 5,
		`{direction="input",liveness="unknown",model="claude",service_name="app"}`:             7,
		`{direction="output",liveness="unknown",model="claude",service_name="app"}`:            3,
		`{direction="input",liveness="orphaned",model="claude",service_name="app"}`:            20,
		`{direction="output",liveness="orphaned",model="claude",service_name="app"}`:           2,
		`{direction="input",liveness="live",model="claude",service_name="app"}`:                1000,
	}, samples(t, g, "orphanwatch_spend_tokens_total"))
	assert.Equal(t, map[string]float64{
		`{liveness="orphaned",model="claude",service_name="app"}`: 0.5,
	}, samples(t, g, "orphanwatch_spend_cost_usd_total"))
	// Unjudged model calls count as spend (2+1+1+1 s) under liveness unknown;
	// chat e is an attempt (3 s).
	assert.Equal(t, map[string]float64{
		`{liveness="unknown",service_name="app"}`:  5,
		`{liveness="orphaned",service_name="app"}`: 3,
	}, samples(t, g, "orphanwatch_spend_seconds_total"))
	assert.Equal(t, map[string]float64{
		`{liveness="outlived_root",operation="chat e",service_name="app"}`: 1,
	}, samples(t, g, "orphanwatch_attempts_total"))
	assert.Equal(t, 4.0, samples(t, g, "orphanwatch_spans_skipped_total")[`{reason="invalid_tokens"}`])
}

func TestMalformedSpans(t *testing.T) {
	r := newTestRecorder(t, nil)
	td := recordertest.Build(t, testResource{Service: "svc", Spans: []testSpan{
		// Bad liveness: liveness metrics skipped, the run still counts.
		{Name: "a", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": 3, "orphanwatch.attempt": 1, "orphanwatch.run.outcome": "success",
		}},
		{Name: "a", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "zombie", "orphanwatch.attempt": 1, "orphanwatch.after_gone": 1.0,
		}},
		{Name: "a", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.detached": "true", "orphanwatch.attempt": 1, "orphanwatch.spend.model": "m",
		}},
		// Bad detached but valid liveness: liveness wins.
		{Name: "b", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.detached": 1, "orphanwatch.liveness": "live", "orphanwatch.attempt": 1,
		}},
		// Bad attempts.
		{Name: "c", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.attempt": "2",
		}},
		{Name: "c", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.attempt": 0,
		}},
		// Bad started_after_gone: attempt skipped, spend still counted.
		{Name: "d", TraceID: traceA, End: 2 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "orphaned", "orphanwatch.attempt": 1, "orphanwatch.started_after_gone": "yes",
			"orphanwatch.after_gone": "1s",
		}},
		{Name: "e", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "orphaned", "orphanwatch.after_gone": -1.0,
		}},
		{Name: "e", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "orphaned", "orphanwatch.after_gone": math.NaN(),
		}},
		// Bad enums and strings.
		{Name: "f", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.run.outcome": "win", "orphanwatch.root.end_reason": true, "orphanwatch.caller.service": "",
		}},
		{Name: "f", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.run.outcome": 5, "orphanwatch.root.end_reason": "timeout", "orphanwatch.caller.service": 7,
		}},
		// Bad model and cost.
		{Name: "g", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.spend.model": 42, "orphanwatch.spend.input_tokens": 5,
		}},
		{Name: "g", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.spend.model": "m", "orphanwatch.spend.cost": -1.0,
		}},
		// Unusable times on attempt spans.
		{Name: "h", TraceID: traceA, ZeroStart: true, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.attempt": 1,
		}},
		{Name: "h", TraceID: traceA, Start: 5 * sec, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.attempt": 1,
		}},
		// Empty trace ID: counted, no exemplar.
		{Name: "i", End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "orphaned", "orphanwatch.attempt": 1, "orphanwatch.after_gone": 0.5,
		}},
		// Bad cancellation reach and a spend.repeated that is not a bool (no fallback).
		{Name: "j", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.cancel.reach_hops": -1, "orphanwatch.orphaned.depth_hops": "2",
			"orphanwatch.spend.repeated": "yes", "gen_ai.usage.input_tokens": 3,
		}},
		{Name: "j", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.cancel.reach_hops": 1.5, "orphanwatch.orphaned.depth_hops": 2.0,
		}},
		// A spend.nested that is not a bool: counted, and the attempt's second counts.
		{Name: "k", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.attempt": 1, "orphanwatch.spend.nested": "yes",
		}},
		// A nested attempt: counted as an attempt, its second counted on the enclosing one.
		{Name: "k", TraceID: traceA, End: 1 * sec, Attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.attempt": 1, "orphanwatch.spend.nested": true,
		}},
	}})
	require.NotPanics(t, func() { r.Record(td) })
	g := r.Gatherer()

	assert.Equal(t, map[string]float64{
		`{reason="invalid_liveness"}`:           2,
		`{reason="end_in_future"}`:              0,
		`{reason="over_max_duration"}`:          0,
		`{reason="invalid_detached"}`:           2,
		`{reason="invalid_started_after_gone"}`: 1,
		`{reason="invalid_after_gone"}`:         3,
		`{reason="invalid_attempt"}`:            2,
		`{reason="invalid_run_outcome"}`:        2,
		`{reason="invalid_end_reason"}`:         2,
		`{reason="invalid_caller_service"}`:     2,
		`{reason="invalid_model"}`:              1,
		`{reason="invalid_tokens"}`:             0,
		`{reason="invalid_cost"}`:               1,
		`{reason="zero_time"}`:                  1,
		`{reason="end_before_start"}`:           1,
		`{reason="invalid_reach_hops"}`:         2,
		`{reason="invalid_depth_hops"}`:         1,
		`{reason="invalid_spend_repeated"}`:     1,
		`{reason="invalid_spend_nested"}`:       1,
		`{reason="invalid_deferred"}`:           0,
		`{reason="invalid_verdict_event"}`:      0,
	}, samples(t, g, "orphanwatch_spans_skipped_total"))

	assert.Equal(t, map[string]float64{
		`{operation="a",outcome="success",service_name="svc"}`: 1,
	}, samples(t, g, "orphanwatch_runs_total"))
	assert.Equal(t, map[string]float64{
		`{liveness="live",operation="b",service_name="svc"}`:          1,
		`{liveness="live",operation="h",service_name="svc"}`:          2,
		`{liveness="outlived_root",operation="i",service_name="svc"}`: 1,
		`{liveness="live",operation="k",service_name="svc"}`:          2,
	}, samples(t, g, "orphanwatch_attempts_total"))
	// i (1 s, after_gone 0.5): half of it orphaned, half live; orphaned attempts whose
	// after_gone is unusable count all their seconds as orphaned; the first k's second counts,
	// the nested k's does not.
	assert.Equal(t, map[string]float64{
		`{liveness="live",service_name="svc"}`:     2.5,
		`{liveness="orphaned",service_name="svc"}`: 2.5,
	}, samples(t, g, "orphanwatch_spend_seconds_total"))
	depth := samples(t, g, "orphanwatch_orphaned_depth_hops")
	assert.Equal(t, 1.0, depth[`_count{service_name="svc"}`], "the valid 2.0 of the second j")
	assert.Equal(t, map[string]float64{
		`{liveness="live",model="m",service_name="svc"}`: 1,
	}, samples(t, g, "orphanwatch_model_calls_total"))
	assert.Empty(t, samples(t, g, "orphanwatch_spend_cost_usd_total"))
	assert.Empty(t, samples(t, g, "orphanwatch_spend_tokens_total"))
	assert.Empty(t, samples(t, g, "orphanwatch_roots_total"))
	assert.Empty(t, samples(t, g, "orphanwatch_unpropagated_total"))
	outlive := samples(t, g, "orphanwatch_outlive_seconds")
	assert.Equal(t, 1.0, outlive[`_count{service_name="svc"}`])
	assert.Nil(t, exemplars(t, g, "orphanwatch_attempts_total")[`{liveness="outlived_root",operation="i",service_name="svc"}`])
}

func TestOddLabelValues(t *testing.T) {
	r := newTestRecorder(t, nil)
	long := strings.Repeat("é", 300) // 600 bytes
	require.NotPanics(t, func() {
		r.Record(recordertest.Build(t,
			testResource{Service: "bad\xffutf8", Spans: []testSpan{
				{Name: "op\xfe", TraceID: traceA, End: sec, Attrs: map[string]any{"orphanwatch.run.outcome": "success"}},
				{Name: long, TraceID: traceA, End: sec, Attrs: map[string]any{"orphanwatch.run.outcome": "success"}},
				{Name: "", TraceID: traceA, End: sec, Attrs: map[string]any{"orphanwatch.run.outcome": "success"}},
			}},
			testResource{Service: 12, Spans: []testSpan{
				{Name: "x", TraceID: traceA, End: sec, Attrs: map[string]any{"orphanwatch.run.outcome": "success"}},
			}},
			testResource{Spans: []testSpan{
				{Name: "x", TraceID: traceA, End: sec, Attrs: map[string]any{"orphanwatch.run.outcome": "cancelled"}},
			}},
		))
	})
	got := samples(t, r.Gatherer(), "orphanwatch_runs_total")
	const bad = "bad\uFFFDutf8"
	assert.Equal(t, map[string]float64{
		`{operation="op` + "\uFFFD" + `",outcome="success",service_name="` + bad + `"}`:               1,
		`{operation="` + strings.Repeat("é", 128) + `",outcome="success",service_name="` + bad + `"}`: 1,
		`{operation="unknown",outcome="success",service_name="` + bad + `"}`:                          1,
		`{operation="x",outcome="success",service_name="unknown_service"}`:                            1,
		`{operation="x",outcome="cancelled",service_name="unknown_service"}`:                          1,
	}, got)
}

func TestLabelOverflow(t *testing.T) {
	r := newTestRecorder(t, func(c *Settings) {
		c.LabelLimits.Default = 2
		c.LabelLimits.PerLabel = map[string]int{"operation": 1}
	})
	run := func(op string) testSpan {
		return testSpan{Name: op, TraceID: traceA, End: sec, Attrs: map[string]any{"orphanwatch.run.outcome": "success"}}
	}
	r.Record(recordertest.Build(t,
		// Spans without verdicts take no label slot.
		testResource{Service: "noise", Spans: []testSpan{{Name: "noise", TraceID: traceA, End: sec}}},
		testResource{Service: "a", Spans: []testSpan{run("x"), run("y")}},
		testResource{Service: "b", Spans: []testSpan{run("x")}},
		testResource{Service: "c", Spans: []testSpan{run("x"), run("z")}},
		testResource{Service: "a", Spans: []testSpan{run("x")}},
		testResource{Service: "d", Spans: []testSpan{run("y")}},
	))
	g := r.Gatherer()
	assert.Equal(t, map[string]float64{
		`{operation="x",outcome="success",service_name="a"}`:         2,
		`{operation="other",outcome="success",service_name="a"}`:     1,
		`{operation="x",outcome="success",service_name="b"}`:         1,
		`{operation="x",outcome="success",service_name="other"}`:     1,
		`{operation="other",outcome="success",service_name="other"}`: 2,
	}, samples(t, g, "orphanwatch_runs_total"))
	assert.Equal(t, map[string]float64{
		`{label="service_name"}`:   3, // c, c, d
		`{label="operation"}`:      3, // y, z, y
		`{label="model"}`:          0,
		`{label="caller_service"}`: 0,
		`{label="callee_service"}`: 0,
	}, samples(t, g, "orphanwatch_label_overflow_total"))
}

// Trace IDs, span IDs and idempotency keys never become label values, and
// every family has exactly the labels of the contract.
func TestLabelNames(t *testing.T) {
	r := newTestRecorder(t, nil)
	res := recordertest.FanOut()
	res[0].Spans[1].Attrs["idempotency_key"] = "secret-key-1"
	res[0].Spans[1].Attrs["orphanwatch.idempotency_key"] = "secret-key-1"
	r.Record(recordertest.Build(t, res...))
	mfs, err := r.Gatherer().Gather()
	require.NoError(t, err)
	want := map[string][]string{
		"orphanwatch_runs_total":            {"operation", "outcome", "service_name"},
		"orphanwatch_attempts_total":        {"liveness", "operation", "service_name"},
		"orphanwatch_roots_total":           {"end_reason", "service_name"},
		"orphanwatch_spend_seconds_total":   {"liveness", "service_name"},
		"orphanwatch_spend_tokens_total":    {"direction", "liveness", "model", "service_name"},
		"orphanwatch_spend_cost_usd_total":  {"liveness", "model", "service_name"},
		"orphanwatch_model_calls_total":     {"liveness", "model", "service_name"},
		"orphanwatch_outlive_seconds":       {"service_name"},
		"orphanwatch_unpropagated_total":    {"callee_service", "caller_service"},
		"orphanwatch_label_overflow_total":  {"label"},
		"orphanwatch_spans_skipped_total":   {"reason"},
		"orphanwatch_series_overflow_total": {"metric"},
	}
	got := map[string][]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var names []string
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName())
				assert.NotContains(t, l.GetValue(), traceA.String()[:16])
				assert.NotContains(t, l.GetValue(), "secret-key")
			}
			got[mf.GetName()] = names
		}
	}
	assert.Equal(t, want, got)
}

func TestRecordConcurrent(t *testing.T) {
	r := newTestRecorder(t, nil)
	const workers, rounds = 8, 50
	td := recordertest.Build(t, recordertest.FanOut()...)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range rounds {
				r.Record(td)
			}
		})
	}
	wg.Wait()
	n := float64(workers * rounds)
	got := samples(t, r.Gatherer(), "orphanwatch_spend_seconds_total")
	assert.InDelta(t, 2.75*n, got[`{liveness="orphaned",service_name="agent"}`], 1e-6)
	assert.Equal(t, n, samples(t, r.Gatherer(), "orphanwatch_runs_total")[`{operation="call_tool",outcome="delivered_to_nobody",service_name="agent"}`])
}

func TestWriteText(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteText(&buf, nil, recordertest.Build(t, recordertest.FanOut()...), recordertest.Build(t, recordertest.FanOut()...)))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(&buf)
	require.NoError(t, err)
	mf := mfs["orphanwatch_spend_tokens_total"]
	require.NotNil(t, mf)
	var orphanedInput float64
	for _, m := range mf.GetMetric() {
		if recordertest.LabelString(m.GetLabel()) == `{direction="input",liveness="orphaned",model="gpt-4o",service_name="agent"}` {
			orphanedInput = m.GetCounter().GetValue()
		}
	}
	assert.Equal(t, 2000.0, orphanedInput, "two batches of the scenario")

	_, err = NewRecorder(&Settings{Namespace: "bad-ns"})
	require.Error(t, err)
	require.ErrorContains(t, WriteText(&buf, &Settings{Namespace: "x"}), "label_limits::default")
}

func TestWriteOpenMetrics(t *testing.T) {
	r := newTestRecorder(t, nil)
	r.Record(recordertest.Build(t, recordertest.FanOut()...))
	var buf bytes.Buffer
	require.NoError(t, r.WriteOpenMetrics(&buf))
	out := buf.String()
	tid := traceA.String()
	assert.True(t, strings.HasSuffix(out, "# EOF\n"), "OpenMetrics output ends with # EOF")
	assert.Regexp(t, `(?m)^orphanwatch_runs_total\{operation="call_tool",outcome="delivered_to_nobody",service_name="agent"\} 1\.0 # \{(trace_id="`+tid+`",span_id="c0[0-9a-f]{14}"|span_id="c0[0-9a-f]{14}",trace_id="`+tid+`")\} 1\.0 [0-9.e+]+$`, out)
	assert.Regexp(t, `(?m)^orphanwatch_runs_total\{operation="chat",outcome="success",service_name="agent"\} 1\.0$`, out, "no exemplar on healthy series")
}

func TestSanitize(t *testing.T) {
	assert.Equal(t, "a\uFFFDb", sanitize("a\xff\xfeb"))
	assert.Equal(t, "svc", sanitize("  svc\n"))
	// 100 three-byte runes: cut at a rune boundary at or below 256 bytes.
	got := sanitize(strings.Repeat("€", 100))
	assert.Equal(t, strings.Repeat("€", 85), got)
	assert.Equal(t, strings.Repeat("a", 256), sanitize(strings.Repeat("a", 300)))
}

// TestExemplarsAtMostOncePerInterval: a series' exemplar is replaced at most once per
// exemplarInterval (client_golang allocates each one); the first orphaned span always sets it.
func TestExemplarsAtMostOncePerInterval(t *testing.T) {
	r := newTestRecorder(t, nil)
	now := t0
	r.now = func() time.Time { return now }
	orphaned := func(trace pcommon.TraceID) ptrace.Traces {
		return recordertest.Build(t, testResource{Service: "svc", Spans: []testSpan{{Name: "op", TraceID: trace, End: sec, Attrs: map[string]any{
			"orphanwatch.liveness": "orphaned", "orphanwatch.attempt": 1, "orphanwatch.after_gone": 0.5,
		}}}})
	}
	series := `{liveness="outlived_root",operation="op",service_name="svc"}`
	r.Record(orphaned(traceA))
	r.Record(orphaned(traceB))
	assert.Equal(t, traceA.String(), exemplars(t, r.Gatherer(), "orphanwatch_attempts_total")[series]["trace_id"])
	now = now.Add(exemplarInterval)
	r.Record(orphaned(traceB))
	assert.Equal(t, traceB.String(), exemplars(t, r.Gatherer(), "orphanwatch_attempts_total")[series]["trace_id"])
	assert.Equal(t, 3.0, samples(t, r.Gatherer(), "orphanwatch_attempts_total")[series], "every span counts")
}

// year2200 is far beyond any clock, as an offset from t0.
var year2200 = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).Sub(t0)

// orphanedAttempt is an attempt span's attributes as the orphan processor writes them for one
// that outlived its root by afterGone seconds.
func orphanedAttempt(afterGone float64) map[string]any {
	return map[string]any{"orphanwatch.liveness": "orphaned", "orphanwatch.attempt": 1, "orphanwatch.after_gone": afterGone}
}

// TestAnnotatedInsaneTimesAddNoSeconds: in annotate mode the exporter reads the processor's
// attributes, and checks the span's times itself: an attempt ending in 2200 (issue 30: it
// added 173 years to spend_seconds_total{liveness="orphaned"}), one lasting longer than
// max_request_duration, and an after_gone beyond it add nothing, each counted by its reason;
// a sane span still counts.
func TestAnnotatedInsaneTimesAddNoSeconds(t *testing.T) {
	r := newTestRecorder(t, func(c *Settings) { c.Mode = ModeAnnotate })
	r.Record(recordertest.Build(t, testResource{Service: "svc", Spans: []testSpan{
		{Name: "future", TraceID: traceA, Start: year2200 - time.Second, End: year2200, Attrs: orphanedAttempt(1)},
		{Name: "long", TraceID: traceA, Start: time.Second, End: 2 * time.Hour, Attrs: orphanedAttempt(1)},
		{Name: "absurd", TraceID: traceA, Start: time.Second, End: 2 * time.Second, Attrs: orphanedAttempt(1e10)},
		{Name: "sane", TraceID: traceA, Start: time.Second, End: 3 * time.Second, Attrs: orphanedAttempt(0.5)},
	}}))
	spend := samples(t, r.Gatherer(), "orphanwatch_spend_seconds_total")
	assert.Equal(t, map[string]float64{
		`{liveness="orphaned",service_name="svc"}`: 0.5 + 1, // sane: 0.5 after the gone time; absurd: all its 1 s
		`{liveness="live",service_name="svc"}`:     1.5,
	}, spend)
	skipped := samples(t, r.Gatherer(), "orphanwatch_spans_skipped_total")
	assert.Equal(t, 1.0, skipped[`{reason="end_in_future"}`])
	assert.Equal(t, 1.0, skipped[`{reason="over_max_duration"}`])
	assert.Equal(t, 1.0, skipped[`{reason="invalid_after_gone"}`])
	outlive := samples(t, r.Gatherer(), "orphanwatch_outlive_seconds")
	assert.Equal(t, 3.0, outlive[`_count{service_name="svc"}`], "future, long and sane; not the absurd after_gone")
	// The attempts still count: they happened.
	assert.Equal(t, 4.0, samples(t, r.Gatherer(), "orphanwatch_attempts_total")[`{liveness="outlived_root",operation="future",service_name="svc"}`]+
		samples(t, r.Gatherer(), "orphanwatch_attempts_total")[`{liveness="outlived_root",operation="long",service_name="svc"}`]+
		samples(t, r.Gatherer(), "orphanwatch_attempts_total")[`{liveness="outlived_root",operation="absurd",service_name="svc"}`]+
		samples(t, r.Gatherer(), "orphanwatch_attempts_total")[`{liveness="outlived_root",operation="sane",service_name="svc"}`])
}

// TestObservedFutureSpanAddsNoSeconds: in observe mode (the default) the exporter decides the
// verdicts with the processor's time model: a retried call ending in 2200 under a cancelled root
// gets no verdict that counts time, so it adds nothing to spend_seconds_total, while its sane
// sibling is counted orphaned.
func TestObservedFutureSpanAddsNoSeconds(t *testing.T) {
	cfg := NewDefaultSettings()
	cfg.DecisionWait = 0
	r, err := NewRecorder(cfg)
	require.NoError(t, err)
	obs, err := NewObserving(cfg, r, zap.NewNop(), nil, func() time.Time { return t0.Add(time.Minute) })
	require.NoError(t, err)
	td := recordertest.Build(t, testResource{Service: "gateway", Spans: []testSpan{
		{Name: "GET /ask", TraceID: traceB, Kind: ptrace.SpanKindServer, Start: 0, End: 3 * time.Second,
			Attrs: map[string]any{"http.response.status_code": 499}},
	}}, testResource{Service: "researcher", Spans: []testSpan{
		{Name: "future", TraceID: traceB, Kind: ptrace.SpanKindClient, Start: year2200 - time.Second, End: year2200,
			Attrs: map[string]any{"http.request.resend_count": 1}},
		{Name: "sane", TraceID: traceB, Kind: ptrace.SpanKindClient, Start: time.Second, End: 6 * time.Second,
			Attrs: map[string]any{"http.request.resend_count": 1}},
	}})
	// The spans' parent: the root (buildTraces numbers span IDs in order).
	root := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	kids := td.ResourceSpans().At(1).ScopeSpans().At(0).Spans()
	for i := range kids.Len() {
		kids.At(i).SetParentSpanID(root.SpanID())
	}
	obs.Consume(td)
	obs.Shutdown()
	spend := samples(t, r.Gatherer(), "orphanwatch_spend_seconds_total")
	assert.InDelta(t, 3.0, spend[`{liveness="orphaned",service_name="researcher"}`], 1e-9, "the sane call: 3 s after the gone time")
	assert.InDelta(t, 2.0, spend[`{liveness="live",service_name="researcher"}`], 1e-9)
	total := 0.0
	for _, v := range spend {
		total += v
	}
	assert.Less(t, total, 10.0, "nothing of the year 2200")
}

// TestSkipsLoggedSampled: the exporter logs its skips besides counting them: one Warn line per
// reason per interval with the count, naming the counter, never the span's attributes.
func TestSkipsLoggedSampled(t *testing.T) {
	r := newTestRecorder(t, func(c *Settings) { c.Mode = ModeAnnotate })
	core, logs := observer.New(zap.InfoLevel)
	r.LogSkips(zap.New(core))
	bad := func() ptrace.Traces {
		return recordertest.Build(t, testResource{Service: "svc", Spans: []testSpan{
			{Name: "a", TraceID: traceA, End: time.Second, Attrs: map[string]any{"orphanwatch.liveness": "secret-value"}},
			{Name: "b", TraceID: traceA, End: time.Second, Attrs: map[string]any{"orphanwatch.liveness": "secret-value"}},
		}})
	}
	r.Record(bad())
	r.Record(bad())
	require.Equal(t, 1, logs.Len(), "one line per reason per interval")
	e := logs.All()[0]
	assert.Equal(t, zap.WarnLevel, e.Level)
	assert.Equal(t, "invalid_liveness", e.ContextMap()["reason"])
	assert.Equal(t, int64(1), e.ContextMap()["spans"], "the first occurrence; the rest come with the next line")
	assert.Equal(t, "orphanwatch_spans_skipped_total", e.ContextMap()["counter"])
	assert.NotContains(t, e.Message, "secret-value")
	for _, v := range e.ContextMap() {
		if s, ok := v.(string); ok {
			assert.NotContains(t, s, "secret-value")
		}
	}
	assert.Equal(t, 4.0, samples(t, r.Gatherer(), "orphanwatch_spans_skipped_total")[`{reason="invalid_liveness"}`])
}
