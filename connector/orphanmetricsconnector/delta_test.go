package orphanmetricsconnector

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"
)

// deltaPoint is what a flush sent for one series.
type deltaPoint struct {
	start, time pcommon.Timestamp
	value       float64  // a sum's
	count       uint64   // a histogram's
	buckets     []uint64 // a histogram's
}

// pointsOf returns the points of metric name by service, checking the temporality.
func pointsOf(t *testing.T, md pmetric.Metrics, name string, want pmetric.AggregationTemporality) map[string]deltaPoint {
	t.Helper()
	out := map[string]deltaPoint{}
	for m := range metricsNamed(md, name) {
		switch m.Type() {
		case pmetric.MetricTypeSum:
			assert.Equal(t, want, m.Sum().AggregationTemporality(), name)
			assert.True(t, m.Sum().IsMonotonic(), name)
			for _, dp := range m.Sum().DataPoints().All() {
				svc, _ := dp.Attributes().Get("service_name")
				out[svc.Str()] = deltaPoint{start: dp.StartTimestamp(), time: dp.Timestamp(), value: dp.DoubleValue()}
			}
		case pmetric.MetricTypeHistogram:
			assert.Equal(t, want, m.Histogram().AggregationTemporality(), name)
			for _, dp := range m.Histogram().DataPoints().All() {
				svc, _ := dp.Attributes().Get("service_name")
				out[svc.Str()] = deltaPoint{start: dp.StartTimestamp(), time: dp.Timestamp(), count: dp.Count(), buckets: dp.BucketCounts().AsRaw()}
			}
		}
	}
	return out
}

// TestDeltaTemporality: with aggregation_temporality delta each flush sends what every series
// gained since the last flush that went through, starting at that flush's time (a new series
// at its creation); a refused flush's gains come with the next; series that gained nothing
// are not sent. The same spans with the default send the totals.
func TestDeltaTemporality(t *testing.T) {
	ctx := context.Background()
	next := &failing{}
	c := newTestConnector(t, connectortest.NewNopSettings(metadata.Type), next, func(cfg *Config) { cfg.AggregationTemporality = TemporalityDelta })
	cum := &failing{}
	cc := newTestConnector(t, connectortest.NewNopSettings(metadata.Type), cum, nil)
	consume := func(svc string, n int) {
		for i := range n {
			require.NoError(t, c.ConsumeTraces(ctx, orphanSpan(svc, byte(i+1))))
			require.NoError(t, cc.ConsumeTraces(ctx, orphanSpan(svc, byte(i+1))))
		}
	}
	flush := func() {
		_ = c.flush(ctx)
		require.NoError(t, cc.flush(ctx))
	}

	consume("a", 2)
	flush() // 1: a +2
	consume("a", 3)
	consume("b", 1)
	next.n = 1
	flush() // 2: refused
	consume("a", 1)
	flush() // 3: a +4 since flush 1, b +1
	flush() // 4: nothing gained, nothing sent
	consume("b", 2)
	flush() // 5: b +2, a not sent

	sent := next.AllMetrics()
	require.Len(t, sent, 3, "flushes 1, 3 and 5 (2 refused, 4 empty)")
	delta := pmetric.AggregationTemporalityDelta
	runs := []map[string]deltaPoint{
		pointsOf(t, sent[0], "orphanwatch.runs", delta),
		pointsOf(t, sent[1], "orphanwatch.runs", delta),
		pointsOf(t, sent[2], "orphanwatch.runs", delta),
	}
	assert.Equal(t, map[string]float64{"a": 2}, values(runs[0]))
	assert.Equal(t, map[string]float64{"a": 4, "b": 1}, values(runs[1]))
	assert.Equal(t, map[string]float64{"b": 2}, values(runs[2]))
	// Each delta starts at the last flush that went through (flush 2 was refused);
	// b, created after flush 1, starts at its creation.
	assert.Equal(t, runs[0]["a"].time, runs[1]["a"].start)
	assert.Greater(t, runs[1]["b"].start, runs[0]["a"].time)
	assert.Less(t, runs[1]["b"].start, runs[1]["b"].time)
	// Flush 4 went (with nothing to send): flush 5's deltas start there.
	assert.Greater(t, runs[2]["b"].start, runs[1]["b"].time)
	assert.Less(t, runs[2]["b"].start, runs[2]["b"].time)
	assert.Less(t, runs[0]["a"].start, runs[0]["a"].time)

	outlive := pointsOf(t, sent[1], "orphanwatch.outlive", delta)
	assert.Equal(t, uint64(4), outlive["a"].count)
	var inBuckets uint64
	for _, n := range outlive["a"].buckets {
		inBuckets += n
	}
	assert.Equal(t, uint64(4), inBuckets, "bucket counts are the delta's")

	// The cumulative connector sent the totals of the same spans; the deltas add up to them.
	totals := cum.AllMetrics()
	require.Len(t, totals, 5)
	cumulative := pmetric.AggregationTemporalityCumulative
	assert.Equal(t, map[string]float64{"a": 6, "b": 3}, values(pointsOf(t, totals[4], "orphanwatch.runs", cumulative)))
	assert.Equal(t, uint64(6), pointsOf(t, totals[4], "orphanwatch.outlive", cumulative)["a"].count)
}

func values(ps map[string]deltaPoint) map[string]float64 {
	out := map[string]float64{}
	for k, p := range ps {
		out[k] = p.value
	}
	return out
}
