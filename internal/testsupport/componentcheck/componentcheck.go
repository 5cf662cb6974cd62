// Package componentcheck holds the checks mdatagen generates for every component
// (generated_component_test.go there), shared by the processor, exporter, connector and
// extension: the factory's type and config struct, the config of testdata/config.yaml, and
// a component's lifecycle (created and shut down; started, used and shut down, then a second
// instance after it, as on a collector reload).
package componentcheck

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// Factory requires factory to be of type typ and its default config to pass
// componenttest.CheckConfigStruct.
func Factory(t *testing.T, factory component.Factory, typ string) {
	t.Helper()
	require.Equal(t, typ, factory.Type().String())
	require.NoError(t, componenttest.CheckConfigStruct(factory.CreateDefaultConfig()))
}

// Config returns factory's default config with the settings under key in the test's
// testdata/config.yaml unmarshalled onto it.
func Config(t *testing.T, factory component.Factory, key string) component.Config {
	t.Helper()
	cm, err := confmaptest.LoadConf("testdata/config.yaml")
	require.NoError(t, err)
	cfg := factory.CreateDefaultConfig()
	sub, err := cm.Sub(key)
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(&cfg))
	return cfg
}

// Lifecycle is a component's lifecycle test.
type Lifecycle struct {
	// Create creates a new instance of the component.
	Create func() (component.Component, error)
	// Use, when not nil, is called on the started instance before its Shutdown.
	Use func(t *testing.T, c component.Component)
	// Stopped, when not nil, is called after that instance's Shutdown.
	Stopped func(t *testing.T)
}

// Run runs the lifecycle: "shutdown", an instance created and shut down without a start;
// "lifecycle", an instance started on a no-op host, used and shut down, then a second
// instance started and shut down after it, as on a collector reload. Every step must succeed.
func (l Lifecycle) Run(t *testing.T) {
	ctx := context.Background()
	t.Run("shutdown", func(t *testing.T) {
		c, err := l.Create()
		require.NoError(t, err)
		require.NoError(t, c.Shutdown(ctx))
	})
	t.Run("lifecycle", func(t *testing.T) {
		host := componenttest.NewNopHost()
		c, err := l.Create()
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx, host))
		if l.Use != nil {
			l.Use(t, c)
		}
		require.NoError(t, c.Shutdown(ctx))
		if l.Stopped != nil {
			l.Stopped(t)
		}

		second, err := l.Create()
		require.NoError(t, err)
		require.NoError(t, second.Start(ctx, host))
		require.NoError(t, second.Shutdown(ctx))
	})
}
