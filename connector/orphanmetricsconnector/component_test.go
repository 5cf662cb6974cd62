package orphanmetricsconnector

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
)

// TestComponent runs the checks mdatagen generates for a traces-to-metrics connector
// (internal/testsupport/componentcheck), with the next consumer behind a metrics router, as
// the collector builds it. The lifecycle also checks that a second Start fails and that
// Shutdown flushes once more.
func TestComponent(t *testing.T) {
	factory := NewFactory()
	require.Equal(t, metadata.Type, factory.Type())
	sink := new(consumertest.MetricsSink) // what the instances flush
	componentcheck.Check(t, factory, "orphanmetrics", componentcheck.Lifecycle{
		Metrics: sink,
		Use: func(t *testing.T, c component.Component) {
			require.Error(t, c.Start(context.Background(), componenttest.NewNopHost()), "started twice")
			td := ptrace.NewTraces()
			sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			sp.Attributes().PutStr("orphanwatch.liveness", "live")
			tc := c.(connector.Traces)
			require.NoError(t, tc.ConsumeTraces(context.Background(), td))
			require.False(t, tc.Capabilities().MutatesData)
		},
		Stopped: func(t *testing.T) {
			require.Len(t, sink.AllMetrics(), 1, "the final flush")
		},
	})
}
