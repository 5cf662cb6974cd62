package orphanmetricsexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/owntelemetry"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/recordertest"
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
