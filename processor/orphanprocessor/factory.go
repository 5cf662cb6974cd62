// Package orphanprocessor provides the `orphan` traces processor: it holds the spans of each
// trace for a short wait, correlates retry attempts with the liveness of their root request,
// decides each run's outcome, and writes the verdicts onto the spans as `orphanwatch.*`
// attributes (docs/verdicts.md). The decisions themselves live in internal/verdict.
package orphanprocessor

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"

	"github.com/orphanwatch/orphanwatch/internal/rulesconfig"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// NewFactory returns the factory of the `orphan` processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithTraces(createTracesProcessor, metadata.TracesStability),
	)
}

// defaultSendBatchMaxSize is send_batch_max_size's default: the batch processor's usual
// send_batch_max_size, 8192 spans (about 2.7 MB of OTLP at the 330 bytes a span of issue 30's
// traffic took), under the 4 MiB an OTLP gRPC receiver takes by default and the 20 MiB of an
// OTLP HTTP receiver.
const defaultSendBatchMaxSize = 8192

// defaultMaxHeldBytes is limits.max_held_bytes's default (see the README for the heap it takes).
const defaultMaxHeldBytes = 256 << 20

func createDefaultConfig() component.Config {
	return &Config{
		Config:           rulesconfig.Default(),
		SendBatchMaxSize: defaultSendBatchMaxSize,
		Limits:           LimitsConfig{LimitsConfig: rulesconfig.DefaultLimits(), MaxHeldBytes: defaultMaxHeldBytes},
	}
}

func createTracesProcessor(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	c := cfg.(*Config)
	p, err := newOrphanProcessor(set, c, next)
	if err != nil {
		return nil, err
	}
	rulesconfig.LogAttributes(set.Logger, c.Attributes.Effective())
	return p, nil
}
