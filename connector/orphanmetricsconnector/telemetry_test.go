package orphanmetricsconnector

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/owntelemetry"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/telemetrydoc"
)

// orphanSpan is a span of svc judged orphaned, with a run delivered to nobody (series with
// exemplars).
func orphanSpan(svc string, trace byte) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", svc)
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetName("POST /run")
	sp.SetTraceID(pcommon.TraceID{trace, 1})
	sp.SetSpanID(pcommon.SpanID{trace, 2})
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(time.Unix(1000, 0)))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(time.Unix(1002, 0)))
	sp.Attributes().PutStr("orphanwatch.liveness", "orphaned")
	sp.Attributes().PutDouble("orphanwatch.after_gone", 1.5)
	sp.Attributes().PutInt("orphanwatch.attempt", 1)
	sp.Attributes().PutStr("orphanwatch.run.outcome", "delivered_to_nobody")
	return td
}

func newTestConnector(t *testing.T, set connector.Settings, next consumer.Metrics, mod func(*Config)) *metricsConnector {
	t.Helper()
	cfg := NewDefaultConfig()
	cfg.MetricsFlushInterval = time.Hour
	cfg.Mode = orphanmetrics.ModeAnnotate // the tests write the processor's attributes
	if mod != nil {
		mod(cfg)
	}
	c, err := newConnector(cfg, set, next)
	require.NoError(t, err)
	return c
}

// TestTwoInstancesReadApart: each instance's label-values gauge carries its own connector
// attribute, and label limits work as the exporter's: over the limit, values become other and
// the overflow is counted.
func TestTwoInstancesReadApart(t *testing.T) {
	tel := componentcheck.Telemetry(t)
	ids := []component.ID{component.NewID(metadata.Type), component.NewIDWithName(metadata.Type, "other")}
	services := [][]string{{"a"}, {"b", "c", "d"}}
	sinks := []*consumertest.MetricsSink{{}, {}}
	for i, id := range ids {
		set := connectortest.NewNopSettings(metadata.Type)
		set.ID = id
		set.TelemetrySettings = tel.NewTelemetrySettings()
		c := newTestConnector(t, set, sinks[i], func(c *Config) { c.LabelLimits.PerLabel = map[string]int{"service_name": 2} })
		for _, svc := range services[i] {
			require.NoError(t, c.ConsumeTraces(context.Background(), orphanSpan(svc, 1)))
		}
		require.NoError(t, c.flush(context.Background()))
		t.Cleanup(func() { require.NoError(t, c.Shutdown(context.Background())) })
	}

	assert.Equal(t, map[string]int64{"orphanmetrics": 1, "orphanmetrics/other": 2},
		owntelemetry.LabelValues(t, tel, "otelcol_connector_orphanmetrics_label_values", connectorAttribute))

	// orphanmetrics/other: d went over the limit of 2 services: its series are other's, under
	// a resource service.name=other, and the overflow is counted once per use of other.
	md := sinks[1].AllMetrics()[0]
	var services2 []string
	overflow := -1.0
	for _, rm := range md.ResourceMetrics().All() {
		svc, ok := rm.Resource().Attributes().Get("service.name")
		if ok {
			services2 = append(services2, svc.Str())
		}
		for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
			if m.Name() != "orphanwatch.label_overflow" {
				continue
			}
			assert.False(t, ok, "health series under no service")
			for _, dp := range m.Sum().DataPoints().All() {
				if l, _ := dp.Attributes().Get("label"); l.Str() == "service_name" {
					overflow = dp.DoubleValue()
				}
			}
		}
	}
	assert.ElementsMatch(t, []string{"b", "c", "other"}, services2)
	assert.Greater(t, overflow, 0.0, "overflow counted")

	flushes, err := tel.GetMetric("otelcol_connector_orphanmetrics_flushes")
	require.NoError(t, err)
	n := map[string]int64{}
	for _, p := range flushes.Data.(metricdata.Sum[int64]).DataPoints {
		id, _ := p.Attributes.Value(connectorAttribute)
		r, _ := p.Attributes.Value(resultAttribute)
		n[id.AsString()+" "+r.AsString()] = p.Value
	}
	assert.Equal(t, map[string]int64{"orphanmetrics success": 1, "orphanmetrics/other success": 1}, n)
}

