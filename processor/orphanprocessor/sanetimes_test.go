package orphanprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/orphanwatch/orphanwatch/internal/badinput"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// year2200 is a pdata timestamp far beyond any collector's clock.
var year2200 = pcommon.NewTimestampFromTime(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC))

// TestRootWithInsaneTimesJudgesItsTraceAtOnce: a root whose times are not sane (no start, an
// end before its start, an end beyond the clock plus future_tolerance, longer than
// max_request_duration) is counted by its reason, and its trace is decided when its root
// arrived would have it decided (decision_wait_after_root), judged without a root: every span
// unknown, runs unknown_root, the other spans counted root_unusable, nothing deferred and no
// trace counted root_missing (issue 30: such traces waited 30 minutes, deferred).
func TestRootWithInsaneTimesJudgesItsTraceAtOnce(t *testing.T) {
	for _, c := range []struct {
		name   string
		reason string
		mutate func(cfg *Config, root ptrace.Span)
	}{
		{"zero start", "zero_timestamps", func(_ *Config, root ptrace.Span) { root.SetStartTimestamp(0) }},
		{"end before start", "end_before_start", func(_ *Config, root ptrace.Span) { root.SetStartTimestamp(at(5)) }},
		{"end in 2200", "end_in_future", func(_ *Config, root ptrace.Span) { root.SetEndTimestamp(year2200) }},
		{"end beyond future_tolerance", "end_in_future", func(cfg *Config, root ptrace.Span) {
			cfg.FutureTolerance = time.Second
			root.SetEndTimestamp(at(2)) // the clock is at t0
		}},
		{"longer than max_request_duration", "over_max_duration", func(cfg *Config, root ptrace.Span) {
			cfg.MaxRequestDuration = 2 * time.Second
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tel := testTelemetry(t)
			cfg := testConfig(time.Minute)
			td := ptrace.NewTraces()
			root := httpStatus(addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3), 499)
			call := addSpan(td, "gateway", 1, 2, 1, ptrace.SpanKindClient, 0.1, 0.5)
			call.Attributes().PutInt("http.request.resend_count", 1)
			addSpan(td, "researcher", 1, 3, 2, ptrace.SpanKindServer, 0.2, 0.4)
			c.mutate(cfg, root)
			p, clk := newTestProcessorWith(t, settingsFor(tel, component.NewID(metadata.Type)), cfg, nil)
			sink := sinkOf(p)
			now := clk.Now()

			require.NoError(t, p.ConsumeTraces(context.Background(), td))
			require.NoError(t, p.release(context.Background(), p.due(now.Add(cfg.DecisionWaitAfterRoot-1))))
			assert.Zero(t, sink.SpanCount(), "held for decision_wait_after_root, as any trace whose root came")
			require.NoError(t, p.release(context.Background(), p.due(now.Add(cfg.DecisionWaitAfterRoot))))
			require.Equal(t, 3, sink.SpanCount(), "decided at once, not deferred for max_request_duration")

			for id, a := range spanAttrs(sink.AllTraces()) {
				_, deferred := a.Get(verdict.AttrDeferred)
				assert.False(t, deferred, "span %v", id)
				lv, _ := a.Get(verdict.AttrLiveness)
				assert.Equal(t, "unknown", lv.Str(), "span %v", id)
				_, after := a.Get(verdict.AttrAfterGone)
				assert.False(t, after, "span %v: no time counted", id)
			}
			oc, _ := spanAttrs(sink.AllTraces())[pcommon.SpanID{2, 1}].Get(verdict.AttrRunOutcome)
			assert.Equal(t, "unknown_root", oc.Str())
			_, rootReason := spanAttrs(sink.AllTraces())[pcommon.SpanID{1, 1}].Get(verdict.AttrRootEndReason)
			assert.False(t, rootReason, "an unusable root has no end reason")

			assert.Equal(t, map[string]int64{
				"processor=orphan,reason=" + c.reason:   1,
				"processor=orphan,reason=root_unusable": 2,
			}, points(t, tel, "otelcol_processor_orphan_spans_without_verdict"))
			if _, err := tel.GetMetric("otelcol_processor_orphan_traces_root_missing"); err == nil {
				for k, v := range points(t, tel, "otelcol_processor_orphan_traces_root_missing") {
					assert.Zero(t, v, "%s: the root came: not root_missing", k)
				}
			}
		})
	}
}

