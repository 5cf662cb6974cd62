package orphanmetricsconnector // import "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"
)

// NewFactory returns the factory of the orphanmetrics connector (traces to metrics).
func NewFactory() connector.Factory {
	return connector.NewFactory(
		metadata.Type,
		createDefaultConfig,
		connector.WithTracesToMetrics(createTracesToMetrics, metadata.TracesToMetricsStability),
	)
}

func createDefaultConfig() component.Config { return NewDefaultConfig() }

func createTracesToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("orphanmetrics: unexpected config type %T", cfg)
	}
	return newConnector(c, set, next)
}
