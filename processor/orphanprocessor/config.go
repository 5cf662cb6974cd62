package orphanprocessor

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/confmap"

	"github.com/orphanwatch/orphanwatch/internal/rulesconfig"
	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Config is the configuration of the `orphan` processor. Every field has a default (see
// createDefaultConfig and the README's config reference).
type Config struct {
	// Config holds the rule settings shared with the orphanmetrics exporter and connector
	// (decision_wait, decision_wait_after_root, chain_wait, abandoned_root_hold,
	// max_request_duration, clock_skew_tolerance, run_timeout, max_attempts, attributes,
	// cancellation, retryable, prices, detached, keys): internal/rulesconfig. Here DecisionWait is the
	// longest the spans of a trace are held, from the arrival of its first span, when its root
	// does not come; then they move on with their verdicts deferred until it comes
	// (docs/verdicts.md "When verdicts are decided"). Spans are never held longer, but for an
	// abandoned root (abandoned_root_hold). decision_wait: 0 is the deprecated spelling of
	// decide_each_batch: true (DecidesEachBatch).
	rulesconfig.Config `mapstructure:",squash"`
	// DecideEachBatch (`decide_each_batch`) decides each batch whole as it arrives, in the
	// calling goroutine: nothing is held, deferred or kept open, every decision is final (every
	// run over, docs/verdicts.md "When a run is over"); decision_wait, decision_wait_after_root,
	// chain_wait and abandoned_root_hold do not apply. Sound where every batch carries whole
	// traces (behind groupbytrace, whose wait_duration then plays decision_wait's part).
	// Default false. Before it had its own name it was written decision_wait: 0, which still
	// means it (logged as deprecated at start-up).
	DecideEachBatch bool `mapstructure:"decide_each_batch"`
	// SendBatchMaxSize bounds the spans handed on to the next consumer in one call, as the batch
	// processor's setting of the same name does: what a tick, a limit or shutdown releases is
	// split into calls of at most this many spans (a span is never split; the spans of one trace
	// may go in several calls). Default 8192, the batch processor's usual value; one request of
	// everything held at shutdown (500,000 spans, 163 MB) was refused by a downstream collector
	// with default settings (issue 30).
	SendBatchMaxSize int `mapstructure:"send_batch_max_size"`
	// Limits bound what the processor holds and keeps, each with its eviction counter.
	Limits LimitsConfig `mapstructure:"limits"`
}

// The rule settings' types, shared with the exporter and connector (internal/rulesconfig).
type (
	// AttributesConfig names the span attributes read.
	AttributesConfig = rulesconfig.AttributesConfig
	// DeadlineConfig is one deadline attribute.
	DeadlineConfig = rulesconfig.DeadlineConfig
	// CancellationConfig lists what means cancellation.
	CancellationConfig = rulesconfig.CancellationConfig
	// RetryableConfig says which failures are retryable.
	RetryableConfig = rulesconfig.RetryableConfig
	// PriceConfig is a model's price in USD per million tokens.
	PriceConfig = rulesconfig.PriceConfig
	// DetachedConfig says which work is meant to outlive the request.
	DetachedConfig = rulesconfig.DetachedConfig
)

// LimitsConfig bounds the processor's state: the traces and spans it holds, and what its
// correlator keeps (rulesconfig.LimitsConfig, squashed: its keys directly under `limits`). Each bound
// has an eviction policy and a counter.
type LimitsConfig struct {
	rulesconfig.LimitsConfig `mapstructure:",squash"`
	// MaxHeldBytes bounds the spans held, in bytes of their OTLP protobuf encoding (each batch's
	// ptrace.ProtoMarshaler.TracesSize, shared evenly among its spans); when exceeded, the oldest
	// traces are decided early (evictions{state="bytes"}). The heap the spans take is about 3
	// times this (README "Memory and request size"). 0: no bound in bytes.
	MaxHeldBytes int64 `mapstructure:"max_held_bytes"`
}

var _ confmap.Validator = (*Config)(nil)

// Validate checks the configuration; each error names its field.
func (c *Config) Validate() error {
	var errs []error
	if err := c.Config.Validate(c.Limits.LimitsConfig); err != nil {
		errs = append(errs, err)
	}
	if c.SendBatchMaxSize <= 0 {
		errs = append(errs, fmt.Errorf("send_batch_max_size: must be positive, got %d", c.SendBatchMaxSize))
	}
	if c.Limits.MaxHeldBytes < 0 {
		errs = append(errs, fmt.Errorf("limits.max_held_bytes: must not be negative (0: no bound), got %d", c.Limits.MaxHeldBytes))
	}
	return errors.Join(errs...)
}

// DecidesEachBatch is whether each batch is decided whole as it arrives: decide_each_batch, or
// its deprecated spelling decision_wait: 0.
func (c *Config) DecidesEachBatch() bool { return c.DecideEachBatch || c.DecisionWait == 0 }

// verdictConfig maps the collector configuration onto the correlator's rules.
func (c *Config) verdictConfig() verdict.Config { return c.VerdictConfig(c.Limits.LimitsConfig) }

// readerOptions maps the configuration onto the span reader's attribute names.
func (c *Config) readerOptions() spanread.Options { return c.ReaderOptions() }