// failing refuses the first n batches.
type failing struct {
	consumertest.MetricsSink
	n int
}

func (f *failing) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	if f.n > 0 {
		f.n--
		return errors.New("backend down")
	}
	return f.MetricsSink.ConsumeMetrics(ctx, md)
}

func exemplarCount(md pmetric.Metrics) int {
	n := 0
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				switch m.Type() {
				case pmetric.MetricTypeSum:
					for _, dp := range m.Sum().DataPoints().All() {
						n += dp.Exemplars().Len()
					}
				case pmetric.MetricTypeHistogram:
					for _, dp := range m.Histogram().DataPoints().All() {
						n += dp.Exemplars().Len()
					}
				}
			}
		}
	}
	return n
}

// TestFlushes: sums are cumulative across flushes; an exemplar is sent once, and again after a
// flush the pipeline refused; a refused flush is counted and its data sent by the next.
func TestFlushes(t *testing.T) {
	tel := componentcheck.Telemetry(t)
	set := connectortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	next := &failing{n: 1}
	c := newTestConnector(t, set, next, nil)
	ctx := context.Background()

	require.NoError(t, c.ConsumeTraces(ctx, orphanSpan("svc", 1)))
	require.ErrorContains(t, c.flush(ctx), "backend down")
	require.NoError(t, c.flush(ctx)) // the refused data and exemplars again
	require.NoError(t, c.flush(ctx)) // nothing new: no exemplar
	require.NoError(t, c.ConsumeTraces(ctx, orphanSpan("svc", 1)))
	require.NoError(t, c.flush(ctx))

	all := next.AllMetrics()
	require.Len(t, all, 3)
	runs := func(md pmetric.Metrics) float64 {
		for _, rm := range md.ResourceMetrics().All() {
			for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
				if m.Name() == "orphanwatch.runs" {
					return m.Sum().DataPoints().At(0).DoubleValue()
				}
			}
		}
		return -1
	}
	assert.Equal(t, []float64{1, 1, 2}, []float64{runs(all[0]), runs(all[1]), runs(all[2])}, "cumulative")
	// The first flush's exemplars (runs, attempts, spend seconds, outlive) were refused: sent by
	// the second; none by the third. The fourth: a new span one second later may replace them
	// (at most once a second), so there are at most as many as in the second.
	assert.Positive(t, exemplarCount(all[0]))
	assert.Zero(t, exemplarCount(all[1]))
	assert.LessOrEqual(t, exemplarCount(all[2]), exemplarCount(all[0]))

	flushes, err := tel.GetMetric("otelcol_connector_orphanmetrics_flushes")
	require.NoError(t, err)
	n := map[string]int64{}
	for _, p := range flushes.Data.(metricdata.Sum[int64]).DataPoints {
		r, _ := p.Attributes.Value(resultAttribute)
		n[r.AsString()] = p.Value
	}
	assert.Equal(t, map[string]int64{"failure": 1, "success": 3}, n)
}

// TestFlushInterval: a started connector sends on its own every metrics_flush_interval.
func TestFlushInterval(t *testing.T) {
	sink := new(consumertest.MetricsSink)
	c := newTestConnector(t, connectortest.NewNopSettings(metadata.Type), sink, func(c *Config) { c.MetricsFlushInterval = 20 * time.Millisecond })
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, c.ConsumeTraces(context.Background(), orphanSpan("svc", 1)))
	require.Eventually(t, func() bool { return len(sink.AllMetrics()) >= 3 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, c.Shutdown(context.Background()))
	n := len(sink.AllMetrics())
	time.Sleep(60 * time.Millisecond)
	assert.Equal(t, n, len(sink.AllMetrics()), "no flush after shutdown")
}

