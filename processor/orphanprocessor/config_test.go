package orphanprocessor

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/orphanwatch/orphanwatch/internal/rules"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// loadConfig is the config of the processor named name in testdata/config.yaml.
func loadConfig(t *testing.T, name string) *Config {
	return componentcheck.Config(t, NewFactory(), component.NewIDWithName(metadata.Type, name).String()).(*Config)
}

func TestDefaultConfigIsValid(t *testing.T) {
	cfg := loadConfig(t, "")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, 30*time.Second, cfg.DecisionWait)
	assert.Equal(t, 250*time.Millisecond, cfg.ClockSkewTolerance)
	assert.Contains(t, cfg.Attributes.IdempotencyKey, "http.request.header.idempotency-key")
	assert.Equal(t, "gen_ai.usage.input_tokens", cfg.Attributes.InputTokens[0])
	assert.Contains(t, cfg.Retryable.HTTPStatusCodes, 503)
	assert.NotContains(t, cfg.Retryable.HTTPStatusCodes, 501)
	assert.Equal(t, 8192, cfg.SendBatchMaxSize, "the batch processor's send_batch_max_size")
	assert.EqualValues(t, 256<<20, cfg.Limits.MaxHeldBytes)
}

func TestCustomConfig(t *testing.T) {
	cfg := loadConfig(t, "custom")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, 2*time.Second, cfg.DecisionWait)
	assert.Equal(t, 100*time.Millisecond, cfg.ClockSkewTolerance)
	assert.Equal(t, 5, cfg.MaxAttempts)
	assert.Equal(t, []string{"retry.attempt"}, cfg.Attributes.Attempt)
	assert.Len(t, cfg.Attributes.Deadlines, 2)
	assert.Equal(t, PriceConfig{InputPerMillion: 2.5, OutputPerMillion: 10}, cfg.Prices["gpt-4o"])
	assert.False(t, cfg.Detached.LinkedRoots)
	assert.Equal(t, LimitsConfig{LimitsConfig: rules.LimitsConfig{MaxTraces: 1000, MaxSpansPerTrace: 500, MaxRootRecords: 2000, MaxIdempotencyKeys: 3000, MaxMultiRootSpans: 100_000, MaxContextSpans: 100_000, MaxPendingSpans: 200_000, MaxOpenRuns: 100_000}, MaxHeldBytes: defaultMaxHeldBytes}, cfg.Limits)
	vc := cfg.verdictConfig()
	assert.Equal(t, 100*time.Millisecond, vc.ClockSkew)
	assert.Equal(t, 3000, vc.MaxKeys)
}

func TestInvalidConfigNamesTheField(t *testing.T) {
	for name, want := range map[string][]string{
		"bad_format": {"attributes.deadlines[0].format", "unix_minutes"},
		"bad_limits": {"decision_wait", "limits.max_traces", "send_batch_max_size: must be positive", "limits.max_held_bytes: must not be negative"},
		"bad_price":  {"prices.gpt-4o.input_per_million"},
		"bad_rules": {"clock_skew_tolerance: ", "run_timeout: ", "max_attempts: ", "cancellation.grace: ",
			"limits.max_multi_root_spans: "},
	} {
		t.Run(name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, name))
			require.Error(t, err)
			for _, w := range want {
				// Named as in YAML, and each problem said once.
				assert.Equal(t, 1, strings.Count(err.Error(), w), "%q in %q", w, err.Error())
			}
		})
	}
}
