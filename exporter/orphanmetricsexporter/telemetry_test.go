package orphanmetricsexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/owntelemetry"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/recordertest"
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
