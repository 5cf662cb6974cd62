package orphanmetrics_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"pgregory.net/rapid"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/prices"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// The scenarios with dimensions: every resource says deployment.environment.name "prod" (but
// search-tool's, which says none: the default "unknown") and team "platform"; every span of
// researcher says team "research" (the span's attribute wins over its resource's); nothing says
// tenant (no default: the label is empty, which Prometheus reads as absent).
var testDimensions = []orphanmetrics.DimensionConfig{
	{Name: "deployment.environment.name", Default: "unknown"},
	{Name: "team"},
	{Name: "tenant"},
}

// dimensioned are the metrics whose series carry the dimensions.
var dimensioned = []string{
	"orphanwatch_runs_total", "orphanwatch_attempts_total", "orphanwatch_roots_total",
	"orphanwatch_spend_seconds_total", "orphanwatch_spend_tokens_total", "orphanwatch_spend_cost_usd_total",
	"orphanwatch_model_calls_total", "orphanwatch_outlive_seconds", "orphanwatch_cancel_reach_hops",
	"orphanwatch_orphaned_depth_hops",
}

// withDimensionAttributes returns a copy of td with the attributes above.
func withDimensionAttributes(td ptrace.Traces) ptrace.Traces {
	out := ptrace.NewTraces()
	td.CopyTo(out)
	for _, rs := range out.ResourceSpans().All() {
		attrs := rs.Resource().Attributes()
		svc, _ := attrs.Get("service.name")
		if svc.Str() != scenarios.SearchTool {
			attrs.PutStr("deployment.environment.name", "prod")
		}
		attrs.PutStr("team", "platform")
		if svc.Str() == scenarios.Researcher {
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					sp.Attributes().PutStr("team", "research")
				}
			}
		}
	}
	return out
}

// expectedDimensions are the dimension labels the attributes above give a service's series.
func expectedDimensions(service string) map[string]string {
	d := map[string]string{"deployment_environment_name": "prod", "team": "platform"}
	if service == scenarios.SearchTool {
		d["deployment_environment_name"] = "unknown"
	}
	if service == scenarios.Researcher {
		d["team"] = "research"
	}
	return d
}

