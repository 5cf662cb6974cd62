package analyze

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/cmd/orphanwatch/internal/input"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ts(s float64) pcommon.Timestamp {
	return pcommon.NewTimestampFromTime(t0.Add(time.Duration(s * float64(time.Second))))
}

func addSpan(td ptrace.Traces, trace, id, parent byte, kind ptrace.SpanKind, start, end float64) ptrace.Span {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "shop")
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{trace, 1})
	sp.SetSpanID(pcommon.SpanID{id, 1})
	if parent != 0 {
		sp.SetParentSpanID(pcommon.SpanID{parent, 1})
	}
	sp.SetName("POST")
	sp.SetKind(kind)
	sp.SetStartTimestamp(ts(start))
	sp.SetEndTimestamp(ts(end))
	return sp
}

func run(t *testing.T, td ptrace.Traces) *Output {
	t.Helper()
	out, err := Run(context.Background(), nil, []Input{{Name: "f", Result: &input.Result{Format: "otlp-json", Traces: td, Spans: td.SpanCount()}}})
	require.NoError(t, err)
	out.Report.WithSpanVerdicts()
	return out
}

func verdictOf(t *testing.T, rep *Report, id pcommon.SpanID) SpanVerdict {
	t.Helper()
	for _, tr := range rep.Traces {
		for _, s := range tr.SpanVerdicts {
			if s.SpanID == id.String() {
				return s
			}
		}
	}
	require.Fail(t, "no span", id.String())
	return SpanVerdict{}
}

// TestDeferredSpanIsJudged: a call that ended 39 s before its root (a long request) reaches
// the processor 30 s before the root does: it leaves deferred, and its verdict is carried on
// the root. The report reads the carried verdict as the call's own: judged live, not "not
// judged"; the output the exporter counts keeps the deferred mark and the event.
func TestDeferredSpanIsJudged(t *testing.T) {
	td := ptrace.NewTraces()
	addSpan(td, 1, 1, 0, ptrace.SpanKindServer, 0, 40)
	call := addSpan(td, 1, 2, 1, ptrace.SpanKindClient, 0.1, 1)
	call.Attributes().PutInt("http.response.status_code", 200)
	out := run(t, td)

	v := verdictOf(t, out.Report, pcommon.SpanID{2, 1})
	assert.True(t, v.Carried)
	assert.Equal(t, "live", v.Verdict[verdict.AttrLiveness])
	assert.Equal(t, "success", v.Verdict[verdict.AttrRunOutcome])
	assert.NotContains(t, v.Verdict, verdict.AttrDeferred)
	assert.False(t, verdictOf(t, out.Report, pcommon.SpanID{1, 1}).Carried, "the root's own verdict")
	assert.Equal(t, 2, out.Report.Summary.Liveness.Live)
	assert.Zero(t, out.Report.Summary.Liveness.None)
	assert.Equal(t, int64(1), out.Report.Summary.Processor.SpansDeferred)

	deferred := 0
	for _, td := range out.Traces {
		forEachSpan(td, func(_ pcommon.Resource, sp ptrace.Span) {
			if v, ok := sp.Attributes().Get(verdict.AttrDeferred); ok && v.Bool() {
				deferred++
				_, hasLiveness := sp.Attributes().Get(verdict.AttrLiveness)
				assert.False(t, hasLiveness, "the output is what the collector passes on")
			}
		})
	}
	assert.Equal(t, 1, deferred)
}

// TestRunOutcomeCarriedOnACarrier: a keyed call that failed retryably leaves with its run open
// (a re-send may come in another trace); run_timeout later its outcome is carried on a carrier
// span. The report gives the call its outcome and leaves the carrier span out.
func TestRunOutcomeCarriedOnACarrier(t *testing.T) {
	td := ptrace.NewTraces()
	addSpan(td, 1, 1, 0, ptrace.SpanKindServer, 0, 2)
	call := addSpan(td, 1, 2, 1, ptrace.SpanKindClient, 0.1, 1.9)
	call.Attributes().PutStr("http.request.header.idempotency-key", "order-7")
	call.Attributes().PutInt("http.response.status_code", 503)
	out := run(t, td)

	v := verdictOf(t, out.Report, pcommon.SpanID{2, 1})
	assert.True(t, v.Carried)
	assert.Equal(t, "retryable_failure", v.Verdict[verdict.AttrRunOutcome])
	assert.Equal(t, "live", v.Verdict[verdict.AttrLiveness], "the rest of its verdict was written on it")
	require.Len(t, out.Report.Traces, 1)
	assert.Equal(t, 2, out.Report.Traces[0].Spans, "the carrier span is not a span of the input")
	assert.Equal(t, map[string]int{"retryable_failure": 1}, out.Report.Summary.Runs)
	assert.Equal(t, int64(1), out.Report.Summary.Processor.CarrierSpans)
	assert.Equal(t, 3, func() int {
		n := 0
		for _, td := range out.Traces {
			n += td.SpanCount()
		}
		return n
	}(), "the output holds the carrier span")
}
