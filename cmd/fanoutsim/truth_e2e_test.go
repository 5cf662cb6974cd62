package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orphanwatch/orphanwatch/cmd/fanoutsim/sim"
	"github.com/orphanwatch/orphanwatch/cmd/fanoutsim/truth"
	"github.com/orphanwatch/orphanwatch/internal/e2e"
)

// TestMetricsEqualGroundTruth starts the orphanwatch distribution, runs the simulator blind and
// then aware with the same seed (each against a fresh collector), and asserts that the
// exporter's metrics equal the simulator's ground truth: runs per outcome, orphaned model
// calls and tokens, attempts started after the caller left, roots by end reason, edges.
func TestMetricsEqualGroundTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the collector")
	}
	bin := e2e.BuildCollector(t, t.TempDir())
	const tolerance = 50 * time.Millisecond
	results := map[sim.Mode]truth.Truth{}
	for _, mode := range []sim.Mode{sim.Blind, sim.Aware} {
		t.Run(string(mode), func(t *testing.T) {
			c := e2e.StartCollector(t, bin, e2e.Options{
				DecisionWait: "3s",
				ExtraOrphan:  fmt.Sprintf("    clock_skew_tolerance: %s\n", tolerance),
			})
			o := sim.DefaultOptions()
			o.Mode = mode
			o.Seed = 11
			o.TimeScale = 0.1
			o.Duration = 3 * time.Second
			o.Requests = 40
			o.Tolerance = tolerance
			o.OTLPEndpoint = fmt.Sprintf("127.0.0.1:%d", c.OTLPGRPC)
			o.OTLPProtocol = "grpc"
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			tr, err := sim.Run(ctx, o)
			require.NoError(t, err)
			require.Zero(t, tr.Incomplete, "the simulator could judge every fact")
			results[mode] = tr

			// Wait until every held trace was decided (decision_wait 3s after its first span).
			var tel []e2e.Series
			require.True(t, e2e.WaitFor(30*time.Second, func() bool {
				tel = e2e.Scrape(t, c.TelemetryURL())
				return e2e.Sum(tel, "otelcol_processor_orphan_spans_processed", nil) > 0 &&
					e2e.Sum(tel, "otelcol_processor_orphan_spans_held", nil) == 0
			}), "spans still held; log:\n%s", c.Log())
			time.Sleep(500 * time.Millisecond) // the batch processor's timeout is 100ms
			m := e2e.Scrape(t, c.MetricsURL())

			for _, outcome := range []truth.Outcome{"success", "retryable_failure", "hard_failure", "cancelled", "delivered_to_nobody"} {
				assert.Equal(t, float64(tr.Runs[outcome]), e2e.Sum(m, "orphanwatch_runs_total", map[string]string{"outcome": string(outcome)}), "runs %s", outcome)
			}
			assert.Zero(t, e2e.Sum(m, "orphanwatch_runs_total", map[string]string{"outcome": "unknown_root"}))
			for reason, n := range tr.Roots {
				assert.Equal(t, float64(n), e2e.Sum(m, "orphanwatch_roots_total", map[string]string{"end_reason": reason}), "roots %s", reason)
			}
			assert.Equal(t, float64(tr.Attempts.StartedAfterGone), e2e.Sum(m, "orphanwatch_attempts_total", map[string]string{"liveness": "started_after_gone"}))
			assert.Equal(t, float64(tr.Attempts.OutlivedRoot), e2e.Sum(m, "orphanwatch_attempts_total", map[string]string{"liveness": "outlived_root"}))
			assert.Equal(t, float64(tr.Orphaned.ModelCalls), e2e.Sum(m, "orphanwatch_model_calls_total", map[string]string{"liveness": "orphaned"}))
			assert.Equal(t, float64(tr.Orphaned.InputTokens), e2e.Sum(m, "orphanwatch_spend_tokens_total", map[string]string{"liveness": "orphaned", "direction": "input"}))
			assert.Equal(t, float64(tr.Orphaned.OutputTokens), e2e.Sum(m, "orphanwatch_spend_tokens_total", map[string]string{"liveness": "orphaned", "direction": "output"}))
			assert.InDelta(t, tr.Orphaned.CostUSD, e2e.Sum(m, "orphanwatch_spend_cost_usd_total", map[string]string{"liveness": "orphaned"}), 1e-9)
			edges := 0
			for _, n := range tr.Unpropagated {
				edges += n
			}
			assert.Equal(t, float64(edges), e2e.Sum(m, "orphanwatch_unpropagated_total", nil))
		})
	}
	blind, aware := results[sim.Blind], results[sim.Aware]
	assert.Positive(t, blind.Runs["delivered_to_nobody"], "blind retry loops deliver to nobody")
	assert.Positive(t, blind.Orphaned.InputTokens, "blind spends tokens for nobody")
	assert.Zero(t, aware.Runs["delivered_to_nobody"], "aware loops notice")
	assert.Zero(t, aware.Orphaned.InputTokens)
	assert.Positive(t, aware.Runs["cancelled"])
}
