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
// it. A keyed run whose loop recorded the cancellation is counted decision_wait after the loop
// ended; the same run whose loop recorded nothing waits for run_timeout. Each request is
// observed once, after nothing more can come for it.
func TestVerdictLatency(t *testing.T) {
	for _, c := range []struct {
		name        string
		loopNoticed bool
		min, max    float64 // seconds after the root arrived
	}{
		{"loop recorded the cancellation", true, 10, 14},
		{"loop said nothing", false, 55, 64}, // run_timeout after the attempt ended (0.3), the root arrived at 3
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
			root := addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3)
			root.Attributes().PutInt("http.response.status_code", 499)
			loop := addSpan(td, "researcher", 1, 2, 1, ptrace.SpanKindServer, 0.01, 3.01)
			if c.loopNoticed {
				loop.Attributes().PutStr("error.type", "context canceled")
				loop.Status().SetCode(ptrace.StatusCodeError)
			}
			call := addSpan(td, "researcher", 1, 3, 2, ptrace.SpanKindClient, 0.1, 0.3)
			call.Attributes().PutStr("http.request.header.idempotency-key", "search-1")
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
			assert.GreaterOrEqual(t, sum, c.min, "after %s", clk.Now().Sub(arrived))
			assert.LessOrEqual(t, sum, c.max)
			require.NoError(t, p.Shutdown(ctx))
			n, _ = latencies(t, tel)
			assert.Equal(t, uint64(1), n, "not observed again at shutdown")
		})
	}
}
