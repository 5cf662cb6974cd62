package orphankeysextension

import (
	"context"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/kafka/configkafka"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/orphanwatch/orphanwatch/extension/orphankeysextension/internal/metadata"
)

// NewFactory returns the factory of the `orphan_keys` extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, createExtension, metadata.ExtensionStability)
}

func createDefaultConfig() component.Config {
	cc := configkafka.NewDefaultClientConfig()
	cc.ClientID = "orphanwatch-keys"
	return &Config{
		ClientConfig: cc,
		Topic: TopicConfig{
			Name:              "orphanwatch_keys",
			Create:            true,
			Partitions:        1,
			ReplicationFactor: -1,
			CleanupPolicy:     CleanupCompactDelete,
			Retention:         24 * time.Hour,
			CheckTimeout:      10 * time.Second,
		},
		Wait:       5 * time.Second,
		MaxRecords: 100_000,
		MaxWaiting: 10_000,
	}
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newKeys(cfg.(*Config), set.ID, set.TelemetrySettings)
}
