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
)

const sec = time.Second

// scenario is one fan-out as the processor would annotate it: a cancelled
// root in "agent", a retried tool call that outlived the root and was
// finally dispatched after it was gone, two model calls (one live, one
// orphaned), and in "tools" an orphaned server span (an edge that dropped
// the cancellation), detached work and a span of an unknown root.
func scenario(t testing.TB) []testResource {
	return []testResource{
		{service: "agent", spans: []testSpan{
			{name: "POST /ask", traceID: traceA, end: 10 * sec, attrs: map[string]any{
				"orphanwatch.liveness": "live", "orphanwatch.root.end_reason": "cancelled",
			}},
			{name: "call_tool", traceID: traceA, start: 1 * sec, end: 3 * sec, attrs: map[string]any{
				"orphanwatch.attempt": 1, "orphanwatch.liveness": "live", "orphanwatch.started_after_gone": false,
			}},
			{name: "call_tool", traceID: traceA, start: 8 * sec, end: 11500 * time.Millisecond, attrs: map[string]any{
				"orphanwatch.attempt": 2, "orphanwatch.liveness": "orphaned",
				"orphanwatch.started_after_gone": false, "orphanwatch.after_gone": 1.5,
			}},
			{name: "call_tool", traceID: traceA, start: 13 * sec, end: 14 * sec, attrs: map[string]any{
				"orphanwatch.attempt": 3, "orphanwatch.liveness": "orphaned",
				"orphanwatch.started_after_gone": true, "orphanwatch.after_gone": 4.0,
				"orphanwatch.run.outcome": "delivered_to_nobody", "orphanwatch.run.attempts": 3, "orphanwatch.run.result": "ok",
			}},
			{name: "chat", traceID: traceA, start: 9 * sec, end: 10250 * time.Millisecond, attrs: map[string]any{
				"orphanwatch.attempt": 1, "orphanwatch.liveness": "orphaned",
				"orphanwatch.started_after_gone": false, "orphanwatch.after_gone": 0.25,
				"orphanwatch.spend.model": "gpt-4o", "orphanwatch.spend.input_tokens": 1000,
				"orphanwatch.spend.output_tokens": 250, "orphanwatch.spend.cost": 0.0125,
				"orphanwatch.run.outcome": "delivered_to_nobody",
				// The processor's copy wins over the raw gen_ai attributes.
				"gen_ai.usage.input_tokens": 999999, "gen_ai.response.model": "ignored",
			}},
			{name: "chat", traceID: traceA, start: 2 * sec, end: 4 * sec, attrs: map[string]any{
				"orphanwatch.attempt": 1, "orphanwatch.liveness": "live", "orphanwatch.started_after_gone": false,
				"orphanwatch.spend.model": "gpt-4o", "orphanwatch.spend.input_tokens": 400,
				"orphanwatch.spend.output_tokens": 100, "orphanwatch.spend.cost": 0.005,
				"orphanwatch.run.outcome": "success",
			}},
		}},
		{service: "tools", spans: []testSpan{
			{name: "GET /search", traceID: traceA, start: 5 * sec, end: 12 * sec, attrs: map[string]any{
				"orphanwatch.liveness": "orphaned", "orphanwatch.started_after_gone": false,
				"orphanwatch.after_gone": 2.0, "orphanwatch.caller.service": "agent",
			}},
			{name: "process job", traceID: traceB, start: 0, end: 60 * sec, attrs: map[string]any{
				"orphanwatch.detached": true, "orphanwatch.attempt": 1,
			}},
			{name: "q", traceID: traceB, start: 0, end: 1 * sec, attrs: map[string]any{
				"orphanwatch.liveness": "unknown", "orphanwatch.attempt": 1, "orphanwatch.run.outcome": "unknown_root",
			}},
			{name: "plain", traceID: traceB, start: 0, end: 1 * sec, attrs: map[string]any{"http.method": "GET"}},
		}},
	}
}

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
	r.Record(buildTraces(t, scenario(t)...))
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
	r.Record(buildTraces(t, scenario(t)...))
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
	r.Record(buildTraces(t, scenario(t)...))
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
	r.Record(buildTraces(t, testResource{service: "app", spans: []testSpan{
		// int and double tokens, response model preferred over request model.
		{name: "chat a", traceID: traceB, end: 2 * sec, attrs: map[string]any{
			"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5.0,
			"gen_ai.response.model": "gpt-4o-2024-08-06", "gen_ai.request.model": "gpt-4o",
		}},
		// string tokens, request model only.
		{name: "chat b", traceID: traceB, end: 1 * sec, attrs: map[string]any{
			"gen_ai.usage.input_tokens": "7", "gen_ai.usage.output_tokens": " 3 ", "gen_ai.request.model": "claude",
		}},
		// bad token values are ignored and counted; the call still counts.
		{name: "chat c", traceID: traceB, end: 1 * sec, attrs: map[string]any{
			"gen_ai.usage.input_tokens": -5, "gen_ai.usage.output_tokens": "NaN", "gen_ai.request.model": "claude",
		}},
		{name: "chat d", traceID: traceB, end: 1 * sec, attrs: map[string]any{
			"gen_ai.usage.input_tokens": math.Inf(1), "gen_ai.usage.output_tokens": "lots",
		}},
		// The application writes its own verdicts.
		{name: "chat e", traceID: traceA, start: 1 * sec, end: 4 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "orphaned", "orphanwatch.attempt": 2, "orphanwatch.after_gone": 3.0,
			"orphanwatch.spend.model": "claude", "orphanwatch.spend.input_tokens": "20", "orphanwatch.spend.output_tokens": 2,
			"orphanwatch.spend.cost": "0.5",
		}},
		// Annotated by the application with liveness but no orphanwatch.spend.*: the gen_ai
		// fallback applies (not an attempt, judged: no spend seconds).
		{name: "chat f", traceID: traceB, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "live", "gen_ai.usage.input_tokens": 1000, "gen_ai.request.model": "claude",
		}},
		// An agent span repeating the usage of the model calls below it: never counted by the
		// fallback, judged or not.
		{name: "invoke_agent planner", traceID: traceB, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.spend.repeated": true,
			"gen_ai.usage.input_tokens": 1010, "gen_ai.usage.output_tokens": 20, "gen_ai.request.model": "claude",
		}},
		{name: "invoke_agent coder", traceID: traceB, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.spend.repeated": true, "gen_ai.usage.input_tokens": 1010, "gen_ai.response.model": "claude",
		}},
		// A model name alone (an agent span, say) is not a model call.
		{name: "invoke_agent", traceID: traceB, end: 1 * sec, attrs: map[string]any{"gen_ai.request.model": "claude"}},
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
	td := buildTraces(t, testResource{service: "svc", spans: []testSpan{
		// Bad liveness: liveness metrics skipped, the run still counts.
		{name: "a", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.liveness": 3, "orphanwatch.attempt": 1, "orphanwatch.run.outcome": "success",
		}},
		{name: "a", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "zombie", "orphanwatch.attempt": 1, "orphanwatch.after_gone": 1.0,
		}},
		{name: "a", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.detached": "true", "orphanwatch.attempt": 1, "orphanwatch.spend.model": "m",
		}},
		// Bad detached but valid liveness: liveness wins.
		{name: "b", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.detached": 1, "orphanwatch.liveness": "live", "orphanwatch.attempt": 1,
		}},
		// Bad attempts.
		{name: "c", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.attempt": "2",
		}},
		{name: "c", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.attempt": 0,
		}},
		// Bad started_after_gone: attempt skipped, spend still counted.
		{name: "d", traceID: traceA, end: 2 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "orphaned", "orphanwatch.attempt": 1, "orphanwatch.started_after_gone": "yes",
			"orphanwatch.after_gone": "1s",
		}},
		{name: "e", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "orphaned", "orphanwatch.after_gone": -1.0,
		}},
		{name: "e", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "orphaned", "orphanwatch.after_gone": math.NaN(),
		}},
		// Bad enums and strings.
		{name: "f", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.run.outcome": "win", "orphanwatch.root.end_reason": true, "orphanwatch.caller.service": "",
		}},
		{name: "f", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.run.outcome": 5, "orphanwatch.root.end_reason": "timeout", "orphanwatch.caller.service": 7,
		}},
		// Bad model and cost.
		{name: "g", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.spend.model": 42, "orphanwatch.spend.input_tokens": 5,
		}},
		{name: "g", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.spend.model": "m", "orphanwatch.spend.cost": -1.0,
		}},
		// Unusable times on attempt spans.
		{name: "h", traceID: traceA, zeroStart: true, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.attempt": 1,
		}},
		{name: "h", traceID: traceA, start: 5 * sec, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.attempt": 1,
		}},
		// Empty trace ID: counted, no exemplar.
		{name: "i", end: 1 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "orphaned", "orphanwatch.attempt": 1, "orphanwatch.after_gone": 0.5,
		}},
		// Bad cancellation reach and a spend.repeated that is not a bool (no fallback).
		{name: "j", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.cancel.reach_hops": -1, "orphanwatch.orphaned.depth_hops": "2",
			"orphanwatch.spend.repeated": "yes", "gen_ai.usage.input_tokens": 3,
		}},
		{name: "j", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.cancel.reach_hops": 1.5, "orphanwatch.orphaned.depth_hops": 2.0,
		}},
		// A spend.nested that is not a bool: counted, and the attempt's second counts.
		{name: "k", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.attempt": 1, "orphanwatch.spend.nested": "yes",
		}},
		// A nested attempt: counted as an attempt, its second counted on the enclosing one.
		{name: "k", traceID: traceA, end: 1 * sec, attrs: map[string]any{
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
		r.Record(buildTraces(t,
			testResource{service: "bad\xffutf8", spans: []testSpan{
				{name: "op\xfe", traceID: traceA, end: sec, attrs: map[string]any{"orphanwatch.run.outcome": "success"}},
				{name: long, traceID: traceA, end: sec, attrs: map[string]any{"orphanwatch.run.outcome": "success"}},
				{name: "", traceID: traceA, end: sec, attrs: map[string]any{"orphanwatch.run.outcome": "success"}},
			}},
			testResource{service: 12, spans: []testSpan{
				{name: "x", traceID: traceA, end: sec, attrs: map[string]any{"orphanwatch.run.outcome": "success"}},
			}},
			testResource{spans: []testSpan{
				{name: "x", traceID: traceA, end: sec, attrs: map[string]any{"orphanwatch.run.outcome": "cancelled"}},
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
		return testSpan{name: op, traceID: traceA, end: sec, attrs: map[string]any{"orphanwatch.run.outcome": "success"}}
	}
	r.Record(buildTraces(t,
		// Spans without verdicts take no label slot.
		testResource{service: "noise", spans: []testSpan{{name: "noise", traceID: traceA, end: sec}}},
		testResource{service: "a", spans: []testSpan{run("x"), run("y")}},
		testResource{service: "b", spans: []testSpan{run("x")}},
		testResource{service: "c", spans: []testSpan{run("x"), run("z")}},
		testResource{service: "a", spans: []testSpan{run("x")}},
		testResource{service: "d", spans: []testSpan{run("y")}},
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
	res := scenario(t)
	res[0].spans[1].attrs["idempotency_key"] = "secret-key-1"
	res[0].spans[1].attrs["orphanwatch.idempotency_key"] = "secret-key-1"
	r.Record(buildTraces(t, res...))
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
	td := buildTraces(t, scenario(t)...)
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
	require.NoError(t, WriteText(&buf, nil, buildTraces(t, scenario(t)...), buildTraces(t, scenario(t)...)))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(&buf)
	require.NoError(t, err)
	mf := mfs["orphanwatch_spend_tokens_total"]
	require.NotNil(t, mf)
	var orphanedInput float64
	for _, m := range mf.GetMetric() {
		if labelString(m.GetLabel()) == `{direction="input",liveness="orphaned",model="gpt-4o",service_name="agent"}` {
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
	r.Record(buildTraces(t, scenario(t)...))
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
		return buildTraces(t, testResource{service: "svc", spans: []testSpan{{name: "op", traceID: trace, end: sec, attrs: map[string]any{
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
