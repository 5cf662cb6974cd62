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
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/keytier"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/owntelemetry"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/recordertest"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/telemetrydoc"
)

// newTestExporter creates the exporter id, listening on a port of its own, with
// NewDefaultConfig changed by mutate (when not nil); its telemetry goes to tel when not nil.
func newTestExporter(t *testing.T, id component.ID, tel *componenttest.Telemetry, mutate func(*Config)) exporter.Traces {
	t.Helper()
	set := exportertest.NewNopSettings(metadata.Type)
	set.ID = id
	if tel != nil {
		set.TelemetrySettings = tel.NewTelemetrySettings()
	}
	cfg := NewDefaultConfig()
	cfg.NetAddr.Endpoint = "localhost:0"
	if mutate != nil {
		mutate(cfg)
	}
	exp, err := NewFactory().CreateTraces(context.Background(), set, cfg)
	require.NoError(t, err)
	return exp
}

// startTestExporter is newTestExporter's exporter started on a no-op host; it is shut down when
// the test ends.
func startTestExporter(t *testing.T, id component.ID, tel *componenttest.Telemetry, mutate func(*Config)) exporter.Traces {
	t.Helper()
	exp := newTestExporter(t, id, tel, mutate)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return exp
}

// TestTwoInstancesReadApart runs `orphanmetrics` and `orphanmetrics/other` on one collector's
// telemetry: each instance's label-values gauge carries its own exporter attribute, and one
// instance's callback does not overwrite the other's.
func TestTwoInstancesReadApart(t *testing.T) {
	tel := componentcheck.Telemetry(t)
	ids := []component.ID{component.NewID(metadata.Type), component.NewIDWithName(metadata.Type, "other")}
	services := [][]string{{"a"}, {"b", "c", "d"}}
	for i, id := range ids {
		exp := startTestExporter(t, id, tel, func(cfg *Config) { cfg.Mode = orphanmetrics.ModeAnnotate })
		var res []recordertest.Resource
		for _, svc := range services[i] {
			res = append(res, recordertest.Resource{Service: svc, Spans: []recordertest.Span{{Name: "POST /ask", TraceID: recordertest.TraceA, End: time.Second, Attrs: map[string]any{
				"orphanwatch.liveness": "live", "orphanwatch.root.end_reason": "completed",
			}}}})
		}
		require.NoError(t, exp.ConsumeTraces(context.Background(), recordertest.Build(t, res...)))
	}

	assert.Equal(t, map[string]int64{"orphanmetrics": 1, "orphanmetrics/other": 3},
		owntelemetry.LabelValues(t, tel, "otelcol_exporter_orphanmetrics_label_values", exporterAttribute))
}

// TestDocumentationMatchesTelemetry keeps documentation.md and metadata.yaml in step with the
// instruments the exporter creates.
func TestDocumentationMatchesTelemetry(t *testing.T) {
	telemetrydoc.CheckComponent(t, func(set component.TelemetrySettings) (telemetrydoc.Builder, error) {
		return metadata.NewTelemetryBuilder(set)
	})
}

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
