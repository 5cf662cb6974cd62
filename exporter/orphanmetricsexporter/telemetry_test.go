package orphanmetricsexporter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/telemetrydoc"
)

// TestTwoInstancesReadApart runs `orphanmetrics` and `orphanmetrics/other` on one collector's
// telemetry: each instance's label-values gauge carries its own exporter attribute, and one
// instance's callback does not overwrite the other's.
func TestTwoInstancesReadApart(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	ids := []component.ID{component.NewID(metadata.Type), component.NewIDWithName(metadata.Type, "other")}
	services := [][]string{{"a"}, {"b", "c", "d"}}
	for i, id := range ids {
		set := exportertest.NewNopSettings(metadata.Type)
		set.ID = id
		set.TelemetrySettings = tel.NewTelemetrySettings()
		cfg := NewDefaultConfig()
		cfg.Mode = orphanmetrics.ModeAnnotate
		cfg.NetAddr.Endpoint = "localhost:0"
		exp, err := NewFactory().CreateTraces(context.Background(), set, cfg)
		require.NoError(t, err)
		require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
		t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
		var res []testResource
		for _, svc := range services[i] {
			res = append(res, testResource{service: svc, spans: []testSpan{{name: "POST /ask", traceID: traceA, end: sec, attrs: map[string]any{
				"orphanwatch.liveness": "live", "orphanwatch.root.end_reason": "completed",
			}}}})
		}
		require.NoError(t, exp.ConsumeTraces(context.Background(), buildTraces(t, res...)))
	}

	m, err := tel.GetMetric("otelcol_exporter_orphanmetrics_label_values")
	require.NoError(t, err)
	got := map[string]int64{}
	for _, p := range m.Data.(metricdata.Gauge[int64]).DataPoints {
		label, _ := p.Attributes.Value(attribute.Key("label"))
		if label.AsString() == "service_name" {
			exp, _ := p.Attributes.Value(exporterAttribute)
			got[exp.AsString()] = p.Value
		}
	}
	assert.Equal(t, map[string]int64{"orphanmetrics": 1, "orphanmetrics/other": 3}, got)
}

// TestDocumentationMatchesTelemetry keeps documentation.md in step with the instruments the
// exporter creates.
func TestDocumentationMatchesTelemetry(t *testing.T) {
	prov := &telemetrydoc.Provider{}
	set := componenttest.NewNopTelemetrySettings()
	set.MeterProvider = prov
	tb, err := metadata.NewTelemetryBuilder(set)
	require.NoError(t, err)
	tb.Shutdown()
	insts := prov.Instruments()
	require.NotEmpty(t, insts)
	for _, p := range telemetrydoc.Check("documentation.md", insts) {
		t.Error(p)
	}
	// Every metric of metadata.yaml, as mdatagen would generate it, and no other.
	want, err := telemetrydoc.FromMetadata("metadata.yaml")
	require.NoError(t, err)
	assert.Equal(t, want, insts)
}
