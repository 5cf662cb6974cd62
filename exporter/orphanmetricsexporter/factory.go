package orphanmetricsexporter // import "github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
)

// NewFactory returns the factory of the orphanmetrics traces exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithTraces(createTraces, metadata.TracesStability),
	)
}

func createDefaultConfig() component.Config {
	return NewDefaultConfig()
}

// NewDefaultConfig returns the default configuration: serve on [DefaultEndpoint] at
// [DefaultPath], with the default metric, mode and rule settings
// (orphanmetrics.NewDefaultSettings: namespace orphanwatch, 500 values per label, 2,000 series
// per counter, observe mode).
func NewDefaultConfig() *Config {
	server := confighttp.NewDefaultServerConfig()
	server.NetAddr.Endpoint = DefaultEndpoint
	return &Config{
		ServerConfig: server,
		Path:         DefaultPath,
		Settings:     *orphanmetrics.NewDefaultSettings(),
	}
}

func createTraces(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
	oCfg, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("orphanmetrics: unexpected config type %T", cfg)
	}
	exp, err := newMetricsExporter(oCfg, set)
	if err != nil {
		return nil, err
	}
	// The metrics are local: no queue (the helper's default is none) and no
	// retry, since recording cannot fail transiently.
	return exporterhelper.NewTraces(ctx, set, cfg,
		exp.consumeTraces,
		exporterhelper.WithStart(exp.start),
		exporterhelper.WithShutdown(exp.shutdown),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
	)
}
