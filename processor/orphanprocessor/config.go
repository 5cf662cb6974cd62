package orphanprocessor

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/confmap"

	"github.com/orphanwatch/orphanwatch/internal/rules"
	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Config is the configuration of the `orphan` processor. Every field has a default (see
// createDefaultConfig and the README's config reference).
type Config struct {
	// Config holds the rule settings shared with the orphanmetrics exporter and connector
	// (decision_wait, max_request_duration, clock_skew_tolerance, run_timeout, max_attempts,
	// attributes, cancellation, retryable, prices, detached, keys): internal/rules. Here
	// DecisionWait is the longest the spans of a trace are held, from the arrival of its first
	// span, when its root does not come; then they move on with their verdicts deferred until
	// it comes (docs/verdicts.md "When verdicts are decided"). Spans are never held longer.
	// 0 decides each batch as it arrives (the offline CLI does this).
	rules.Config `mapstructure:",squash"`
	// DecisionWaitAfterRoot is how long the spans of a trace are held after its root span
	// arrived (and spans arriving after that, from their arrival): children exported a little
	// after their root, and clock skew. In the spirit of tail_sampling's
	// decision_wait_after_root_received. A value above decision_wait acts as decision_wait.
	DecisionWaitAfterRoot time.Duration `mapstructure:"decision_wait_after_root"`
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
// correlator keeps (rules.LimitsConfig, squashed: the same keys under `limits`). Each bound has
// an eviction policy and a counter.
type LimitsConfig struct {
	// MaxTraces bounds traces held while waiting; the oldest is decided early when full.
	MaxTraces int `mapstructure:"max_traces"`
	// MaxSpansPerTrace bounds spans held for one trace; a full trace is decided early.
	MaxSpansPerTrace int `mapstructure:"max_spans_per_trace"`
	// LimitsConfig bounds the correlator's records (root records, keys, context and pending
	// spans, open runs).
	rules.LimitsConfig `mapstructure:",squash"`
}

var _ confmap.Validator = (*Config)(nil)

// Validate checks the configuration; each error names its field.
func (c *Config) Validate() error {
	var errs []error
	if c.DecisionWaitAfterRoot < 0 {
		errs = append(errs, fmt.Errorf("decision_wait_after_root: must not be negative, got %s", c.DecisionWaitAfterRoot))
	}
	if c.Limits.MaxTraces <= 0 {
		errs = append(errs, fmt.Errorf("limits.max_traces: must be positive, got %d", c.Limits.MaxTraces))
	}
	if c.Limits.MaxSpansPerTrace <= 0 {
		errs = append(errs, fmt.Errorf("limits.max_spans_per_trace: must be positive, got %d", c.Limits.MaxSpansPerTrace))
	}
	if err := c.Config.Validate(c.Limits.LimitsConfig); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// verdictConfig maps the collector configuration onto the correlator's rules.
func (c *Config) verdictConfig() verdict.Config { return c.VerdictConfig(c.Limits.LimitsConfig) }

// readerOptions maps the configuration onto the span reader's attribute names.
func (c *Config) readerOptions() spanread.Options { return c.ReaderOptions() }
