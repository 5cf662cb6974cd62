package orphanmetricsconnector

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pipeline"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"
)

// Written by hand in the shape mdatagen generates for a traces-to-metrics connector (the
// next consumer behind a metrics router, as the collector builds it). The lifecycle also
// checks that a second Start fails and that Shutdown flushes once more.

func TestComponentFactoryType(t *testing.T) {
	require.Equal(t, metadata.Type, NewFactory().Type())
	require.Equal(t, "orphanmetrics", NewFactory().Type().String())
}

func TestComponentConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(NewFactory().CreateDefaultConfig()))
}

func TestComponentLifecycle(t *testing.T) {
	factory := NewFactory()
	tests := []struct {
		createFn func(ctx context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (component.Component, error)
		name     string
	}{
		{
			name: "traces_to_metrics",
			createFn: func(ctx context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (component.Component, error) {
				router := connector.NewMetricsRouter(map[pipeline.ID]consumer.Metrics{pipeline.NewID(pipeline.SignalMetrics): next})
				return factory.CreateTracesToMetrics(ctx, set, cfg, router)
			},
		},
	}

	cm, err := confmaptest.LoadConf("testdata/config.yaml")
	require.NoError(t, err)
	cfg := factory.CreateDefaultConfig()
	sub, err := cm.Sub("orphanmetrics")
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(&cfg))

	for _, tt := range tests {
		t.Run(tt.name+"-shutdown", func(t *testing.T) {
			c, err := tt.createFn(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
			require.NoError(t, err)
			require.NoError(t, c.Shutdown(context.Background()))
		})
		t.Run(tt.name+"-lifecycle", func(t *testing.T) {
			sink := new(consumertest.MetricsSink)
			c, err := tt.createFn(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, sink)
			require.NoError(t, err)
			host := componenttest.NewNopHost()
			require.NoError(t, c.Start(context.Background(), host))
			require.Error(t, c.Start(context.Background(), host), "started twice")
			td := ptrace.NewTraces()
			sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			sp.Attributes().PutStr("orphanwatch.liveness", "live")
			tc := c.(connector.Traces)
			require.NoError(t, tc.ConsumeTraces(context.Background(), td))
			require.False(t, tc.Capabilities().MutatesData)
			require.NoError(t, c.Shutdown(context.Background()))
			require.Len(t, sink.AllMetrics(), 1, "the final flush")

			// A second instance starts and stops after the first, as on a collector reload.
			second, err := tt.createFn(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
			require.NoError(t, err)
			require.NoError(t, second.Start(context.Background(), host))
			require.NoError(t, second.Shutdown(context.Background()))
		})
	}
}