// TestSpanWithInsaneTimesCountsNoTime: under a usable cancelled root, a span ending in 2200,
// one lasting longer than max_request_duration and one without a start get no verdict that
// counts time (liveness unknown, no after_gone, no attempt, no run), each counted by its
// reason; their sibling that outlived the root is still orphaned.
func TestSpanWithInsaneTimesCountsNoTime(t *testing.T) {
	tel := testTelemetry(t)
	cfg := testConfig(time.Minute)
	cfg.MaxRequestDuration = 20 * time.Second
	p, clk := newTestProcessorWith(t, settingsFor(tel, component.NewID(metadata.Type)), cfg, nil)
	sink := sinkOf(p)
	now := clk.Now()

	td := ptrace.NewTraces()
	httpStatus(addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3), 499)
	future := addSpan(td, "researcher", 1, 2, 1, ptrace.SpanKindClient, 1, 2)
	future.SetEndTimestamp(year2200)
	addSpan(td, "researcher", 1, 3, 1, ptrace.SpanKindClient, 1, 25) // 24 s > max_request_duration
	noStart := addSpan(td, "researcher", 1, 4, 1, ptrace.SpanKindClient, 1, 6)
	noStart.SetStartTimestamp(0)
	addSpan(td, "researcher", 1, 5, 1, ptrace.SpanKindClient, 1, 6) // sane: orphaned
	for _, sp := range []ptrace.Span{future, noStart} {
		sp.Attributes().PutInt("http.request.resend_count", 1)
	}
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.NoError(t, p.release(context.Background(), p.due(now.Add(cfg.DecisionWaitAfterRoot))))
	require.NoError(t, p.releaseRoots(context.Background(), p.dueRoots(now.Add(time.Hour), -1)))
	require.Equal(t, 5, sink.SpanCount())

	attrs := spanAttrs(sink.AllTraces())
	for _, id := range []byte{2, 3, 4} {
		a := attrs[pcommon.SpanID{id, 1}]
		lv, _ := a.Get(verdict.AttrLiveness)
		assert.Equal(t, "unknown", lv.Str(), "span %d", id)
		for _, k := range []string{verdict.AttrAfterGone, verdict.AttrAttempt, verdict.AttrRunOutcome, verdict.AttrStartedAfterGone} {
			_, ok := a.Get(k)
			assert.False(t, ok, "span %d: %s", id, k)
		}
	}
	lv, _ := attrs[pcommon.SpanID{5, 1}].Get(verdict.AttrLiveness)
	assert.Equal(t, "orphaned", lv.Str())
	reason, _ := attrs[pcommon.SpanID{1, 1}].Get(verdict.AttrRootEndReason)
	assert.Equal(t, "cancelled", reason.Str())
	assert.Equal(t, map[string]int64{
		"processor=orphan,reason=end_in_future":     1,
		"processor=orphan,reason=over_max_duration": 1,
		"processor=orphan,reason=zero_timestamps":   1,
	}, points(t, tel, "otelcol_processor_orphan_spans_without_verdict"))
}