// flatSeries is every non-zero series of rec but the health counters, keyed
// `name{label="value",...}` with the labels sorted and the empty ones left out (Prometheus reads
// an empty label as absent), histograms by _count, _sum and _bucket. add, when set, adds labels
// to a series of the named metric.
func flatSeries(t require.TestingT, rec *orphanmetrics.Recorder, add func(metric string, labels map[string]string)) map[string]float64 {
	fams, err := rec.Gatherer().Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range fams {
		name := f.GetName()
		switch name {
		case "orphanwatch_label_overflow_total", "orphanwatch_spans_skipped_total", "orphanwatch_series_overflow_total":
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				if lp.GetValue() != "" {
					labels[lp.GetName()] = lp.GetValue()
				}
			}
			if add != nil {
				add(name, labels)
			}
			key := func(suffix string, extra ...string) string {
				var pairs []string
				for k, v := range labels {
					pairs = append(pairs, fmt.Sprintf("%s=%q", k, v))
				}
				pairs = append(pairs, extra...)
				slices.Sort(pairs)
				return name + suffix + "{" + strings.Join(pairs, ",") + "}"
			}
			if c := m.GetCounter(); c != nil && c.GetValue() != 0 {
				out[key("")] = math.Round(c.GetValue()*1e9) / 1e9
			}
			if h := m.GetHistogram(); h != nil && h.GetSampleCount() != 0 {
				out[key("_count")] = float64(h.GetSampleCount())
				out[key("_sum")] = math.Round(h.GetSampleSum()*1e9) / 1e9
				for _, b := range h.GetBucket() {
					out[key("_bucket", fmt.Sprintf("le=%q", fmt.Sprint(b.GetUpperBound())))] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return out
}

// withExpectedDimensions adds expectedDimensions to the series of the dimensioned metrics.
func withExpectedDimensions(metric string, labels map[string]string) {
	if !slices.Contains(dimensioned, metric) {
		return
	}
	for k, v := range expectedDimensions(labels["service_name"]) {
		labels[k] = v
	}
}

func dimensionsConfig() *orphanmetrics.Settings {
	cfg := orphanmetrics.NewDefaultSettings()
	cfg.Dimensions = testDimensions
	return cfg
}

// TestDimensionsScenarios: every scenario with the dimension attributes gives, observed (sent
// whole), the series the scenario gives without dimensions, each series of a service with that
// service's dimension labels; unpropagated_total carries none. Annotated, the same, but for
// runs_total (see withoutRunDimensions).
func TestDimensionsScenarios(t *testing.T) {
	var sawResearch, sawDefault, sawUnpropagated bool
	for _, sc := range loadScenarioFiles(t) {
		t.Run(sc.dir, func(t *testing.T) {
			want := flatSeries(t, annotatedRecorder(t, sc.traces, nil), withExpectedDimensions)
			require.NotEmpty(t, want)
			td := withDimensionAttributes(sc.traces)
			observed := flatSeries(t, observedRecorder(t, []ptrace.Traces{td}, zap.NewNop(), true, dimensionsConfig()), nil)
			assert.Equal(t, want, observed, "observe")
			annotated := flatSeries(t, annotatedRecorder(t, td, dimensionsConfig()), nil)
			assert.Equal(t, withoutRunDimensions(want), withoutRunDimensions(annotated), "annotate")
			for k := range want {
				sawResearch = sawResearch || strings.Contains(k, `team="research"`)
				sawDefault = sawDefault || strings.Contains(k, `deployment_environment_name="unknown"`)
				sawUnpropagated = sawUnpropagated || strings.HasPrefix(k, "orphanwatch_unpropagated_total{")
			}
		})
	}
	// The scenarios exercise each rule: a span attribute over its resource's, a default, a
	// metric without dimensions.
	assert.True(t, sawResearch, "a series of researcher")
	assert.True(t, sawDefault, "a series of search-tool")
	assert.True(t, sawUnpropagated, "an unpropagated edge")
}

// withoutRunDimensions sums the runs_total series over their dimension labels. In annotate mode
// the outcome of a run that the processor closed after its final attempt had left comes as an
// orphanwatch.verdict event, which carries the operation's attributes but not the dimensions'
// (the processor does not copy them): such a run is counted with the defaults (README,
// "Dimensions"). Every run of the scenarios is closed so (at the processor's shutdown).
func withoutRunDimensions(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "orphanwatch_runs_total{") {
			name, labels, _ := strings.Cut(k, "{")
			k = name + "{" + stripDims(labels)
		}
		out[k] += v
	}
	return out
}

// stripDims leaves the dimension labels out of a sorted label list (`a="x",b="y"}`).
func stripDims(labels string) string {
	var keep []string
	for p := range strings.SplitSeq(strings.TrimSuffix(labels, "}"), ",") {
		if !strings.HasPrefix(p, "deployment_environment_name=") && !strings.HasPrefix(p, "team=") {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, ",") + "}"
}

// TestDimensionsS2: S2's series by dimension, as numbers (SCENARIOS.md S2): the researcher's
// orphaned gpt-4o call under team research (its spans' attribute), search-tool's orphaned span
// under the default environment, gateway's cancelled root under its resource's values; an
// annotated run carried on an event under the defaults.
func TestDimensionsS2(t *testing.T) {
	var td ptrace.Traces
	for _, sc := range loadScenarioFiles(t) {
		if sc.dir == "s02_caller_leaves" {
			td = withDimensionAttributes(sc.traces)
		}
	}
	want := map[string]float64{
		`orphanwatch_model_calls_total{deployment_environment_name="prod",liveness="orphaned",model="gpt-4o",service_name="researcher",team="research"}`:                    1,
		`orphanwatch_spend_tokens_total{deployment_environment_name="prod",direction="input",liveness="orphaned",model="gpt-4o",service_name="researcher",team="research"}`: 3000,
		`orphanwatch_spend_cost_usd_total{deployment_environment_name="prod",liveness="orphaned",model="gpt-4o",service_name="researcher",team="research"}`:                 0.0155,
		`orphanwatch_spend_seconds_total{deployment_environment_name="prod",liveness="orphaned",service_name="researcher",team="research"}`:                                 2.22,
		`orphanwatch_attempts_total{deployment_environment_name="prod",liveness="started_after_gone",operation="chat gpt-4o",service_name="researcher",team="research"}`:    1,
		`orphanwatch_outlive_seconds_count{deployment_environment_name="unknown",service_name="search-tool",team="platform"}`:                                               1,
		`orphanwatch_outlive_seconds_sum{deployment_environment_name="unknown",service_name="search-tool",team="platform"}`:                                                 1.39,
		`orphanwatch_roots_total{deployment_environment_name="prod",end_reason="cancelled",service_name="gateway",team="platform"}`:                                         1,
		`orphanwatch_orphaned_depth_hops_sum{deployment_environment_name="prod",service_name="gateway",team="platform"}`:                                                    2,
		`orphanwatch_unpropagated_total{callee_service="researcher",caller_service="gateway"}`:                                                                              1,
		`orphanwatch_runs_total{deployment_environment_name="prod",operation="chat gpt-4o",outcome="delivered_to_nobody",service_name="researcher",team="research"}`:        1,
	}
	observed := flatSeries(t, observedRecorder(t, []ptrace.Traces{td}, zap.NewNop(), true, dimensionsConfig()), nil)
	annotated := flatSeries(t, annotatedRecorder(t, td, dimensionsConfig()), nil)
	for k, v := range want {
		assert.InDelta(t, v, observed[k], 1e-9, "observe: %s", k)
		assert.InDelta(t, v, annotated[k], 1e-9, "annotate: %s", k)
	}
	// The researcher's search run: the processor knew it over after its final attempt had
	// left, and carried its outcome on an event.
	assert.Equal(t, 1.0, observed[`orphanwatch_runs_total{deployment_environment_name="prod",operation="GET search-tool:8080",outcome="delivered_to_nobody",service_name="researcher",team="research"}`], "observe")
	assert.Equal(t, 1.0, annotated[`orphanwatch_runs_total{deployment_environment_name="unknown",operation="GET search-tool:8080",outcome="delivered_to_nobody",service_name="researcher"}`],
		"annotate: the run's outcome came on an event, without the dimensions")
}

// TestDimensionsObserveAsSpansEnd: with dimensions, every scenario's spans arriving as they
// end, in any split into batches, observed, give the series without dimensions, each with its
// service's dimension labels (the values are read when each span arrives, its resource's once
// per batch).
func TestDimensionsObserveAsSpansEnd(t *testing.T) {
	cases := loadScenarioFiles(t)
	want := make([]map[string]float64, len(cases))
	tds := make([]ptrace.Traces, len(cases))
	for i, sc := range cases {
		tds[i] = withDimensionAttributes(sc.traces)
		want[i] = flatSeries(t, annotatedRecorder(t, sc.traces, nil), withExpectedDimensions)
	}
	rapid.Check(t, func(rt *rapid.T) {
		i := rapid.IntRange(0, len(cases)-1).Draw(rt, "scenario")
		batches := arrivalSplit(rt, tds[i], true)
		got := flatSeries(rt, observedRecorder(rt, batches, zap.NewNop(), true, dimensionsConfig()), nil)
		assert.Equal(rt, want[i], got, "%s: %d batches", cases[i].dir, len(batches))
	})
}

// TestDimensionsReadAtArrival: observing, the dimension values are those the spans had when
// they arrived: spans changed after ConsumeTraces returned (as a later processor or the pool
// that reuses their memory may) do not change the series of verdicts decided later.
func TestDimensionsReadAtArrival(t *testing.T) {
	var td ptrace.Traces
	for _, sc := range loadScenarioFiles(t) {
		if sc.dir == "s02_caller_leaves" {
			td = withDimensionAttributes(sc.traces)
		}
	}
	want := flatSeries(t, observedRecorder(t, []ptrace.Traces{td}, zap.NewNop(), true, dimensionsConfig()), nil)

	cfg := dimensionsConfig()
	cfg.Prices = prices.Scenarios()
	cfg.DecisionWait = time.Hour
	rec, err := orphanmetrics.NewRecorder(cfg)
	require.NoError(t, err)
	obs, err := orphanmetrics.NewObserving(cfg, rec, zap.NewNop(), nil, func() time.Time { return scenarios.T0.Add(time.Minute) })
	require.NoError(t, err)
	obs.Consume(td)
	require.Empty(t, flatSeries(t, rec, nil), "nothing decided yet: the trace waits")
	for _, rs := range td.ResourceSpans().All() {
		rs.Resource().Attributes().PutStr("deployment.environment.name", "changed")
		rs.Resource().Attributes().PutStr("team", "changed")
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				sp.Attributes().PutStr("team", "changed")
			}
		}
	}
	obs.Shutdown() // every verdict decided now, after the change
	got := flatSeries(t, rec, nil)
	assert.Equal(t, want, got)
	for k := range got {
		assert.NotContains(t, k, "changed")
	}
}
