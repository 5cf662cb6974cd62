package orphanprocessor

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/orphanwatch/orphanwatch/internal/rulesconfig"
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
	assert.Equal(t, LimitsConfig{LimitsConfig: rulesconfig.LimitsConfig{MaxTraces: 1000, MaxSpansPerTrace: 500, MaxRootRecords: 2000, MaxIdempotencyKeys: 3000, MaxMultiRootSpans: 100_000, MaxContextSpans: 100_000, MaxPendingSpans: 200_000, MaxOpenRuns: 100_000}, MaxHeldBytes: defaultMaxHeldBytes}, cfg.Limits)
	vc := cfg.verdictConfig()
	assert.Equal(t, 100*time.Millisecond, vc.ClockSkew)
	assert.Equal(t, 3000, vc.MaxKeys)
}

func TestInvalidConfigNamesTheField(t *testing.T) {
	for name, want := range map[string][]string{
		"bad_format": {"attributes.deadlines[0].format", "unix_minutes"},
		"bad_limits": {"decision_wait", "limits.max_traces", "send_batch_max_size: must be positive", "limits.max_held_bytes: must not be negative"},
		"bad_price":  {"prices.gpt-4o.input_per_million"},
		"bad_waits":  {"chain_wait: must not be negative", "abandoned_root_hold: must not be negative"},
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

// TestWaitSettings: chain_wait and abandoned_root_hold follow decision_wait unless set, each
// read as written; decide_each_batch is off by default, and decision_wait: 0 is its
// deprecated spelling.
func TestWaitSettings(t *testing.T) {
	def := loadConfig(t, "")
	assert.Nil(t, def.ChainWait, "unset")
	assert.Nil(t, def.AbandonedRootHold, "unset")
	assert.Equal(t, 30*time.Second, def.EffectiveChainWait(), "decision_wait when unset")
	assert.Equal(t, 30*time.Second, def.EffectiveAbandonedRootHold(), "decision_wait when unset")
	assert.False(t, def.DecideEachBatch)
	assert.False(t, def.DecidesEachBatch())
	vc := def.verdictConfig()
	assert.Equal(t, 30*time.Second, vc.ChainWait)
	assert.Equal(t, 30*time.Second, vc.ReleaseWait)

	cfg := loadConfig(t, "waits")
	require.NoError(t, confmap.Validate(cfg))
	require.NotNil(t, cfg.ChainWait)
	require.NotNil(t, cfg.AbandonedRootHold)
	assert.Equal(t, 5*time.Second, cfg.EffectiveChainWait())
	assert.Equal(t, time.Duration(0), cfg.EffectiveAbandonedRootHold(), "0 as written, not decision_wait")
	assert.Equal(t, 20*time.Second, cfg.LongestWait())
	assert.True(t, cfg.DecidesEachBatch())
	vc = cfg.verdictConfig()
	assert.Equal(t, 5*time.Second, vc.ChainWait, "chain_wait")
	assert.Equal(t, 20*time.Second, vc.ReleaseWait, "decision_wait")

	zero := loadConfig(t, "zero_wait")
	require.NoError(t, confmap.Validate(zero))
	assert.False(t, zero.DecideEachBatch)
	assert.True(t, zero.DecidesEachBatch(), "decision_wait: 0 still decides each batch")
}
