package orphanmetrics_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"pgregory.net/rapid"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/rulesconfig"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/judged"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/prices"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor"
)

// The two ways to run (DESIGN.md "Two ways to run") give the same series for the same spans:
// the observing exporter (verdicts decided in the exporter as spans arrive, nothing held) and
// the orphan processor with the exporter reading its attributes (annotate).

const scenarioDir = "../../testdata/scenarios"

type scenarioFile struct {
	dir    string
	traces ptrace.Traces
}

func loadScenarioFiles(t testing.TB) []scenarioFile {
	t.Helper()
	dirs, tds, err := scenarios.LoadDirs(scenarioDir)
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	var out []scenarioFile
	for i, d := range dirs {
		out = append(out, scenarioFile{dir: filepath.Base(d), traces: tds[i]})
	}
	return out
}

// annotatedSeries runs td whole through the orphan processor (decided at shutdown, as one
// decision) and records its output with the exporter's recorder (annotate mode).
func annotatedSeries(t require.TestingT, td ptrace.Traces) map[string]float64 {
	return seriesOf(t, annotatedRecorder(t, td, nil))
}

// annotatedRecorder is annotatedSeries' recorder, made with cfg (nil: the defaults).
func annotatedRecorder(t require.TestingT, td ptrace.Traces, cfg *orphanmetrics.Settings) *orphanmetrics.Recorder {
	one := ptrace.NewTraces()
	td.CopyTo(one) // the processor writes on the spans
	rec, err := orphanmetrics.NewRecorder(cfg)
	require.NoError(t, err)
	for _, out := range judged.Traces(t, one) {
		rec.Record(out)
	}
	return rec
}

// testClock is a clock a test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

// observedSeries gives the batches to an observing recorder, each as its spans' collector
// receives it (a second after the latest of its spans ended), ticking the clock between them,
// then shuts it down. With releaseEach, each batch is decided before the next arrives (its
// wait passed); else all arrive within the wait.
func observedSeries(t require.TestingT, batches []ptrace.Traces, logger *zap.Logger, releaseEach bool) map[string]float64 {
	return seriesOf(t, observedRecorder(t, batches, logger, releaseEach, orphanmetrics.NewDefaultSettings()))
}

// observedRecorder is observedSeries' recorder, made with cfg (its prices and decision_wait
// set as observedSeries' are).
func observedRecorder(t require.TestingT, batches []ptrace.Traces, logger *zap.Logger, releaseEach bool, cfg *orphanmetrics.Settings) *orphanmetrics.Recorder {
	cfg.Prices = prices.Scenarios()
	cfg.DecisionWait = time.Hour // as the processor's: every span arrives within the wait
	rec, err := orphanmetrics.NewRecorder(cfg)
	require.NoError(t, err)
	clk := &testClock{now: scenarios.T0}
	obs, err := orphanmetrics.NewObserving(cfg, rec, logger, nil, clk.Now)
	require.NoError(t, err)
	for _, b := range batches {
		tdwalk.Spans(b, func(sp ptrace.Span) { clk.advanceTo(sp.EndTimestamp().AsTime().Add(time.Second)) })
		obs.Observer().Tick()
		obs.Consume(b)
		if releaseEach {
			// As if the batch's wait had passed (the processor's split tests do the same).
			obs.Observer().ReleaseDue(clk.Now().Add(24 * time.Hour))
		}
	}
	obs.Shutdown()
	return rec
}

// seriesOf is every non-zero series of the recorder (e2e.GatheredSeries), its health counters
// left out.
func seriesOf(t require.TestingT, rec *orphanmetrics.Recorder) map[string]float64 {
	return e2e.GatheredSeries(t, rec.Gatherer(), "orphanwatch_label_overflow_total", "orphanwatch_spans_skipped_total")
}

// arrivalSplit draws an arrival of td's spans: in the order they end (ties in any order) when
// asEnded, else in any order, split into any number of batches.
func arrivalSplit(rt *rapid.T, td ptrace.Traces, asEnded bool) []ptrace.Traces {
	spans := tdwalk.Flatten(td)
	idx := make([]int, len(spans))
	for i := range idx {
		idx[i] = i
	}
	order := rapid.Permutation(idx).Draw(rt, "order")
	if asEnded {
		tdwalk.SortByEnd(spans, order)
	}
	nb := rapid.IntRange(1, len(spans)).Draw(rt, "batches")
	cuts := map[int]bool{}
	for len(cuts) < nb-1 {
		cuts[rapid.IntRange(1, len(spans)-1).Draw(rt, fmt.Sprintf("cut%d", len(cuts)))] = true
	}
	return tdwalk.Batches(spans, order, cuts)
}

// TestObserveEqualsAnnotateWhole: every scenario sent whole gives the same series observed as
// annotated.
func TestObserveEqualsAnnotateWhole(t *testing.T) {
	for _, sc := range loadScenarioFiles(t) {
		t.Run(sc.dir, func(t *testing.T) {
			want := annotatedSeries(t, sc.traces)
			require.NotEmpty(t, want)
			got := observedSeries(t, []ptrace.Traces{sc.traces}, zap.NewNop(), true)
			assert.Equal(t, want, got)
		})
	}
}

