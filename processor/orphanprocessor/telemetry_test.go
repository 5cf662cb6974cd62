package orphanprocessor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// points returns the int64 data points of a counter, up-down counter or gauge by their
// attribute set, written as "k=v,k=v".
func points(t *testing.T, tel *componenttest.Telemetry, name string) map[string]int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	require.NoError(t, err, name)
	out := map[string]int64{}
	add := func(set attribute.Set, v int64) { out[set.Encoded(attribute.DefaultEncoder())] += v }
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if p.Value != 0 || !d.IsMonotonic { // counters start at 0 (telemetry.zero): nothing counted
				add(p.Attributes, p.Value)
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			add(p.Attributes, p.Value)
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			add(p.Attributes, int64(p.Count))
		}
	default:
		t.Fatalf("%s: unexpected data %T", name, m.Data)
	}
	return out
}

// testTelemetry is a collector's telemetry for the test, shut down when it ends.
func testTelemetry(t *testing.T) *componenttest.Telemetry {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	return tel
}

func settingsFor(tel *componenttest.Telemetry, id component.ID) processor.Settings {
	set := processortest.NewNopSettings(metadata.Type)
	set.ID = id
	set.TelemetrySettings = tel.NewTelemetrySettings()
	return set
}

// TestTwoInstancesReadApart runs `orphan` and `orphan/custom` on one collector's telemetry (one
// meter provider, as the service gives every component): each instance's measurements carry
// its own processor attribute, the held counts do not add up into one series, and the observed
// gauges of one do not overwrite the other's.
func TestTwoInstancesReadApart(t *testing.T) {
	tel := testTelemetry(t)
	idA := component.NewID(metadata.Type)
	idB := component.NewIDWithName(metadata.Type, "custom")
	a, _ := newTestProcessorWith(t, settingsFor(tel, idA), testConfig(time.Hour), nil)
	b, _ := newTestProcessorWith(t, settingsFor(tel, idB), testConfig(time.Hour), nil)

	// a holds one trace of 2 spans; b holds three traces of one root each (three root records).
	td := ptrace.NewTraces()
	addSpan(td, "gw", 1, 1, 0, ptrace.SpanKindServer, 0, 1)
	addSpan(td, "gw", 1, 2, 1, ptrace.SpanKindClient, 0.1, 0.5)
	require.NoError(t, a.ConsumeTraces(context.Background(), td))
	td = ptrace.NewTraces()
	for tr := byte(1); tr <= 3; tr++ {
		addSpan(td, "gw", tr, 1, 0, ptrace.SpanKindServer, 0, 1)
	}
	require.NoError(t, b.ConsumeTraces(context.Background(), td))

	keyA, keyB := "processor="+idA.String(), "processor="+idB.String()
	assert.Equal(t, map[string]int64{keyA: 1, keyB: 3}, points(t, tel, "otelcol_processor_orphan_traces_held"))
	assert.Equal(t, map[string]int64{keyA: 2, keyB: 3}, points(t, tel, "otelcol_processor_orphan_spans_held"))
	assert.Equal(t, map[string]int64{keyA: 1, keyB: 3}, points(t, tel, "otelcol_processor_orphan_root_records"))

	require.NoError(t, a.Shutdown(context.Background()))
	assert.Equal(t, map[string]int64{keyA: 0, keyB: 3}, points(t, tel, "otelcol_processor_orphan_traces_held"))
	assert.Equal(t, map[string]int64{keyA: 2}, points(t, tel, "otelcol_processor_orphan_spans_processed"))
	assert.Equal(t, map[string]int64{keyA: 1}, points(t, tel, "otelcol_processor_orphan_decision_wait"))
	// b's gauge callback still reports; a's went with its shutdown.
	assert.Equal(t, map[string]int64{keyB: 3}, points(t, tel, "otelcol_processor_orphan_root_records"))
	require.NoError(t, b.Shutdown(context.Background()))
	assert.Equal(t, map[string]int64{keyA: 2, keyB: 3}, points(t, tel, "otelcol_processor_orphan_spans_processed"))
}