// TestZeroWaitChecksTheClockToo: with decision_wait 0 (each batch decided as it comes) a span
// ending beyond the clock is refused alike.
func TestZeroWaitChecksTheClockToo(t *testing.T) {
	tel := testTelemetry(t)
	p, _ := newTestProcessorWith(t, settingsFor(tel, component.NewID(metadata.Type)), testConfig(0), nil)
	td := ptrace.NewTraces()
	addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3).Attributes().PutInt("http.response.status_code", 499)
	addSpan(td, "researcher", 1, 2, 1, ptrace.SpanKindClient, 1, 2).SetEndTimestamp(year2200)
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	lv, _ := spanAttrs(sinkOf(p).AllTraces())[pcommon.SpanID{2, 1}].Get(verdict.AttrLiveness)
	assert.Equal(t, "unknown", lv.Str())
	assert.Equal(t, map[string]int64{"processor=orphan,reason=end_in_future": 1},
		points(t, tel, "otelcol_processor_orphan_spans_without_verdict"))
}

// TestBadInputLoggedSampled: malformed spans and ignored attribute values are logged besides
// being counted: one line per reason per interval, with the count since the reason's last
// line, naming the counter; never a span's keys or attribute values. Spans judged unknown for
// want of a root are counted, not logged.
func TestBadInputLoggedSampled(t *testing.T) {
	tel := testTelemetry(t)
	set := settingsFor(tel, component.NewID(metadata.Type))
	core, logs := observer.New(zap.InfoLevel)
	set.Logger = zap.New(core)
	p, clk := newTestProcessorWith(t, set, testConfig(0), nil)

	send := func(trace byte) {
		td := ptrace.NewTraces()
		addSpan(td, "gateway", trace, 1, 0, ptrace.SpanKindServer, 0, 3)
		bad := addSpan(td, "researcher", trace, 2, 1, ptrace.SpanKindClient, 2, 1) // end before start
		bad.Attributes().PutStr("http.request.header.idempotency-key", "secret-key-"+string('a'+rune(trace)))
		bad.Attributes().PutStr("gen_ai.usage.input_tokens", "lots")            // ignored: invalid_token_count
		addSpan(td, "researcher", trace+100, 3, 9, ptrace.SpanKindClient, 1, 2) // a trace whose root never comes
		require.NoError(t, p.ConsumeTraces(context.Background(), td))
	}
	send(1)
	send(2)
	send(3)
	lines := func() map[string][]observer.LoggedEntry {
		out := map[string][]observer.LoggedEntry{}
		for _, e := range logs.All() {
			r, _ := e.ContextMap()["reason"].(string)
			out[r] = append(out[r], e)
		}
		return out
	}
	got := lines()
	require.Len(t, got["end_before_start"], 1, "one line per reason per interval")
	assert.Equal(t, int64(1), got["end_before_start"][0].ContextMap()["spans"])
	assert.Equal(t, "otelcol_processor_orphan_spans_without_verdict", got["end_before_start"][0].ContextMap()["counter"])
	assert.Equal(t, zap.WarnLevel, got["end_before_start"][0].Level)
	require.Len(t, got["wrong_attribute_type"], 1)
	assert.Equal(t, int64(1), got["wrong_attribute_type"][0].ContextMap()["values"])
	assert.Equal(t, "otelcol_processor_orphan_attributes_ignored", got["wrong_attribute_type"][0].ContextMap()["counter"])
	assert.Empty(t, got["root_missing"], "counted, not logged: not malformed")
	for _, e := range logs.All() {
		for k, v := range e.ContextMap() {
			assert.NotContains(t, k+"="+toString(v), "secret-", "a line never carries a span's keys or values")
		}
	}

	clk.Advance(badinput.DefaultInterval)
	send(4)
	got = lines()
	require.Len(t, got["end_before_start"], 2)
	assert.Equal(t, int64(3), got["end_before_start"][1].ContextMap()["spans"], "the two held back since the last line, and this one")
	assert.Equal(t, map[string]int64{
		"processor=orphan,reason=end_before_start": 4,
		"processor=orphan,reason=root_missing":     4,
	}, points(t, tel, "otelcol_processor_orphan_spans_without_verdict"))
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}
