package scenarios_test

import (
	"maps"
	"math"
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/judged"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// runPipeline passes the batches through the orphan processor (judged.Traces) and records the
// result with the orphanmetrics exporter's recorder.
func runPipeline(t *testing.T, batches ...ptrace.Traces) *orphanmetrics.Recorder {
	t.Helper()
	rec, err := orphanmetrics.NewRecorder(orphanmetrics.NewDefaultSettings())
	require.NoError(t, err)
	for _, td := range judged.Traces(t, batches...) {
		rec.Record(td)
	}
	return rec
}

// series flattens the gathered metrics, leaving out the exporter's health counters and zeroes.
func series(t *testing.T, rec *orphanmetrics.Recorder) map[string]float64 {
	fams, err := rec.Gatherer().Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range fams {
		name := f.GetName()
		if name == "orphanwatch_label_overflow_total" || name == "orphanwatch_spans_skipped_total" {
			continue
		}
		if f.GetType() != dto.MetricType_COUNTER && f.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range f.GetMetric() {
			ss := e2e.Samples(f, m)
			if ss[0].Value == 0 { // a counter's value, a histogram's count
				continue
			}
			for _, s := range ss {
				out[s.Name+scenarios.LabelKey(s.Labels)] = s.Value
			}
		}
	}
	return out
}

func checkMetrics(t *testing.T, sc scenarios.Scenario, exp scenarios.Expected, got map[string]float64) {
	want := map[string]float64{}
	for _, m := range exp.Metrics {
		want[m.Name+scenarios.LabelKey(m.Labels)] = m.Value
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		w, ok := want[k]
		if !assert.True(t, ok, "%s: unexpected series %s = %v", sc.ID, k, got[k]) {
			continue
		}
		assert.InDelta(t, w, got[k], 1e-9*math.Max(1, math.Abs(w)), "%s: %s", sc.ID, k)
	}
	for k, w := range want {
		_, ok := got[k]
		assert.True(t, ok, "%s: missing series %s (want %v)", sc.ID, k, w)
	}
}

// TestPipelineMetrics passes every scenario through the processor and the exporter and compares
// every series with expected.json exactly.
func TestPipelineMetrics(t *testing.T) {
	for _, sc := range scenarios.All() {
		t.Run(sc.ID, func(t *testing.T) {
			td, exp := sc.Build()
			checkMetrics(t, sc, exp, series(t, runPipeline(t, td)))
		})
	}
}

// TestPipelineS8Batches sends S2's spans shuffled in S8's batches, the root last: the metrics
// are exactly S2's.
func TestPipelineS8Batches(t *testing.T) {
	_, exp := scenarios.S2()
	batches, _ := scenarios.S8Batches()
	require.GreaterOrEqual(t, len(batches), 5)
	checkMetrics(t, scenarios.Scenario{ID: "S8"}, exp, series(t, runPipeline(t, batches...)))
}
