package orphanprocessor

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns t0 + s seconds as a pdata timestamp.
func at(s float64) pcommon.Timestamp {
	return pcommon.NewTimestampFromTime(t0.Add(time.Duration(s * float64(time.Second))))
}

// addSpan appends a span to td in its own resource.
func addSpan(td ptrace.Traces, service string, trace byte, id, parent byte, kind ptrace.SpanKind, start, end float64) ptrace.Span {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", service)
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{trace, 1})
	sp.SetSpanID(pcommon.SpanID{id, 1})
	if parent != 0 {
		sp.SetParentSpanID(pcommon.SpanID{parent, 1})
	}
	sp.SetName(service + "-op")
	sp.SetKind(kind)
	sp.SetStartTimestamp(at(start))
	sp.SetEndTimestamp(at(end))
	return sp
}

func newTestProcessor(t *testing.T, cfg *Config, sink *consumertest.TracesSink) *orphanProcessor {
	t.Helper()
	p, err := newOrphanProcessor(processortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	return p
}

func spanAttrs(td []ptrace.Traces) map[pcommon.SpanID]pcommon.Map {
	out := map[pcommon.SpanID]pcommon.Map{}
	for _, t := range td {
		for i := range t.ResourceSpans().Len() {
			rs := t.ResourceSpans().At(i)
			for j := range rs.ScopeSpans().Len() {
				ss := rs.ScopeSpans().At(j)
				for k := range ss.Spans().Len() {
					out[ss.Spans().At(k).SpanID()] = ss.Spans().At(k).Attributes()
				}
			}
		}
	}
	return out
}

func TestHoldsForTheWaitThenReleasesWithVerdicts(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.DecisionWait = time.Minute // the loop never fires in this test; due() is driven by hand
	sink := new(consumertest.TracesSink)
	p := newTestProcessor(t, cfg, sink)
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }

	td := ptrace.NewTraces()
	root := addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3)
	root.Attributes().PutInt("http.response.status_code", 499)
	cl := addSpan(td, "gateway", 1, 2, 1, ptrace.SpanKindClient, 0.01, 3)
	cl.Attributes().PutStr("error.type", "context canceled")
	addSpan(td, "researcher", 1, 3, 2, ptrace.SpanKindServer, 0.02, 6.55)
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	assert.Equal(t, 0, sink.SpanCount(), "spans must wait for the decision")

	require.NoError(t, p.release(context.Background(), p.due(now.Add(59*time.Second))))
	assert.Equal(t, 0, sink.SpanCount())
	require.NoError(t, p.release(context.Background(), p.due(now.Add(time.Minute))))
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
	oc, _ := attrs[pcommon.SpanID{2, 1}].Get(verdict.AttrRunOutcome)
	assert.Equal(t, "cancelled", oc.Str(), "the client call noticed the cancellation")
	require.NoError(t, p.Shutdown(context.Background()))
}

func TestShutdownReleasesEverySpan(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.DecisionWait = time.Hour
	sink := new(consumertest.TracesSink)
	p := newTestProcessor(t, cfg, sink)
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
	cfg := createDefaultConfig().(*Config)
	cfg.DecisionWait = time.Hour
	cfg.Limits.MaxTraces = 3
	sink := new(consumertest.TracesSink)
	p := newTestProcessor(t, cfg, sink)
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
	cfg := createDefaultConfig().(*Config)
	cfg.DecisionWait = time.Hour
	cfg.Limits.MaxSpansPerTrace = 10
	sink := new(consumertest.TracesSink)
	p := newTestProcessor(t, cfg, sink)
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
	cfg := createDefaultConfig().(*Config)
	cfg.DecisionWait = 0
	sink := new(consumertest.TracesSink)
	p := newTestProcessor(t, cfg, sink)
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
	cfg := createDefaultConfig().(*Config)
	cfg.DecisionWait = time.Hour
	sink := new(consumertest.TracesSink)
	p := newTestProcessor(t, cfg, sink)
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

func TestLoopReleasesAfterTheWait(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.DecisionWait = 50 * time.Millisecond
	sink := new(consumertest.TracesSink)
	p := newTestProcessor(t, cfg, sink)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	td := ptrace.NewTraces()
	addSpan(td, "a", 1, 1, 0, ptrace.SpanKindServer, 0, 1)
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.Eventually(t, func() bool { return sink.SpanCount() == 1 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, p.Shutdown(context.Background()))
}

type processorSettings = processor.Settings

func nopSettings() processor.Settings { return processortest.NewNopSettings(metadata.Type) }

func newBufferLogger(w *bytes.Buffer) *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), zapcore.DebugLevel))
}