// TestRefusedReleaseCountedAsDropped: when the next consumer refuses spans the release loop
// passes on, nobody can retry them: they are counted as dropped by reason and logged, at most
// once per interval. A refusal at shutdown is counted too, and returned.
func TestRefusedReleaseCountedAsDropped(t *testing.T) {
	tel := testTelemetry(t)
	set := settingsFor(tel, component.NewID(metadata.Type))
	core, logs := observer.New(zap.WarnLevel)
	set.Logger = zap.New(core)
	refuse := errors.New("data refused due to high memory usage")
	const wait = time.Second
	p, clk := newTestProcessorWith(t, set, testConfig(wait), consumertest.NewErr(refuse))
	startTestProcessor(t, p, clk)

	send := func(trace byte, spans int) {
		td := ptrace.NewTraces()
		addSpan(td, "gw", trace, 1, 0, ptrace.SpanKindServer, 0, 1)
		for i := 2; i <= spans; i++ {
			addSpan(td, "gw", trace, byte(i), 1, ptrace.SpanKindClient, 0.1, 0.5)
		}
		require.NoError(t, p.ConsumeTraces(context.Background(), td), "the caller is not told: its spans are held")
		clk.waitArmed(t)
		clk.Advance(wait)
		clk.waitIdle(t, p) // released (and refused)
	}
	send(1, 3)
	send(2, 2)
	want := map[string]int64{"processor=orphan,reason=downstream_refused": 5}
	assert.Equal(t, want, points(t, tel, "otelcol_processor_orphan_spans_dropped"))
	assert.Equal(t, map[string]int64{"processor=orphan": 5}, points(t, tel, "otelcol_processor_orphan_downstream_errors"))
	require.Equal(t, 1, logs.Len(), "one warning per interval")
	assert.Equal(t, int64(3), logs.All()[0].ContextMap()["dropped_spans"])

	clk.Advance(dropLogInterval)
	send(3, 1)
	require.Equal(t, 2, logs.Len())
	assert.Equal(t, int64(3), logs.All()[1].ContextMap()["dropped_spans"], "the spans held back since the last line, and this one")
}

// TestPermanentRefusalAtShutdown: spans refused with a permanent error at shutdown are counted
// under their own reason, and Shutdown returns the error.
func TestPermanentRefusalAtShutdown(t *testing.T) {
	tel := testTelemetry(t)
	refuse := consumererror.NewPermanent(errors.New("bad data"))
	p, _ := newTestProcessorWith(t, settingsFor(tel, component.NewID(metadata.Type)), testConfig(time.Hour), consumertest.NewErr(refuse))
	td := ptrace.NewTraces()
	addSpan(td, "gw", 1, 1, 0, ptrace.SpanKindServer, 0, 1)
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.ErrorIs(t, p.Shutdown(context.Background()), refuse)
	assert.Equal(t, map[string]int64{"processor=orphan,reason=downstream_permanent_error": 1}, points(t, tel, "otelcol_processor_orphan_spans_dropped"))
}

// TestRefusalReturnedToTheCallerIsNotDropped: with decision_wait 0 the batch is passed on in
// the caller's ConsumeTraces; the caller gets the error (and may retry), so nothing is dropped.
func TestRefusalReturnedToTheCallerIsNotDropped(t *testing.T) {
	tel := testTelemetry(t)
	refuse := errors.New("queue is full")
	p, _ := newTestProcessorWith(t, settingsFor(tel, component.NewID(metadata.Type)), testConfig(0), consumertest.NewErr(refuse))
	td := ptrace.NewTraces()
	addSpan(td, "gw", 1, 1, 0, ptrace.SpanKindServer, 0, 1)
	require.ErrorIs(t, p.ConsumeTraces(context.Background(), td), refuse)
	assert.Empty(t, points(t, tel, "otelcol_processor_orphan_spans_dropped"), "nothing dropped")
	assert.Equal(t, map[string]int64{"processor=orphan": 1}, points(t, tel, "otelcol_processor_orphan_downstream_errors"))
}

