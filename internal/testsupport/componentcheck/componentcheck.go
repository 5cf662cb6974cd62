// Package componentcheck holds the checks mdatagen generates for every component
// (generated_component_test.go there), shared by the processor, exporter, connector and
// extension: the factory's type and config struct, the config of testdata/config.yaml, and
// a component's lifecycle (created and shut down; started, used and shut down, then a second
// instance after it, as on a collector reload), run together by Check; and the telemetry a
// test's components report to, with the reading of their int64 instruments (Telemetry,
// Int64Points); and the feeding of batches through a started component (Feed).
package componentcheck

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Check runs the checks of the component factory makes, of type typ: "factory" ([Factory]),
// then the lifecycle l of instances made from the settings under typ in the test's
// testdata/config.yaml ([Config]), adjusted by l.Configure.
func Check(t *testing.T, factory component.Factory, typ string, l Lifecycle) {
	t.Run("factory", func(t *testing.T) { Factory(t, factory, typ) })
	cfg := Config(t, factory, typ)
	if l.Configure != nil {
		l.Configure(cfg)
	}
	next := l.Metrics
	if next == nil {
		next = consumertest.NewNop()
	}
	l.run(t, func() (component.Component, error) { return Create(factory, cfg, next) })
}

// Create creates, with no-op settings of its type, the traces component of factory: a traces
// processor passing to a no-op consumer, a traces exporter, a traces-to-metrics connector
// passing to next behind a metrics router (as the collector builds it), or an extension.
func Create(factory component.Factory, cfg component.Config, next consumer.Metrics) (component.Component, error) {
	ctx := context.Background()
	switch f := factory.(type) {
	case processor.Factory:
		return f.CreateTraces(ctx, processortest.NewNopSettings(f.Type()), cfg, consumertest.NewNop())
	case exporter.Factory:
		return f.CreateTraces(ctx, exportertest.NewNopSettings(f.Type()), cfg)
	case connector.Factory:
		router := connector.NewMetricsRouter(map[pipeline.ID]consumer.Metrics{pipeline.NewID(pipeline.SignalMetrics): next})
		return f.CreateTracesToMetrics(ctx, connectortest.NewNopSettings(f.Type()), cfg, router)
	case extension.Factory:
		return f.Create(ctx, extensiontest.NewNopSettings(f.Type()), cfg)
	}
	return nil, fmt.Errorf("componentcheck: %T is not a processor, exporter, connector or extension factory", factory)
}

// Feed starts c, a traces consumer, on a no-op host, passes it every batch in order and shuts
// it down (a processor or connector then has sent on all it holds); every step must succeed.
// t is a test's, or a property's (*rapid.T).
func Feed(t require.TestingT, c component.Component, batches ...ptrace.Traces) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	ctx := context.Background()
	require.NoError(t, c.Start(ctx, componenttest.NewNopHost()))
	for _, td := range batches {
		require.NoError(t, c.(consumer.Traces).ConsumeTraces(ctx, td))
	}
	require.NoError(t, c.Shutdown(ctx))
}

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

// Telemetry returns the telemetry a test's components report to (their settings'
// TelemetrySettings: tel.NewTelemetrySettings()), read with its GetMetric; it is shut down when
// the test ends.
func Telemetry(t *testing.T) *componenttest.Telemetry {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	return tel
}

// Int64Points returns the points of the int64 gauge or sum name that tel holds; the test fails
// when tel holds no such metric.
func Int64Points(t *testing.T, tel *componenttest.Telemetry, name string) []metricdata.DataPoint[int64] {
	t.Helper()
	m, err := tel.GetMetric(name)
	require.NoError(t, err, name)
	switch d := m.Data.(type) {
	case metricdata.Gauge[int64]:
		return d.DataPoints
	case metricdata.Sum[int64]:
		return d.DataPoints
	}
	t.Fatalf("%s: %T is not an int64 gauge or sum", name, m.Data)
	return nil
}

// Lifecycle is a component's lifecycle test.
type Lifecycle struct {
	// Configure, when not nil, adjusts the config before the instances are created (Check).
	Configure func(cfg component.Config)
	// Metrics, when not nil, is where a connector passes its metrics ([Create]); a no-op
	// consumer when nil.
	Metrics consumer.Metrics
	// Traces, when not nil, is consumed by the started instance (a consumer.Traces) before Use:
	// whatever its error, consuming it must not panic.
	Traces func() ptrace.Traces
	// Use, when not nil, is called on the started instance before its Shutdown.
	Use func(t *testing.T, c component.Component)
	// Stopped, when not nil, is called after that instance's Shutdown.
	Stopped func(t *testing.T)
}

// run runs the lifecycle of the instances create makes: "shutdown", an instance created and
// shut down without a start; "lifecycle", an instance started on a no-op host, used and shut
// down, then a second instance started and shut down after it, as on a collector reload. Every
// step must succeed.
func (l Lifecycle) run(t *testing.T, create func() (component.Component, error)) {
	ctx := context.Background()
	t.Run("shutdown", func(t *testing.T) {
		c, err := create()
		require.NoError(t, err)
		require.NoError(t, c.Shutdown(ctx))
	})
	t.Run("lifecycle", func(t *testing.T) {
		host := componenttest.NewNopHost()
		c, err := create()
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx, host))
		if l.Traces != nil {
			require.NotPanics(t, func() { _ = c.(consumer.Traces).ConsumeTraces(ctx, l.Traces()) })
		}
		if l.Use != nil {
			l.Use(t, c)
		}
		require.NoError(t, c.Shutdown(ctx))
		if l.Stopped != nil {
			l.Stopped(t)
		}

		second, err := create()
		require.NoError(t, err)
		require.NoError(t, second.Start(ctx, host))
		require.NoError(t, second.Shutdown(ctx))
	})
}
