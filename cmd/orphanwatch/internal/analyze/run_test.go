package analyze

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor"
)

// TestDeferredSpanIsJudged: a call that ended 39 s before its root (a long request) arrives
// 30 s before the root does: its record waits past decision_wait, is deferred, and its
// verdict comes when the root does. Analyze (the observe path) writes it on the call itself:
// judged live, not "not judged"; nothing is left deferred in the output.
func TestDeferredSpanIsJudged(t *testing.T) {
	out := run(t, longRequest())

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

// TestDecideEachBatchHandsTheInputOverAsOneBatch: with decide_each_batch (or its deprecated
// spelling decision_wait: 0) the input is one batch, decided at once: the call that ended 39 s
// before its root is judged with it, never deferred, whatever decision_wait, chain_wait and
// abandoned_root_hold say; without it the call waits past decision_wait and is deferred.
func TestDecideEachBatchHandsTheInputOverAsOneBatch(t *testing.T) {
	long := time.Hour
	for _, tc := range []struct {
		name     string
		edit     func(c *orphanprocessor.Config)
		deferred int64
	}{
		{"default", func(*orphanprocessor.Config) {}, 1},
		{"decide_each_batch", func(c *orphanprocessor.Config) { c.DecideEachBatch = true }, 0},
		{"decide_each_batch, long waits", func(c *orphanprocessor.Config) {
			c.DecideEachBatch, c.ChainWait, c.AbandonedRootHold = true, &long, &long
		}, 0},
		{"decision_wait 0", func(c *orphanprocessor.Config) { c.DecisionWait = 0 }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.edit(cfg)
			require.NoError(t, cfg.Validate())
			out := runWith(t, cfg, longRequest())
			assert.Equal(t, tc.deferred, out.Report.Summary.Processor.SpansDeferred)
			v := verdictOf(t, out.Report, pcommon.SpanID{2, 1})
			assert.Equal(t, "live", v.Verdict[verdict.AttrLiveness])
		})
	}
}
