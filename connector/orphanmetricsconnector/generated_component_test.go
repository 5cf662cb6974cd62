package orphanmetricsconnector

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"
)

// Written by hand in the shape mdatagen generates for a traces-to-metrics connector.

func TestComponentFactoryType(t *testing.T) {
	require.Equal(t, "orphanmetrics", NewFactory().Type().String())
}

func TestComponentConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(NewFactory().CreateDefaultConfig()))
}

func TestComponentLifecycle(t *testing.T) {
	factory := NewFactory()
	cm, err := confmaptest.LoadConf("testdata/config.yaml")
	require.NoError(t, err)
	cfg := factory.CreateDefaultConfig()
	sub, err := cm.Sub("orphanmetrics")
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(&cfg))

	t.Run("traces_to_metrics-shutdown", func(t *testing.T) {
		c, err := factory.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
		require.NoError(t, err)
		require.NoError(t, c.Shutdown(context.Background()))
	})
	t.Run("traces_to_metrics-lifecycle", func(t *testing.T) {
		sink := new(consumertest.MetricsSink)
		c, err := factory.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, sink)
		require.NoError(t, err)
		require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
		require.Error(t, c.Start(context.Background(), componenttest.NewNopHost()), "started twice")
		td := ptrace.NewTraces()
		sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.Attributes().PutStr("orphanwatch.liveness", "live")
		require.NoError(t, c.ConsumeTraces(context.Background(), td))
		require.False(t, c.Capabilities().MutatesData)
		require.NoError(t, c.Shutdown(context.Background()))
		require.Len(t, sink.AllMetrics(), 1, "the final flush")
	})
}