// TestObserveEqualsAnnotateAsSpansEnd: every scenario's spans arriving as they end, in any
// split into batches, observed, give the series of the processor's one decision (annotate).
func TestObserveEqualsAnnotateAsSpansEnd(t *testing.T) { checkArrivals(t, true) }

// checkArrivals checks every scenario's spans observed as drawn by arrivalSplit (in the order
// they end when asEnded, each batch decided before the next arrives; else in any order, all
// within the wait) against the processor's one decision.
func checkArrivals(t *testing.T, asEnded bool) {
	cases := loadScenarioFiles(t)
	want := make([]map[string]float64, len(cases))
	for i, sc := range cases {
		want[i] = annotatedSeries(t, sc.traces)
	}
	rapid.Check(t, func(rt *rapid.T) {
		i := rapid.IntRange(0, len(cases)-1).Draw(rt, "scenario")
		batches := arrivalSplit(rt, cases[i].traces, asEnded)
		got := observedSeries(rt, batches, zap.NewNop(), asEnded)
		assert.Equal(rt, want[i], got, "%s: %d batches", cases[i].dir, len(batches))
	})
}

// TestObserveLogsAnnotatedSpansOnce: spans that already carry the processor's verdicts are
// observed as any span (their attributes ignored), and the log says once which mode to use.
func TestObserveLogsAnnotatedSpansOnce(t *testing.T) {
	sc := loadScenarioFiles(t)[1]
	f := orphanprocessor.NewFactory()
	cfg := f.CreateDefaultConfig().(*orphanprocessor.Config)
	cfg.Prices = prices.Scenarios()
	sink := new(consumertest.TracesSink)
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), cfg, sink)
	require.NoError(t, err)
	one := ptrace.NewTraces()
	sc.traces.CopyTo(one)
	require.NoError(t, p.ConsumeTraces(context.Background(), one))
	require.NoError(t, p.Shutdown(context.Background()))

	core, logs := observer.New(zap.WarnLevel)
	got := observedSeries(t, sink.AllTraces(), zap.New(core), false)
	assert.Equal(t, 1, logs.FilterMessageSnippet("mode: annotate").Len(), "said once")
	assert.Equal(t, annotatedSeries(t, sc.traces), got, "the written verdicts are not counted twice")
}

// TestObserveEqualsAnnotateAnyOrder: every scenario's spans in any order, in any split into
// batches (all within decision_wait), observed, give the series of the processor's one
// decision.
func TestObserveEqualsAnnotateAnyOrder(t *testing.T) { checkArrivals(t, false) }

// TestObservePrefixPricedLogged: observing, a model priced by the entry that prefixes its
// name (gpt-4o-mini by gpt-4o) is logged once, with both names.
func TestObservePrefixPricedLogged(t *testing.T) {
	cfg := orphanmetrics.NewDefaultSettings()
	cfg.Prices = map[string]rulesconfig.PriceConfig{"gpt-4o": prices.Scenarios()["gpt-4o"]}
	rec, err := orphanmetrics.NewRecorder(cfg)
	require.NoError(t, err)
	core, logs := observer.New(zap.InfoLevel)
	obs, err := orphanmetrics.NewObserving(cfg, rec, zap.New(core), nil, nil)
	require.NoError(t, err)
	for _, sc := range loadScenarioFiles(t) {
		if sc.dir == "s01_happy_fanout" || sc.dir == "s02_caller_leaves" {
			obs.Consume(sc.traces)
		}
	}
	obs.Shutdown()
	lines := logs.FilterMessageSnippet("prefixes its name").All()
	require.Len(t, lines, 1, "once for gpt-4o-mini, never for gpt-4o")
	assert.Equal(t, "gpt-4o-mini", lines[0].ContextMap()["model"])
	assert.Equal(t, "gpt-4o", lines[0].ContextMap()["prices_entry"])
}

// TestObserveConcurrentConsumers: traces consumed by several goroutines at once, with the
// tick running, give the series of the same traces consumed one after another (under -race:
// no data race between intake, decisions and ticks).
func TestObserveConcurrentConsumers(t *testing.T) {
	cases := loadScenarioFiles(t)
	run := func(parallel bool) map[string]float64 {
		cfg := orphanmetrics.NewDefaultSettings()
		cfg.Prices = prices.Scenarios()
		cfg.DecisionWait = time.Hour
		cfg.DecisionWaitAfterRoot = 0
		rec, err := orphanmetrics.NewRecorder(cfg)
		require.NoError(t, err)
		obs, err := orphanmetrics.NewObserving(cfg, rec, zap.NewNop(), nil, nil)
		require.NoError(t, err)
		obs.Start()
		var wg sync.WaitGroup
		for _, sc := range cases {
			td := ptrace.NewTraces()
			sc.traces.CopyTo(td)
			if parallel {
				wg.Add(1)
				go func() { defer wg.Done(); obs.Consume(td) }()
			} else {
				obs.Consume(td)
			}
		}
		wg.Wait()
		obs.Shutdown()
		return seriesOf(t, rec)
	}
	want := run(false)
	require.NotEmpty(t, want)
	assert.Equal(t, want, run(true))
}
