package orphanprocessor

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"pgregory.net/rapid"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/prices"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/internal/verdictattrs"
)

const scenarioDir = "../../testdata/scenarios"

// scenarioConfig is the default configuration with the price table of SCENARIOS.md.
func scenarioConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.DecisionWait = time.Hour // released by Shutdown: every span arrives within the wait
	cfg.Prices = prices.Scenarios()
	return cfg
}

type scenarioCase struct {
	dir      string
	traces   ptrace.Traces
	expected scenarios.Expected
}

func loadScenarios(t *testing.T) []scenarioCase {
	t.Helper()
	dirs, tds, err := scenarios.LoadDirs(scenarioDir)
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	var out []scenarioCase
	for i, d := range dirs {
		exp, err := scenarios.LoadExpected(filepath.Join(d, "expected.json"))
		require.NoError(t, err, d)
		out = append(out, scenarioCase{dir: filepath.Base(d), traces: tds[i], expected: exp})
	}
	return out
}

// runBatches feeds the batches to a fresh processor and returns what came out.
func runBatches(t interface{ Fatal(...any) }, batches []ptrace.Traces) []ptrace.Traces {
	sink := new(consumertest.TracesSink)
	p, err := newOrphanProcessor(nopSettings(), scenarioConfig(), sink)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := p.ConsumeTraces(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sink.AllTraces()
}

// verdictsOf maps "trace/span/name" to the orphanwatch.* attributes of every output span (JSON
// encoded, sorted, so duplicates compare as a multiset), and counts the spans.
func verdictsOf(out []ptrace.Traces) (map[string][]string, int) {
	m := map[string][]string{}
	n := 0
	for _, td := range out {
		for _, f := range tdwalk.Flatten(td) {
			n++
			tid, sid := f.Span.TraceID(), f.Span.SpanID()
			key := hex.EncodeToString(tid[:]) + "/" + hex.EncodeToString(sid[:]) + "/" + f.Span.Name()
			m[key] = append(m[key], encodeVerdict(f.Span.Attributes()))
			sort.Strings(m[key])
		}
	}
	return m, n
}

func encodeVerdict(a pcommon.Map) string {
	v := map[string]any{}
	a.Range(func(k string, val pcommon.Value) bool {
		if strings.HasPrefix(k, "orphanwatch.") {
			switch val.Type() {
			case pcommon.ValueTypeDouble:
				v[k] = math.Round(val.Double()*1e9) / 1e9
			default:
				v[k] = val.AsRaw()
			}
		}
		return true
	})
	b, _ := json.Marshal(v)
	return string(b)
}

func expectedVerdict(attrs map[string]any) string {
	v := map[string]any{}
	for k, x := range attrs {
		switch y := x.(type) {
		case float64:
			if y == math.Trunc(y) && !strings.HasSuffix(k, "after_gone") && !strings.HasSuffix(k, "cost") {
				v[k] = int64(y)
			} else {
				v[k] = math.Round(y*1e9) / 1e9
			}
		case int:
			v[k] = int64(y)
		default:
			v[k] = x
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// checkScenario compares the output with expected.json exactly.
func checkScenario(t require.TestingT, sc scenarioCase, out []ptrace.Traces) {
	got, n := verdictsOf(out)
	require.Equal(t, sc.traces.SpanCount(), n, "%s: spans in = spans out", sc.dir)
	want := map[string][]string{}
	unchecked := map[string]bool{}
	for _, s := range sc.expected.Spans {
		key := s.TraceID + "/" + s.SpanID + "/" + s.Name
		if s.Attributes == nil {
			unchecked[key] = true
			continue
		}
		want[key] = append(want[key], expectedVerdict(s.Attributes))
		sort.Strings(want[key])
	}
	for key, vs := range got {
		if unchecked[key] {
			for _, v := range vs {
				assert.True(t, v == "{}" || v == `{"orphanwatch.liveness":"unknown"}`, "%s %s: malformed span got %s", sc.dir, key, v)
			}
			continue
		}
		assert.Equal(t, want[key], vs, "%s span %s", sc.dir, key)
	}
	for key := range want {
		_, ok := got[key]
		assert.True(t, ok, "%s: expected span %s missing from the output", sc.dir, key)
	}
}

// TestScenarios checks every scenario's verdicts against its expected.json, with all spans in
// one batch.
func TestScenarios(t *testing.T) {
	for _, sc := range loadScenarios(t) {
		t.Run(sc.dir, func(t *testing.T) {
			checkScenario(t, sc, effective(t, runBatches(t, []ptrace.Traces{sc.traces})))
		})
	}
}

// TestScenariosAnyArrivalOrder is S8 as a property, over every scenario: the spans shuffled and
// split into random batches (at least five where there are enough spans) give exactly the same
// verdicts.
func TestScenariosAnyArrivalOrder(t *testing.T) {
	forAnyScenario(t, func(rt *rapid.T, sc scenarioCase) {
		spans := tdwalk.Flatten(sc.traces)
		perm := rapid.Permutation(indexes(len(spans))).Draw(rt, "order")
		minBatches := min(5, len(spans))
		nb := rapid.IntRange(minBatches, len(spans)).Draw(rt, "batches")
		checkScenario(rt, sc, effective(rt, runBatches(rt, cutBatches(rt, spans, perm, nb))))
	})
}

// forAnyScenario checks prop on the scenarios rapid draws.
func forAnyScenario(t *testing.T, prop func(rt *rapid.T, sc scenarioCase)) {
	cases := loadScenarios(t)
	rapid.Check(t, func(rt *rapid.T) {
		prop(rt, cases[rapid.IntRange(0, len(cases)-1).Draw(rt, "scenario")])
	})
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestScenariosAnySplit is the time model's property (issue 11), over every scenario: the
// spans arrive in the order they end (as SDKs export them, ties in any order), split into any
// number of separate decisions (the processor releases everything it holds between two
// batches: a root's wait after it, decision_wait without it), and the verdicts, those written
// on the spans and those carried for them, are exactly those of one decision.
func TestScenariosAnySplit(t *testing.T) {
	forAnyScenario(t, func(rt *rapid.T, sc scenarioCase) {
		batches := endOrderSplit(rt, sc.traces)
		checkScenario(rt, sc, effective(rt, runDecisions(rt, batches)))
	})
}

// runDecisions feeds each batch to a fresh processor and releases everything held after each,
// as if each batch's wait had passed; then shuts it down. The processor's clock reads a second
// after the latest end of the batch's spans (they are exported when they end): that is what
// run_timeout is measured against.
func runDecisions(t interface{ Fatal(...any) }, batches []ptrace.Traces) []ptrace.Traces {
	sink := new(consumertest.TracesSink)
	p, err := newOrphanProcessor(nopSettings(), scenarioConfig(), sink)
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock(scenarios.T0)
	p.clock = clk
	ctx := context.Background()
	for _, b := range batches {
		for _, f := range tdwalk.Flatten(b) {
			if end := f.Span.EndTimestamp().AsTime().Add(time.Second); end.After(clk.Now()) {
				clk.Advance(end.Sub(clk.Now()))
			}
		}
		if err := p.ConsumeTraces(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := p.release(ctx, p.due(clk.Now().Add(24*time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	return sink.AllTraces()
}

// effective turns the output into what one decision would have written: each carried verdict
// (an orphanwatch.verdict event) written onto the span it is for, the events, the deferred
// marks and the carrier spans removed. A verdict carried twice, or for a span that is not in
// the output, fails the test.
func effective(t require.TestingT, out []ptrace.Traces) []ptrace.Traces {
	carried := verdictattrs.CollectCarried(out)
	var res []ptrace.Traces
	for _, td := range out {
		td2 := ptrace.NewTraces()
		td.CopyTo(td2)
		tdwalk.RemoveSpans(td2, func(sp ptrace.Span) bool {
			if verdictattrs.IsCarrier(sp) {
				return true
			}
			sp.Events().RemoveIf(func(ev ptrace.SpanEvent) bool { return ev.Name() == verdict.EventVerdict })
			// A deferred span takes one whole verdict; parts go to the span they name (the
			// first of exact duplicates).
			f := carried.Final(sp)
			assert.Equal(t, f.Deferred, f.Whole, "span %s/%s %s: deferred %v, took a whole verdict %v",
				sp.TraceID(), sp.SpanID(), sp.Kind(), f.Deferred, f.Whole)
			if f.Carried {
				f.Attrs.CopyTo(sp.Attributes())
			}
			return false
		})
		res = append(res, td2)
	}
	for _, key := range carried.Left() {
		assert.Fail(t, "a verdict was carried for a span that is not in the output", key)
	}
	return res
}

// TestScenariosAnySplitMetrics is the same property on the metric series: every scenario's
// spans, in the order they end, split into any number of releases, recorded by the
// orphanmetrics exporter's recorder (which counts carried verdicts as the spans they are for
// and deferred spans nowhere), give exactly the series of one decision.
func TestScenariosAnySplitMetrics(t *testing.T) {
	forAnyScenario(t, func(rt *rapid.T, sc scenarioCase) {
		batches := endOrderSplit(rt, sc.traces)
		one := ptrace.NewTraces()
		sc.traces.CopyTo(one)
		want := recordedSeries(rt, runBatches(rt, []ptrace.Traces{one}))
		got := recordedSeries(rt, runDecisions(rt, batches))
		assert.Equal(rt, want, got, "%s: %d releases", sc.dir, len(batches))
	})
}

// recordedSeries records the output with the exporter's recorder and flattens every non-zero
// series (histograms by count, sum and buckets), leaving out the exporter's own health counters.
func recordedSeries(t require.TestingT, out []ptrace.Traces) map[string]float64 {
	rec, err := orphanmetrics.NewRecorder(orphanmetrics.NewDefaultSettings())
	require.NoError(t, err)
	for _, td := range out {
		rec.Record(td)
	}
	return e2e.GatheredSeries(t, rec.Gatherer(), "orphanwatch_label_overflow_total", "orphanwatch_spans_skipped_total")
}

// endOrderSplit draws a split of td's spans, in the order they end (ties in any order), into
// any number of batches.
func endOrderSplit(rt *rapid.T, td ptrace.Traces) []ptrace.Traces {
	spans := tdwalk.Flatten(td)
	order := rapid.Permutation(indexes(len(spans))).Draw(rt, "ties")
	tdwalk.SortByEnd(spans, order)
	nb := rapid.IntRange(1, len(spans)).Draw(rt, "decisions")
	return cutBatches(rt, spans, order, nb)
}

// cutBatches sends spans in order (indexes into spans) as nb batches, cut where rt draws.
func cutBatches(rt *rapid.T, spans []tdwalk.Flat, order []int, nb int) []ptrace.Traces {
	cuts := map[int]bool{}
	for len(cuts) < nb-1 {
		cuts[rapid.IntRange(1, len(spans)-1).Draw(rt, fmt.Sprintf("cut%d", len(cuts)))] = true
	}
	return tdwalk.Batches(spans, order, cuts)
}

// oneSpanBatches splits td into one batch per span, in td's order.
func oneSpanBatches(td ptrace.Traces) []ptrace.Traces {
	var out []ptrace.Traces
	for _, f := range tdwalk.Flatten(td) {
		b := ptrace.NewTraces()
		f.AppendTo(b)
		out = append(out, b)
	}
	return out
}

// runConcurrently feeds the batches to a fresh processor from senders goroutines at once (batch
// i to goroutine i mod senders), as a collector's receivers do, then shuts it down.
func runConcurrently(t *testing.T, batches []ptrace.Traces, senders int) []ptrace.Traces {
	sink := new(consumertest.TracesSink)
	p, err := newOrphanProcessor(nopSettings(), scenarioConfig(), sink)
	require.NoError(t, err)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range senders {
		wg.Go(func() {
			<-start
			for i := g; i < len(batches); i += senders {
				assert.NoError(t, p.ConsumeTraces(context.Background(), batches[i]))
			}
		})
	}
	close(start)
	wg.Wait()
	traces, spans := p.heldCount()
	assert.Equal(t, heldSpans(batches), spans, "every span with a trace ID is held once")
	assert.LessOrEqual(t, traces, p.cfg.Limits.MaxTraces)
	require.NoError(t, p.Shutdown(context.Background()))
	return sink.AllTraces()
}

// heldSpans counts the spans of the batches that have a trace ID (the others leave at once).
func heldSpans(batches []ptrace.Traces) int {
	n := 0
	for _, b := range batches {
		for _, f := range tdwalk.Flatten(b) {
			if !f.Span.TraceID().IsEmpty() {
				n++
			}
		}
	}
	return n
}

// TestConcurrentIntakeEqualsSerial takes every scenario's spans in, one span a batch, from
// several goroutines at once (the shards locked by each in turn, under -race), and checks the
// verdicts, written and carried, equal those of the same batches taken in one after another
// (which equal expected.json).
func TestConcurrentIntakeEqualsSerial(t *testing.T) {
	for _, sc := range loadScenarios(t) {
		t.Run(sc.dir, func(t *testing.T) {
			serial := effective(t, runBatches(t, oneSpanBatches(sc.traces)))
			checkScenario(t, sc, serial)
			want, _ := verdictsOf(serial)
			for round := range 3 {
				got, _ := verdictsOf(effective(t, runConcurrently(t, oneSpanBatches(sc.traces), 4)))
				require.Equal(t, want, got, "round %d", round)
			}
		})
	}
}

// TestReplayTogetherScenarios replays every scenario on its own clock with the default waits,
// the spans that end together handed over at that moment one span a batch, all from a
// goroutine each (Replay.ConsumeTogether): the verdicts are those of expected.json, as when
// the batches come one at a time (TestReplayScenarios).
func TestReplayTogetherScenarios(t *testing.T) {
	for _, sc := range loadScenarios(t) {
		t.Run(sc.dir, func(t *testing.T) {
			cfg := scenarioConfig()
			cfg.DecisionWait = 30 * time.Second
			r, sink := newTestReplay(t, cfg)
			for _, e := range tdwalk.ByEnd(sc.traces) {
				var batches []ptrace.Traces
				for _, f := range e.Spans {
					b := ptrace.NewTraces()
					f.AppendTo(b)
					batches = append(batches, b)
				}
				require.NoError(t, r.ConsumeTogether(context.Background(), e.End.AsTime(), batches))
			}
			drainReplay(t, r)
			checkScenario(t, sc, effective(t, sink.AllTraces()))
		})
	}
}
