package orphanmetricsexporter

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/keytier"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// TestObserveTelemetry: the observing exporter's own telemetry says what it keeps, and reads 0
// once everything is counted; S2's abandoned root is held decision_wait, then counted.
func TestObserveTelemetry(t *testing.T) {
	tel := componentcheck.Telemetry(t)
	exp := startTestExporter(t, component.NewID(metadata.Type), tel, func(cfg *Config) {
		cfg.DecisionWait = 500 * time.Millisecond
		cfg.DecisionWaitAfterRoot = 0 // decided as it arrives
		cfg.RunTimeout = 100 * time.Millisecond
	})

	s2, err := scenarios.LoadTraces(filepath.Join("..", "..", "testdata", "scenarios", "s02_caller_leaves", "trace.json"))
	require.NoError(t, err)
	n := int64(s2.SpanCount())
	require.NoError(t, exp.ConsumeTraces(context.Background(), s2))

	gauge := func(name, state string) int64 {
		m, err := tel.GetMetric(name)
		require.NoError(t, err, name)
		var sum int64
		for _, p := range m.Data.(metricdata.Gauge[int64]).DataPoints {
			if v, ok := p.Attributes.Value("state"); state == "" || (ok && v.AsString() == state) {
				sum += p.Value
			}
		}
		return sum
	}
	counter := func(name string) int64 {
		m, err := tel.GetMetric(name)
		require.NoError(t, err, name)
		var sum int64
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			sum += p.Value
		}
		return sum
	}
	assert.Equal(t, int64(0), gauge("otelcol_exporter_orphanmetrics_records", "waiting"), "decided as it arrived")
	assert.Equal(t, int64(1), gauge("otelcol_exporter_orphanmetrics_held_roots", ""), "the cancelled root, held for its reach")
	assert.Equal(t, n, counter("otelcol_exporter_orphanmetrics_spans_judged"))
	deadline := time.Now().Add(10 * time.Second)
	for gauge("otelcol_exporter_orphanmetrics_held_roots", "") != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, int64(0), gauge("otelcol_exporter_orphanmetrics_held_roots", ""), "counted after decision_wait")
	assert.Equal(t, int64(0), gauge("otelcol_exporter_orphanmetrics_open_runs", ""))
	assert.Equal(t, int64(0), gauge("otelcol_exporter_orphanmetrics_records", "pending"))
}

// The exporter finds the extension that keys names at start, or fails naming the field; with
// it, its telemetry counts the look-ups by outcome and the traces waiting, under its own
// exporter attribute.
func TestObserveKeysExporter(t *testing.T) {
	id := component.MustNewID("orphan_keys")
	nf := extensiontest.NewNopFactory()
	nop, err := nf.Create(context.Background(), extensiontest.NewNopSettings(nf.Type()), nf.CreateDefaultConfig())
	require.NoError(t, err)
	newExp := func(tel *componenttest.Telemetry) exporter.Traces {
		return newTestExporter(t, component.MustNewIDWithName("orphanmetrics", "tier"), tel, func(cfg *Config) {
			cfg.DecisionWait = 0
			cfg.Keys = &id
			require.NoError(t, cfg.Validate())
		})
	}
	for name, tc := range map[string]struct {
		host component.Host
		want string
	}{
		"missing":    {keytier.Host{}, `keys: extension "orphan_keys" is not configured`},
		"wrong type": {keytier.Host{id: nop}, `keys: extension "orphan_keys" is not an orphan_keys extension`},
	} {
		t.Run(name, func(t *testing.T) {
			exp := newExp(nil)
			err := exp.Start(context.Background(), tc.host)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			require.NoError(t, exp.Shutdown(context.Background()))
		})
	}
	t.Run("found", func(t *testing.T) {
		tel := componentcheck.Telemetry(t)
		exp := newExp(tel)
		require.NoError(t, exp.Start(context.Background(), keytier.Host{id: keytier.Down(t, 300*time.Millisecond)}))
		require.NoError(t, exp.ConsumeTraces(context.Background(), keytier.S7JobAlone()))
		// points returns the values of name's points by their attribute set, "k=v,k=v".
		points := func(name string) map[string]int64 {
			out := map[string]int64{}
			for _, p := range componentcheck.Int64Points(t, tel, name) {
				out[p.Attributes.Encoded(attribute.DefaultEncoder())] += p.Value
			}
			return out
		}
		assert.Equal(t, map[string]int64{"exporter=orphanmetrics/tier": 1}, points("otelcol_exporter_orphanmetrics_key_traces_waiting"))
		require.Eventually(t, func() bool {
			_, err := tel.GetMetric("otelcol_exporter_orphanmetrics_key_lookups")
			return err == nil
		}, 5*time.Second, 10*time.Millisecond)
		assert.Equal(t, map[string]int64{"exporter=orphanmetrics/tier,outcome=missed": 1}, points("otelcol_exporter_orphanmetrics_key_lookups"))
		assert.Equal(t, map[string]int64{"exporter=orphanmetrics/tier": 0}, points("otelcol_exporter_orphanmetrics_key_traces_waiting"))
		require.NoError(t, exp.Shutdown(context.Background()))
	})
}