// TestDocumentationMatchesTelemetry keeps documentation.md and metadata.yaml in step with the
// instruments the connector creates.
func TestDocumentationMatchesTelemetry(t *testing.T) {
	telemetrydoc.CheckComponent(t, func(set component.TelemetrySettings) (telemetrydoc.Builder, error) {
		return metadata.NewTelemetryBuilder(set)
	})
}

// TestObserveTelemetry: the observing connector's own telemetry says what it keeps, as the
// exporter's (shared code): S2's abandoned root is held decision_wait, then counted; every span
// is judged; its verdict latency is recorded; everything reads 0 once counted.
func TestObserveTelemetry(t *testing.T) {
	tel := componentcheck.Telemetry(t)
	set := connectortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	c := newTestConnector(t, set, new(consumertest.MetricsSink), func(cfg *Config) {
		cfg.Mode = orphanmetrics.ModeObserve
		cfg.DecisionWait = 500 * time.Millisecond
		cfg.DecisionWaitAfterRoot = 0 // decided as it arrives
		cfg.RunTimeout = 100 * time.Millisecond
	})
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, c.Shutdown(context.Background())) })

	s2, err := scenarios.LoadTraces("../../testdata/scenarios/s02_caller_leaves/trace.json")
	require.NoError(t, err)
	n := int64(s2.SpanCount())
	require.NoError(t, c.ConsumeTraces(context.Background(), s2))

	// sum adds the points of the int64 gauge or sum name whose attribute key (when set) is
	// value; every point carries the connector attribute.
	sum := func(name, key, value string) int64 {
		var total int64
		for _, p := range componentcheck.Int64Points(t, tel, name) {
			id, _ := p.Attributes.Value(connectorAttribute)
			assert.Equal(t, set.ID.String(), id.AsString(), name)
			if v, ok := p.Attributes.Value(attribute.Key(key)); key == "" || (ok && v.AsString() == value) {
				total += p.Value
			}
		}
		return total
	}
	assert.Equal(t, int64(0), sum("otelcol_connector_orphanmetrics_records", "state", "waiting"), "decided as it arrived")
	assert.Equal(t, int64(1), sum("otelcol_connector_orphanmetrics_held_roots", "", ""), "the cancelled root, held for its reach")
	assert.Equal(t, n, sum("otelcol_connector_orphanmetrics_spans_judged", "", ""))
	require.Eventually(t, func() bool { return sum("otelcol_connector_orphanmetrics_held_roots", "", "") == 0 }, 10*time.Second, 50*time.Millisecond, "counted after decision_wait")
	assert.Equal(t, int64(0), sum("otelcol_connector_orphanmetrics_open_runs", "", ""))
	assert.Equal(t, int64(0), sum("otelcol_connector_orphanmetrics_records", "state", "pending"))
	assert.Equal(t, int64(0), sum("otelcol_connector_orphanmetrics_traces", "", ""))
	assert.Equal(t, int64(0), sum("otelcol_connector_orphanmetrics_evictions", "", ""), "nothing evicted")
	assert.Equal(t, int64(0), sum("otelcol_connector_orphanmetrics_spans_without_verdict", "", ""), "every span judged")

	// The request's latency is observed once nothing more can come for it (decision_wait,
	// clock-skew tolerance and two sweeps after its last verdict).
	var lat metricdata.Metrics
	require.Eventually(t, func() bool {
		lat, err = tel.GetMetric("otelcol_connector_orphanmetrics_verdict_latency")
		return err == nil
	}, 15*time.Second, 100*time.Millisecond)
	points := lat.Data.(metricdata.Histogram[float64]).DataPoints
	require.Len(t, points, 1)
	assert.Equal(t, uint64(1), points[0].Count, "one request")
	assert.GreaterOrEqual(t, points[0].Sum, 0.4, "its abandoned root counted after decision_wait")
}
