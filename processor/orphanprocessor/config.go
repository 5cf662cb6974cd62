package orphanprocessor

import (
	"errors"

	"go.opentelemetry.io/collector/confmap"

	"github.com/orphanwatch/orphanwatch/internal/rules"
	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Config is the configuration of the `orphan` processor. Every field has a default (see
// createDefaultConfig and the README's config reference).
type Config struct {
	// Config holds the rule settings shared with the orphanmetrics exporter and connector
	// (decision_wait, decision_wait_after_root, max_request_duration, clock_skew_tolerance,
	// run_timeout, max_attempts, attributes, cancellation, retryable, prices, detached, keys):
	// internal/rules. Here
	// DecisionWait is the longest the spans of a trace are held, from the arrival of its first
	// span, when its root does not come; then they move on with their verdicts deferred until
	// it comes (docs/verdicts.md "When verdicts are decided"). Spans are never held longer.
	// 0 decides each batch as it arrives (the offline CLI does this).
	rules.Config `mapstructure:",squash"`
	// Limits bound what the processor holds and keeps, each with its eviction counter.
	Limits LimitsConfig `mapstructure:"limits"`
}

// The rule settings' types, shared with the exporter and connector (internal/rules).
type (
	// AttributesConfig names the span attributes read.
	AttributesConfig = rules.AttributesConfig
	// DeadlineConfig is one deadline attribute.
	DeadlineConfig = rules.DeadlineConfig
	// CancellationConfig lists what means cancellation.
	CancellationConfig = rules.CancellationConfig
	// RetryableConfig says which failures are retryable.
	RetryableConfig = rules.RetryableConfig
	// PriceConfig is a model's price in USD per million tokens.
	PriceConfig = rules.PriceConfig
	// DetachedConfig says which work is meant to outlive the request.
	DetachedConfig = rules.DetachedConfig
)

// LimitsConfig bounds the processor's state: the traces and spans it holds, and what its
// correlator keeps (rules.LimitsConfig, squashed: its keys directly under `limits`). Each bound
// has an eviction policy and a counter.
type LimitsConfig struct {
	rules.LimitsConfig `mapstructure:",squash"`
}

var _ confmap.Validator = (*Config)(nil)

// Validate checks the configuration; each error names its field.
func (c *Config) Validate() error {
	var errs []error
	if err := c.Config.Validate(c.Limits.LimitsConfig); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// verdictConfig maps the collector configuration onto the correlator's rules.
func (c *Config) verdictConfig() verdict.Config { return c.VerdictConfig(c.Limits.LimitsConfig) }

// readerOptions maps the configuration onto the span reader's attribute names.
func (c *Config) readerOptions() spanread.Options { return c.ReaderOptions() }
