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

// TestDeferredSpanIsJudged: a call that ended 39 s before its root (a long request) arrives
// 30 s before the root does: its record waits past decision_wait, is deferred, and its
// verdict comes when the root does. Analyze (the observe path) writes it on the call itself:
// judged live, not "not judged"; nothing is left deferred in the output.
func TestDeferredSpanIsJudged(t *testing.T) {
	td := ptrace.NewTraces()
	addSpan(td, 1, 1, 0, ptrace.SpanKindServer, 0, 40)
	call := addSpan(td, 1, 2, 1, ptrace.SpanKindClient, 0.1, 1)
	call.Attributes().PutInt("http.response.status_code", 200)
	out := run(t, td)

	v := verdictOf(t, out.Report, pcommon.SpanID{2, 1})
	assert.Equal(t, "live", v.Verdict[verdict.AttrLiveness])
	assert.Equal(t, "success", v.Verdict[verdict.AttrRunOutcome])
	assert.NotContains(t, v.Verdict, verdict.AttrDeferred)
	assert.Equal(t, 2, out.Report.Summary.Liveness.Live)
	assert.Zero(t, out.Report.Summary.Liveness.None)
	assert.Equal(t, int64(1), out.Report.Summary.Processor.SpansDeferred)

	deferred := 0
	for _, td := range out.Traces {
		forEachSpan(td, func(_ pcommon.Resource, sp ptrace.Span) {
			if v, ok := sp.Attributes().Get(verdict.AttrDeferred); ok && v.Bool() {
				deferred++
			}
		})
	}
	assert.Zero(t, deferred, "observing writes every verdict on its own span")
}

// TestRunOutcomeCarriedOnACarrier: a keyed call that failed retryably is decided with its run
// open (a re-send may come in another trace); run_timeout later its run is closed. The report
// gives the call its outcome; no carrier span is made (observing needs none).
func TestRunOutcomeCarriedOnACarrier(t *testing.T) {
	td := ptrace.NewTraces()
	addSpan(td, 1, 1, 0, ptrace.SpanKindServer, 0, 2)
	call := addSpan(td, 1, 2, 1, ptrace.SpanKindClient, 0.1, 1.9)
	call.Attributes().PutStr("http.request.header.idempotency-key", "order-7")
	call.Attributes().PutInt("http.response.status_code", 503)
	out := run(t, td)

	v := verdictOf(t, out.Report, pcommon.SpanID{2, 1})
	assert.Equal(t, "retryable_failure", v.Verdict[verdict.AttrRunOutcome])
	assert.Equal(t, "live", v.Verdict[verdict.AttrLiveness], "the rest of its verdict was written on it")
	require.Len(t, out.Report.Traces, 1)
	assert.Equal(t, 2, out.Report.Traces[0].Spans, "the carrier span is not a span of the input")
	assert.Equal(t, map[string]int{"retryable_failure": 1}, out.Report.Summary.Runs)
	assert.Zero(t, out.Report.Summary.Processor.CarrierSpans)
	assert.Equal(t, 2, func() int {
		n := 0
		for _, td := range out.Traces {
			n += td.SpanCount()
		}
		return n
	}(), "the output holds the input's spans, no carrier")
}