// TestBoundWorkIsNotRootMissing: spans that an idempotency key binds to a root in another trace
// (S7's trace B) or that are detached work (S11, S20's deliveries) have verdicts: no trace is
// counted root-missing and no span "without verdict" for want of a root. S9 (the root never
// arrives) is.
func TestBoundWorkIsNotRootMissing(t *testing.T) {
	for _, c := range []struct {
		dir     string
		missing bool
	}{{"s07_queue_idempotency_key", false}, {"s11_detached", false}, {"s20_queue_redelivery", false}, {"s09_root_missing", true}} {
		var sc scenarioCase
		for _, x := range loadScenarios(t) {
			if x.dir == c.dir {
				sc = x
			}
		}
		require.NotEmpty(t, sc.dir, c.dir)
		tel := componenttest.NewTelemetry()
		p, err := newOrphanProcessor(settingsFor(tel, component.NewID(metadata.Type)), scenarioConfig(), new(consumertest.TracesSink))
		require.NoError(t, err)
		require.NoError(t, p.ConsumeTraces(context.Background(), sc.traces))
		require.NoError(t, p.Shutdown(context.Background()))
		missing, without := 0, 0
		if m, err := tel.GetMetric("otelcol_processor_orphan_traces_root_missing"); err == nil {
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				missing += int(dp.Value)
			}
		}
		if m, err := tel.GetMetric("otelcol_processor_orphan_spans_without_verdict"); err == nil {
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if v, _ := dp.Attributes.Value("reason"); v.AsString() == "root_missing" {
					without += int(dp.Value)
				}
			}
		}
		if c.missing {
			assert.Positive(t, missing, c.dir)
			assert.Positive(t, without, c.dir)
		} else {
			assert.Zero(t, missing, "%s: traces root-missing", c.dir)
			assert.Zero(t, without, "%s: spans without verdict for want of a root", c.dir)
		}
		require.NoError(t, tel.Shutdown(context.Background()))
	}
}

// TestFailureCountersStartAtZero: before any span, the counters of what goes wrong or happens
// rarely exist at 0 (every eviction state, both drop reasons, downstream errors, late spans,
// missing roots), so that rate() and increase() see their first occurrence, scraped or pushed.
func TestFailureCountersStartAtZero(t *testing.T) {
	tel := testTelemetry(t)
	_, _ = newTestProcessorWith(t, settingsFor(tel, component.NewID(metadata.Type)), testConfig(time.Hour), nil)
	zeros := func(name string) map[string]int64 {
		m, err := tel.GetMetric(name)
		require.NoError(t, err, name)
		out := map[string]int64{}
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			out[p.Attributes.Encoded(attribute.DefaultEncoder())] = p.Value
		}
		return out
	}
	ev := zeros("otelcol_processor_orphan_evictions")
	assert.Len(t, ev, len(evictionStates))
	for _, s := range evictionStates {
		assert.Equal(t, int64(0), ev["processor=orphan,state="+s], s)
	}
	assert.Equal(t, map[string]int64{"processor=orphan,reason=downstream_refused": 0, "processor=orphan,reason=downstream_permanent_error": 0},
		zeros("otelcol_processor_orphan_spans_dropped"))
	for _, n := range []string{"downstream_errors", "spans_late", "traces_root_missing", "runs_unknown_root", "carrier_spans", "spans_deferred", "spans_processed", "spans_orphaned"} {
		assert.Equal(t, map[string]int64{"processor=orphan": 0}, zeros("otelcol_processor_orphan_"+n), n)
	}
}
