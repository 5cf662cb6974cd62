package orphankeysextension

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"

	"github.com/orphanwatch/orphanwatch/extension/orphankeysextension/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
)

// loadConfig is the config of the extension id in testdata/config.yaml.
func loadConfig(t *testing.T, id component.ID) *Config {
	t.Helper()
	return componentcheck.Config(t, NewFactory(), id.String()).(*Config)
}

func TestLoadConfig(t *testing.T) {
	def := loadConfig(t, component.NewID(metadata.Type))
	require.NoError(t, confmap.Validate(def))
	assert.Equal(t, []string{"localhost:9092"}, def.Brokers)
	assert.Equal(t, "orphanwatch-keys", def.ClientID)
	assert.Equal(t, TopicConfig{Name: "orphanwatch_keys", Create: true, Partitions: 1, ReplicationFactor: -1,
		CleanupPolicy: CleanupCompactDelete, Retention: 24 * time.Hour, CheckTimeout: 10 * time.Second}, def.Topic)
	assert.Equal(t, 5*time.Second, def.Wait)
	assert.Equal(t, 100_000, def.MaxRecords)
	assert.Equal(t, 10_000, def.MaxWaiting)

	tier := loadConfig(t, component.NewIDWithName(metadata.Type, "tier"))
	require.NoError(t, confmap.Validate(tier))
	// The kafka receiver's keys, in its shape.
	assert.Equal(t, []string{"kafka-1:9093", "kafka-2:9093"}, tier.Brokers)
	assert.Equal(t, "orphanwatch-keys-m1", tier.ClientID)
	require.NotNil(t, tier.TLS)
	assert.Equal(t, "kafka.internal", tier.TLS.ServerName)
	require.NotNil(t, tier.Authentication.SASL)
	assert.Equal(t, "SCRAM-SHA-512", tier.Authentication.SASL.Mechanism)
	assert.Equal(t, "orphanwatch", tier.Authentication.SASL.Username)
	assert.Equal(t, 5*time.Second, tier.DialTimeout)
	assert.Equal(t, TopicConfig{Name: "team_keys", Create: true, Partitions: 3, ReplicationFactor: 3,
		CleanupPolicy: CleanupCompact, Retention: 24 * time.Hour, CheckTimeout: 20 * time.Second}, tier.Topic)
	assert.Equal(t, 2*time.Second, tier.Wait)
	assert.Equal(t, 5000, tier.MaxRecords)
	assert.Equal(t, 100, tier.MaxWaiting)
}

// Every bad field is named as written in YAML, each once; the secret is never printed.
func TestValidateNamesFields(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"brokers": []any{"k:9092", " "},
		"auth":    map[string]any{"sasl": map[string]any{"mechanism": "GSSAPI"}},
		"topic": map[string]any{"name": " ", "partitions": 0, "replication_factor": -2,
			"cleanup_policy": "delete", "check_timeout": "0s"},
		"secret": "short", "wait": "-1s", "max_records": 0, "max_waiting": -1,
	}).Unmarshal(cfg))
	err := confmap.Validate(cfg)
	require.Error(t, err)
	for _, want := range []string{
		"brokers[1]: must not be empty",
		`auth.sasl.mechanism: "GSSAPI" is not supported by orphan_keys`,
		"topic.name: must not be empty",
		"topic.partitions: must be positive or -1 (the broker's default), got 0",
		"topic.replication_factor: must be positive or -1 (the broker's default), got -2",
		`topic.cleanup_policy: must be "compact" or "compact,delete" (key records are compacted per key), got "delete"`,
		"topic.check_timeout: must be positive, got 0s",
		"secret: must be at least 16 bytes, got 5",
		"wait: must not be negative, got -1s",
		"max_records: must be positive, got 0",
		"max_waiting: must be positive, got -1",
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "short", "the secret is never printed")

	// Retention matters only under compact,delete; SASL needs a user; Kerberos is refused.
	cfg = NewFactory().CreateDefaultConfig().(*Config)
	cfg.Secret = "0123456789abcdef"
	cfg.Topic.Retention = 0
	require.ErrorContains(t, confmap.Validate(cfg), `topic.retention: must be positive under cleanup_policy "compact,delete", got 0s`)
	cfg.Topic.CleanupPolicy = CleanupCompact
	require.NoError(t, confmap.Validate(cfg))
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"auth": map[string]any{"sasl": map[string]any{"mechanism": "PLAIN"}, "kerberos": map[string]any{"service_name": "kafka"}},
	}).Unmarshal(cfg))
	err = confmap.Validate(cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "auth.sasl.username: must not be empty")
	assert.Contains(t, err.Error(), "auth.kerberos: not supported by orphan_keys")

	// The Kafka client's own fields are configkafka's: its Validate runs too.
	cfg = NewFactory().CreateDefaultConfig().(*Config)
	cfg.Secret = "0123456789abcdef"
	cfg.DialTimeout = 0
	require.ErrorContains(t, confmap.Validate(cfg), "dial_timeout")
}

// TestSecretEntropy: a secret of the right length that cannot be random is refused, naming the
// field and never printing the secret: only whitespace (16 spaces, the case issue 30 found
// accepted), one repeated character, a short pattern; random secrets (hex, base64) pass.
func TestSecretEntropy(t *testing.T) {
	for _, c := range []struct {
		secret, want string
	}{
		{strings.Repeat(" ", 16), "secret: must not be only whitespace"},
		{" \t\n\r \t\n\r \t\n\r \t\n\r", "secret: must not be only whitespace"},
		{strings.Repeat("x", 32), "secret: must have at least 6 distinct bytes, got 1"},
		{strings.Repeat("ab", 16), "secret: must have at least 6 distinct bytes, got 2"},
		{strings.Repeat("12345", 4), "secret: must have at least 6 distinct bytes, got 5"},
		{"3f9a0c1e7b2d4865", ""},                                                  // openssl rand -hex 8
		{"q8Zr1Xh0vT3mB6yK2pL5wN9e", ""},                                          // base64 of 18 random bytes
		{" 3f9a0c1e7b2d4865 ", ""},                                                // whitespace around a random secret is still a random secret
		{"c0ffee00c0ffee00c0ffee00c0ffee00", "got 4"},                             // a pattern: 4 distinct bytes
		{"correct horse battery staple", ""},                                      // a passphrase: many distinct bytes
		{"\x00\x01\x02\x03\x04\x05\x00\x01\x02\x03\x04\x05", "at least 16 bytes"}, // too short first
	} {
		cfg := NewFactory().CreateDefaultConfig().(*Config)
		cfg.Secret = configopaque.String(c.secret)
		err := confmap.Validate(cfg)
		if c.want == "" {
			assert.NoError(t, err, "%q", c.secret)
			continue
		}
		require.ErrorContains(t, err, c.want, "%q", c.secret)
		if strings.TrimSpace(c.secret) != "" {
			assert.NotContains(t, err.Error(), c.secret, "the secret is never printed")
		}
	}
}
