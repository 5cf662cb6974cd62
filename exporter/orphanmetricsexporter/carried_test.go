package orphanmetricsexporter

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDeferredSpans: a span marked orphanwatch.verdict.deferred = true feeds no metric from its
// own attributes, not even the gen_ai fallback; false is as good as absent; a value that is not
// a bool is counted (invalid_deferred) and read as absent.
func TestDeferredSpans(t *testing.T) {
	r := newTestRecorder(t, nil)
	r.Record(buildTraces(t, testResource{service: "app", spans: []testSpan{
		// The processor's deferred span: its own attributes, no verdict.
		{name: "chat", traceID: traceA, end: 2 * sec, attrs: map[string]any{
			"orphanwatch.verdict.deferred": true,
			"gen_ai.operation.name":        "chat", "gen_ai.request.model": "gpt-4o",
			"gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 20,
		}},
		// Deferred and (wrongly) carrying verdicts and malformed ones: nothing, no skip either.
		{name: "call", traceID: traceA, end: 2 * sec, attrs: map[string]any{
			"orphanwatch.verdict.deferred": true, "orphanwatch.liveness": "orphaned", "orphanwatch.attempt": 1,
			"orphanwatch.after_gone": 1.0, "orphanwatch.run.outcome": "win", "orphanwatch.caller.service": "gw",
		}},
		// false: counted as usual.
		{name: "chat", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.verdict.deferred": false,
			"gen_ai.usage.input_tokens":    7, "gen_ai.request.model": "claude",
		}},
		// Malformed: counted, and the span is counted as if the marker were absent.
		{name: "call", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.verdict.deferred": "true", "orphanwatch.liveness": "live", "orphanwatch.attempt": 1,
		}},
		{name: "chat", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.verdict.deferred": 1, "gen_ai.usage.output_tokens": 3, "gen_ai.request.model": "claude",
		}},
	}}))
	g := r.Gatherer()

	assert.Equal(t, map[string]float64{
		`{direction="input",liveness="unknown",model="claude",service_name="app"}`:  7,
		`{direction="output",liveness="unknown",model="claude",service_name="app"}`: 3,
	}, samples(t, g, "orphanwatch_spend_tokens_total"))
	assert.Equal(t, map[string]float64{
		`{liveness="unknown",model="claude",service_name="app"}`: 2,
	}, samples(t, g, "orphanwatch_model_calls_total"))
	assert.Equal(t, map[string]float64{
		`{liveness="live",operation="call",service_name="app"}`: 1,
	}, samples(t, g, "orphanwatch_attempts_total"))
	assert.Equal(t, map[string]float64{
		`{liveness="live",service_name="app"}`:    1,
		`{liveness="unknown",service_name="app"}`: 2,
	}, samples(t, g, "orphanwatch_spend_seconds_total"))
	assert.Empty(t, samples(t, g, "orphanwatch_runs_total"))
	assert.Empty(t, samples(t, g, "orphanwatch_unpropagated_total"))
	assert.Empty(t, samples(t, g, "orphanwatch_outlive_seconds"))
	for reason, v := range samples(t, g, "orphanwatch_spans_skipped_total") {
		if reason == `{reason="invalid_deferred"}` {
			assert.Equal(t, 2.0, v, reason)
		} else {
			assert.Zero(t, v, reason)
		}
	}
}
