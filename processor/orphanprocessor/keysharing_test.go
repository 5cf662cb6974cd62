package orphanprocessor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"
)

func TestKeySharingOffByDefault(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.False(t, cfg.KeySharing.Enabled())
	require.NoError(t, cfg.Validate())
	assert.Equal(t, 5*time.Second, cfg.KeySharing.Wait)
	assert.Equal(t, "orphanwatch_keys", cfg.KeySharing.Topic)
}

func TestKeySharingValidateNamesFields(t *testing.T) {
	cm := confmap.NewFromStringMap(map[string]any{"key_sharing": map[string]any{
		"brokers": []any{"127.0.0.1:9092", " "}, "topic": "", "secret": "short", "wait": "-1s",
		"max_records": 0, "max_waiting": -1, "partitions": 0, "replication_factor": 0,
		"retention": "0s", "dial_timeout": "0s",
	}})
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, cm.Unmarshal(cfg))
	err := cfg.Validate()
	require.Error(t, err)
	for _, field := range []string{"key_sharing.brokers[1]", "key_sharing.topic", "key_sharing.secret: must be at least 16 bytes, got 5",
		"key_sharing.wait", "key_sharing.max_records", "key_sharing.max_waiting", "key_sharing.partitions",
		"key_sharing.replication_factor", "key_sharing.retention", "key_sharing.dial_timeout"} {
		assert.Contains(t, err.Error(), field)
	}
	assert.NotContains(t, err.Error(), "short", "the secret is never printed")
}

// With key sharing on, the reader's key hash is the keyed hash: a processor without the
// secret (or without key sharing) hashes the same key differently.
func TestKeySharingHashesWithTheSecret(t *testing.T) {
	mk := func(secret string) *orphanProcessor {
		cfg := createDefaultConfig().(*Config)
		if secret != "" {
			cfg.KeySharing.Brokers = []string{"127.0.0.1:1"}
			cfg.KeySharing.Secret = configopaque.String("0123456789abcdef" + configSecretSuffix(secret))
		}
		require.NoError(t, cfg.Validate())
		p, err := newOrphanProcessor(processortest.NewNopSettings(processortest.NopType), cfg, new(consumertest.TracesSink))
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
		return p
	}
	plain, a, b := mk(""), mk("a"), mk("b")
	ha, hb := a.reader.KeyHashOf("K"), b.reader.KeyHashOf("K")
	assert.NotEqual(t, plain.reader.KeyHashOf("K"), ha)
	assert.NotEqual(t, ha, hb)
	assert.NotZero(t, ha)
}

func configSecretSuffix(s string) string { return strings.Repeat(s, 4) }
