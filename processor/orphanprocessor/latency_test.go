package orphanprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// latencies returns the verdict latency histogram's count and sum.
func latencies(t *testing.T, tel *componenttest.Telemetry) (uint64, float64) {
	t.Helper()
	m, err := tel.GetMetric("otelcol_processor_orphan_verdict_latency")
	if err != nil {
		return 0, 0
	}
	var n uint64
	var sum float64
	for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
		n += dp.Count
		sum += dp.Sum
	}
	return n, sum
}

// TestVerdictLatency: the time from a request's root arriving to the last verdict counted for
// it, which shows what waiting for a run costs (runOverAt). A run whose loop (its parent) ended
// after its attempt is counted decision_wait after the loop ended; a loop that outlived its
// parent (its attempt ended after it), and a keyed run, wait for run_timeout after the attempt
// ended, plus decision_wait. Each request is observed once, after nothing more can come for it.
func TestVerdictLatency(t *testing.T) {
	for _, c := range []struct {
		name           string
		keyed          bool
		attemptEnd     float64
		minSec, maxSec float64 // seconds after the root arrived (at 3)
	}{
		{"loop ended after its attempt", false, 0.3, 10, 11},                  // 3.01 + 10 + 0.25
		{"loop outlived its parent", false, 5, 72, 73},                        // 5 + 60 + 10 + 0.25
		{"keyed run: a re-send may come in another trace", true, 0.3, 67, 68}, // 0.3 + 60 + 10 + 0.25
	} {
		t.Run(c.name, func(t *testing.T) {
			tel := componenttest.NewTelemetry()
			defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
			cfg := testConfig(10 * time.Second)
			cfg.DecisionWaitAfterRoot = time.Second
			cfg.RunTimeout = time.Minute
			p, clk := newTestProcessorWith(t, settingsFor(tel, component.NewID(metadata.Type)), cfg, nil)
			ctx := context.Background()
			clk.Advance(at(3).AsTime().Sub(clk.Now()))
			td := ptrace.NewTraces()
			httpStatus(addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3), 499)
			addSpan(td, "researcher", 1, 2, 1, ptrace.SpanKindServer, 0.01, 3.01)
			call := addSpan(td, "researcher", 1, 3, 2, ptrace.SpanKindClient, 0.1, c.attemptEnd)
			if c.keyed {
				call.Attributes().PutStr("http.request.header.idempotency-key", "search-1")
			}
			call.Attributes().PutInt("http.response.status_code", 503)
			arrived := clk.Now()
			require.NoError(t, p.ConsumeTraces(ctx, td))
			// The release loop's work, second by second, for three minutes.
			for range 180 {
				clk.Advance(time.Second)
				now := clk.Now()
				require.NoError(t, p.release(ctx, p.due(now)))
				require.NoError(t, p.releaseRoots(ctx, p.dueRoots(now, -1)))
				p.sweep(ctx, now)
			}
			n, sum := latencies(t, tel)
			require.Equal(t, uint64(1), n, "one request, observed once")
			assert.GreaterOrEqual(t, sum, c.minSec, "after %s", clk.Now().Sub(arrived))
			assert.LessOrEqual(t, sum, c.maxSec)
			require.NoError(t, p.Shutdown(ctx))
			n, _ = latencies(t, tel)
			assert.Equal(t, uint64(1), n, "not observed again at shutdown")
		})
	}
}
