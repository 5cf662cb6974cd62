package orphanmetricsexporter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
)

// The checks mdatagen generates for a traces exporter (internal/testsupport/componentcheck).
// The endpoint is moved to a free port, so that the test does not need localhost:9464.

func TestComponentFactory(t *testing.T) {
	componentcheck.Factory(t, NewFactory(), "orphanmetrics")
}

func TestComponentLifecycle(t *testing.T) {
	factory := NewFactory()
	cfg := componentcheck.Config(t, factory, "orphanmetrics")
	cfg.(*Config).NetAddr.Endpoint = "localhost:0"
	componentcheck.Lifecycle{
		Create: func() (component.Component, error) {
			return factory.CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
		},
		Use: func(t *testing.T, c component.Component) {
			require.NotPanics(t, func() {
				td := ptrace.NewTraces()
				sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
				sp.Attributes().PutStr("orphanwatch.liveness", "live")
				_ = c.(exporter.Traces).ConsumeTraces(context.Background(), td)
			})
		},
	}.Run(t)
}
