package telemetrybuilder

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// collect reads what reader has, by instrument name.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// TestBuilder: every kind of instrument is created on the meter with its unit and description
// (and a histogram with its boundaries), records what is added, an observable instrument is
// read through its callback until Shutdown, and no error is reported for valid instruments.
func TestBuilder(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	b := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("scope"))
	b.Int64Counter("c", "{spans}", "a counter").Add(context.Background(), 3)
	b.Int64UpDownCounter("u", "{traces}", "an up-down counter").Add(context.Background(), -2)
	b.Float64Histogram("h", "s", "a histogram", 1, 10).Record(context.Background(), 5)
	gauge := b.Int64ObservableGauge("g", "{runs}", "a gauge")
	counter := b.Int64ObservableCounter("oc", "{items}", "an observable counter")
	require.NoError(t, b.Register(gauge, func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(7)
		return nil
	}))
	require.NoError(t, b.Register(counter, func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(11)
		return nil
	}))
	require.NoError(t, b.Err())

	got := collect(t, reader)
	require.Len(t, got, 5)
	assert.Equal(t, "{spans}", got["c"].Unit)
	assert.Equal(t, "a counter", got["c"].Description)
	assert.Equal(t, int64(3), got["c"].Data.(metricdata.Sum[int64]).DataPoints[0].Value)
	assert.True(t, got["c"].Data.(metricdata.Sum[int64]).IsMonotonic)
	assert.Equal(t, "{traces}", got["u"].Unit)
	assert.Equal(t, int64(-2), got["u"].Data.(metricdata.Sum[int64]).DataPoints[0].Value)
	assert.False(t, got["u"].Data.(metricdata.Sum[int64]).IsMonotonic)
	h := got["h"].Data.(metricdata.Histogram[float64]).DataPoints[0]
	assert.Equal(t, []float64{1, 10}, h.Bounds)
	assert.Equal(t, []uint64{0, 1, 0}, h.BucketCounts)
	assert.Equal(t, "an observable counter", got["oc"].Description)
	assert.Equal(t, int64(7), got["g"].Data.(metricdata.Gauge[int64]).DataPoints[0].Value)
	assert.Equal(t, int64(11), got["oc"].Data.(metricdata.Sum[int64]).DataPoints[0].Value)

	b.Shutdown()
	got = collect(t, reader)
	assert.Contains(t, got, "c")
	assert.NotContains(t, got, "g", "the gauge is read after Shutdown")
	assert.NotContains(t, got, "oc", "the observable counter is read after Shutdown")
}

// TestBuilderErrors: an instrument the meter refuses is reported by Err, joined with the others.
func TestBuilderErrors(t *testing.T) {
	b := New(sdkmetric.NewMeterProvider().Meter("scope"))
	b.Int64Counter("valid", "1", "")
	require.NoError(t, b.Err())
	b.Int64Counter("1nvalid name", "1", "")
	b.Int64ObservableGauge("", "1", "")
	require.Error(t, b.Err())
	assert.Contains(t, b.Err().Error(), "1nvalid name")
}
