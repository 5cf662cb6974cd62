package orphanmetricsexporter_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"
	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/keystest"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// TestObserveTelemetry: the observing exporter's own telemetry says what it keeps, and reads 0
// once everything is counted; S2's abandoned root is held decision_wait, then counted.
func TestObserveTelemetry(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	cfg := orphanmetricsexporter.NewDefaultConfig()
	cfg.NetAddr.Endpoint = "localhost:0"
	cfg.DecisionWait = 500 * time.Millisecond
	cfg.DecisionWaitAfterRoot = 0 // decided as it arrives
	cfg.RunTimeout = 100 * time.Millisecond
	exp, err := orphanmetricsexporter.NewFactory().CreateTraces(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })

	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "scenarios", "s02_caller_leaves", "trace.json"))
	require.NoError(t, err)
	s2, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
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
	newExp := func(tel *componenttest.Telemetry) (component.Component, func(context.Context, ptrace.Traces) error) {
		set := exportertest.NewNopSettings(metadata.Type)
		set.ID = component.MustNewIDWithName("orphanmetrics", "tier")
		if tel != nil {
			set.TelemetrySettings = tel.NewTelemetrySettings()
		}
		cfg := orphanmetricsexporter.NewDefaultConfig()
		cfg.NetAddr.Endpoint = "localhost:0"
		cfg.DecisionWait = 0
		cfg.Keys = &id
		require.NoError(t, cfg.Validate())
		exp, err := orphanmetricsexporter.NewFactory().CreateTraces(context.Background(), set, cfg)
		require.NoError(t, err)
		return exp, exp.ConsumeTraces
	}
	for name, tc := range map[string]struct {
		host component.Host
		want string
	}{
		"missing":    {keysHost{}, `keys: extension "orphan_keys" is not configured`},
		"wrong type": {keysHost{id: nop}, `keys: extension "orphan_keys" is not an orphan_keys extension`},
	} {
		t.Run(name, func(t *testing.T) {
			exp, _ := newExp(nil)
			err := exp.Start(context.Background(), tc.host)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			require.NoError(t, exp.Shutdown(context.Background()))
		})
	}
	t.Run("found", func(t *testing.T) {
		tel := componenttest.NewTelemetry()
		t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
		exp, consume := newExp(tel)
		require.NoError(t, exp.Start(context.Background(), keysHost{id: downKeys(t, 300*time.Millisecond)}))
		require.NoError(t, consume(context.Background(), s7JobAlone()))
		points := func(name string) map[string]int64 {
			m, err := tel.GetMetric(name)
			require.NoError(t, err, name)
			out := map[string]int64{}
			add := func(set attribute.Set, v int64) { out[set.Encoded(attribute.DefaultEncoder())] += v }
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					add(p.Attributes, p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					add(p.Attributes, p.Value)
				}
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

// keysHost is a component.Host with the given extensions.
type keysHost map[component.ID]component.Component

func (h keysHost) GetExtensions() map[component.ID]component.Component { return h }

// downKeys starts an orphan_keys extension whose brokers are unreachable, with the given wait.
func downKeys(t *testing.T, wait time.Duration) extension.Extension {
	t.Helper()
	ext := keystest.New(t, map[string]any{
		"brokers": []any{"127.0.0.1:1"}, "wait": wait.String(), "dial_timeout": "100ms",
		"topic": map[string]any{"check_timeout": "200ms"},
	})
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()), "brokers down: start-up goes on")
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return ext
}

// s7JobAlone is S7's trace B alone (the queue consumer whose model calls carry key K); the
// request's trace A never comes.
func s7JobAlone() ptrace.Traces {
	td, _ := scenarios.S7()
	var idA pcommon.TraceID
	td.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(sp ptrace.Span) bool {
				if idA.IsEmpty() {
					idA = sp.TraceID()
				}
				return sp.TraceID() == idA
			})
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
	return td
}
