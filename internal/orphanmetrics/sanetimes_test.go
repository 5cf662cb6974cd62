package orphanmetrics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

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
	r.Record(buildTraces(t, testResource{service: "svc", spans: []testSpan{
		{name: "future", traceID: traceA, start: year2200 - time.Second, end: year2200, attrs: orphanedAttempt(1)},
		{name: "long", traceID: traceA, start: time.Second, end: 2 * time.Hour, attrs: orphanedAttempt(1)},
		{name: "absurd", traceID: traceA, start: time.Second, end: 2 * time.Second, attrs: orphanedAttempt(1e10)},
		{name: "sane", traceID: traceA, start: time.Second, end: 3 * time.Second, attrs: orphanedAttempt(0.5)},
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
	td := buildTraces(t, testResource{service: "gateway", spans: []testSpan{
		{name: "GET /ask", traceID: traceB, kind: ptrace.SpanKindServer, start: 0, end: 3 * time.Second,
			attrs: map[string]any{"http.response.status_code": 499}},
	}}, testResource{service: "researcher", spans: []testSpan{
		{name: "future", traceID: traceB, kind: ptrace.SpanKindClient, start: year2200 - time.Second, end: year2200,
			attrs: map[string]any{"http.request.resend_count": 1}},
		{name: "sane", traceID: traceB, kind: ptrace.SpanKindClient, start: time.Second, end: 6 * time.Second,
			attrs: map[string]any{"http.request.resend_count": 1}},
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
		return buildTraces(t, testResource{service: "svc", spans: []testSpan{
			{name: "a", traceID: traceA, end: time.Second, attrs: map[string]any{"orphanwatch.liveness": "secret-value"}},
			{name: "b", traceID: traceA, end: time.Second, attrs: map[string]any{"orphanwatch.liveness": "secret-value"}},
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
