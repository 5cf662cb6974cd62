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
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor"
)

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
			td := ptrace.NewTraces()
			addSpan(td, 1, 1, 0, ptrace.SpanKindServer, 0, 40)
			call := addSpan(td, 1, 2, 1, ptrace.SpanKindClient, 0.1, 1)
			call.Attributes().PutInt("http.response.status_code", 200)
			cfg := DefaultConfig()
			tc.edit(cfg)
			require.NoError(t, cfg.Validate())
			out, err := Run(context.Background(), cfg, []Input{{Name: "f", Result: &input.Result{Format: "otlp-json", Traces: td, Spans: td.SpanCount()}}})
			require.NoError(t, err)
			out.Report.WithSpanVerdicts()
			assert.Equal(t, tc.deferred, out.Report.Summary.Processor.SpansDeferred)
			v := verdictOf(t, out.Report, pcommon.SpanID{2, 1})
			assert.Equal(t, "live", v.Verdict[verdict.AttrLiveness])
		})
	}
}
