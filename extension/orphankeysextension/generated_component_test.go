package orphankeysextension

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/orphanwatch/orphanwatch/extension/orphankeysextension/internal/metadata"
)

// Written by hand in the shape mdatagen generates for an extension.

func TestComponentFactoryType(t *testing.T) {
	require.Equal(t, "orphan_keys", NewFactory().Type().String())
}

func TestComponentConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(NewFactory().CreateDefaultConfig()))
}

func TestComponentLifecycle(t *testing.T) {
	factory := NewFactory()

	cm, err := confmaptest.LoadConf("testdata/config.yaml")
	require.NoError(t, err)
	cfg := factory.CreateDefaultConfig()
	sub, err := cm.Sub("orphan_keys")
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(&cfg))
	// Nothing listens there: start-up goes on after topic.check_timeout.
	cfg.(*Config).Brokers = []string{"127.0.0.1:1"}
	cfg.(*Config).Topic.CheckTimeout = 200 * time.Millisecond
	cfg.(*Config).DialTimeout = 100 * time.Millisecond

	t.Run("shutdown", func(t *testing.T) {
		e, err := factory.Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
		require.NoError(t, err)
		require.NoError(t, e.Shutdown(context.Background()))
	})
	t.Run("lifecycle", func(t *testing.T) {
		firstExt, err := factory.Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
		require.NoError(t, err)
		require.NoError(t, firstExt.Start(context.Background(), componenttest.NewNopHost()))
		require.NoError(t, firstExt.Shutdown(context.Background()))

		secondExt, err := factory.Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
		require.NoError(t, err)
		require.NoError(t, secondExt.Start(context.Background(), componenttest.NewNopHost()))
		require.NoError(t, secondExt.Shutdown(context.Background()))
	})
}
