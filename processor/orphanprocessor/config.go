package orphanprocessor

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Config is the configuration of the `orphan` processor. Every field has a default (see
// createDefaultConfig and the README's config reference).
type Config struct {
	// DecisionWait is the longest the spans of a trace are held, from the arrival of its first
	// span, when its root does not come; then they move on with their verdicts deferred until
	// it comes (docs/verdicts.md "When verdicts are decided"). Spans are never held longer.
	// 0 decides each batch as it arrives (the offline CLI does this).
	DecisionWait time.Duration `mapstructure:"decision_wait"`
	// DecisionWaitAfterRoot is how long the spans of a trace are held after its root span
	// arrived (and spans arriving after that, from their arrival): children exported a little
	// after their root, and clock skew. In the spirit of tail_sampling's
	// decision_wait_after_root_received. A value above decision_wait acts as decision_wait.
	DecisionWaitAfterRoot time.Duration `mapstructure:"decision_wait_after_root"`
	// MaxRequestDuration is how long spans that left before their root wait for it: after
	// that they are judged without it (liveness unknown, runs unknown_root), carried on a
	// span made for the purpose.
	MaxRequestDuration time.Duration `mapstructure:"max_request_duration"`
	// ClockSkewTolerance applies when a span and its root are in different services.
	ClockSkewTolerance time.Duration `mapstructure:"clock_skew_tolerance"`
	// RunTimeout: an attempt starting longer than this after the previous attempt ended begins
	// a new run. 0 disables.
	RunTimeout time.Duration `mapstructure:"run_timeout"`
	// MaxAttempts closes a run when reached. 0: no limit.
	MaxAttempts int `mapstructure:"max_attempts"`
	// SendBatchMaxSize bounds the spans handed on to the next consumer in one call, as the batch
	// processor's setting of the same name does: what a tick, a limit or shutdown releases is
	// split into calls of at most this many spans (a span is never split; the spans of one trace
	// may go in several calls). Default 8192, the batch processor's usual value; one request of
	// everything held at shutdown (500,000 spans, 163 MB) was refused by a downstream collector
	// with default settings (issue 30).
	SendBatchMaxSize int `mapstructure:"send_batch_max_size"`

	// Attributes names the span attributes read (attempt, idempotency key, deadlines, tokens,
	// model, cost).
	Attributes AttributesConfig `mapstructure:"attributes"`
	// Cancellation says what means a cancellation or a passed deadline.
	Cancellation CancellationConfig `mapstructure:"cancellation"`
	// Retryable says which failures are retryable.
	Retryable RetryableConfig `mapstructure:"retryable"`
	// Prices maps a model name to its price in USD per million tokens. A model matches exactly
	// or by the longest configured prefix.
	Prices map[string]PriceConfig `mapstructure:"prices"`
	// Detached says which work is meant to outlive the request.
	Detached DetachedConfig `mapstructure:"detached"`
	// Limits bound what the processor holds and keeps, each with its eviction counter.
	Limits LimitsConfig `mapstructure:"limits"`
	// Keys names the orphan_keys extension (`orphan_keys` or `orphan_keys/name`) through which
	// the members of a tier share idempotency keys (README "Key sharing across a tier"); nil:
	// keys are not shared.
	Keys *component.ID `mapstructure:"keys"`
}

// AttributesConfig names the span attributes read. Lists are tried in order.
type AttributesConfig struct {
	// Attempt lists attributes holding a 1-based attempt number, beyond
	// http.request.resend_count (which is always read, attempt = count + 1).
	Attempt []string `mapstructure:"attempt"`
	// IdempotencyKey lists attributes holding an idempotency key. Keys are hashed at once.
	IdempotencyKey []string `mapstructure:"idempotency_key"`
	// Deadlines lists attributes carrying a deadline and their format.
	Deadlines []DeadlineConfig `mapstructure:"deadlines"`
	// InputTokens and OutputTokens list token-usage attributes (gen_ai.usage.* and aliases).
	InputTokens  []string `mapstructure:"input_tokens"`
	OutputTokens []string `mapstructure:"output_tokens"`
	// Model lists attributes naming the model.
	Model []string `mapstructure:"model"`
	// Cost lists attributes holding a call's cost in USD; they win over the price table.
	Cost []string `mapstructure:"cost"`

	// The extra_ lists add to the list of the same name instead of replacing it: their
	// attributes are tried after it (after the defaults, unless the list itself is set too).
	// Naming an attribute in `idempotency_key` replaces the default keys; naming it in
	// `extra_idempotency_key` keeps them. A name already in the list is not read twice.

	// ExtraAttempt adds to Attempt.
	ExtraAttempt []string `mapstructure:"extra_attempt"`
	// ExtraIdempotencyKey adds to IdempotencyKey.
	ExtraIdempotencyKey []string `mapstructure:"extra_idempotency_key"`
	// ExtraDeadlines adds to Deadlines.
	ExtraDeadlines []DeadlineConfig `mapstructure:"extra_deadlines"`
	// ExtraInputTokens adds to InputTokens.
	ExtraInputTokens []string `mapstructure:"extra_input_tokens"`
	// ExtraOutputTokens adds to OutputTokens.
	ExtraOutputTokens []string `mapstructure:"extra_output_tokens"`
	// ExtraModel adds to Model.
	ExtraModel []string `mapstructure:"extra_model"`
	// ExtraCost adds to Cost.
	ExtraCost []string `mapstructure:"extra_cost"`
}

// Effective returns the lists the processor reads: each list followed by its extra_ list,
// names that appear twice kept at their first place. Its Extra fields are empty.
func (a AttributesConfig) Effective() AttributesConfig {
	return AttributesConfig{
		Attempt:        appendNew(a.Attempt, a.ExtraAttempt),
		IdempotencyKey: appendNew(a.IdempotencyKey, a.ExtraIdempotencyKey),
		Deadlines:      appendNewDeadlines(a.Deadlines, a.ExtraDeadlines),
		InputTokens:    appendNew(a.InputTokens, a.ExtraInputTokens),
		OutputTokens:   appendNew(a.OutputTokens, a.ExtraOutputTokens),
		Model:          appendNew(a.Model, a.ExtraModel),
		Cost:           appendNew(a.Cost, a.ExtraCost),
	}
}

// appendNew returns a new slice: list, then the names of extra not in it yet.
func appendNew(list, extra []string) []string {
	out := make([]string, 0, len(list)+len(extra))
	seen := make(map[string]bool, len(list)+len(extra))
	for _, l := range [][]string{list, extra} {
		for _, n := range l {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// appendNewDeadlines is appendNew for deadlines: an attribute is read with its first format.
func appendNewDeadlines(list, extra []DeadlineConfig) []DeadlineConfig {
	out := make([]DeadlineConfig, 0, len(list)+len(extra))
	seen := make(map[string]bool, len(list)+len(extra))
	for _, l := range [][]DeadlineConfig{list, extra} {
		for _, d := range l {
			if !seen[d.Attribute] {
				seen[d.Attribute] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// DeadlineConfig is one deadline attribute.
type DeadlineConfig struct {
	Attribute string `mapstructure:"attribute"`
	// Format: unix_seconds, unix_milliseconds, rfc3339 (absolute); grpc_timeout, milliseconds,
	// seconds (relative to the span's start).
	Format spanread.DeadlineFormat `mapstructure:"format"`
}

// CancellationConfig lists the error.type and exception.type values that mean cancellation.
// HTTP 499, gRPC CANCELLED (1) and DEADLINE_EXCEEDED (4) in rpc.grpc.status_code or
// rpc.status_code, and an HTTP CLIENT span ended with unset status and no response status code
// are always recognised.
type CancellationConfig struct {
	// Grace: a cancellation recorded within this of the gone time means the run noticed its
	// caller left; one further away is the attempt's own timeout.
	Grace time.Duration `mapstructure:"grace"`
	// ErrorTypes are error.type / exception.type values meaning the work noticed a
	// cancellation: case-insensitive, also by last segment and by subclass name, `*` for any
	// text (README, `cancellation.error_types`).
	ErrorTypes []string `mapstructure:"error_types"`
	// DeadlineErrorTypes are the values meaning a deadline passed (deadline_exceeded, not
	// cancelled); a name listed here exactly wins over a subclass match in ErrorTypes.
	DeadlineErrorTypes []string `mapstructure:"deadline_error_types"`
}

// RetryableConfig says which failures are retryable.
type RetryableConfig struct {
	// HTTPStatusCodes are retryable HTTP response status codes (RFC 9110 §15.6 and others).
	HTTPStatusCodes []int `mapstructure:"http_status_codes"`
	// GRPCStatusCodes are retryable gRPC status codes (numbers: 14 UNAVAILABLE, ...).
	GRPCStatusCodes []int `mapstructure:"grpc_status_codes"`
	// ErrorTypes are retryable error.type values.
	ErrorTypes []string `mapstructure:"error_types"`
}

// PriceConfig is a model's price in USD per million tokens.
type PriceConfig struct {
	InputPerMillion  float64 `mapstructure:"input_per_million"`
	OutputPerMillion float64 `mapstructure:"output_per_million"`
}

// DetachedConfig says which work is meant to outlive the request.
type DetachedConfig struct {
	// ConsumerSpans: what runs under a messaging CONSUMER span.
	ConsumerSpans bool `mapstructure:"consumer_spans"`
	// LinkedRoots: a trace whose root span has links (reached only through a span link).
	LinkedRoots bool `mapstructure:"linked_roots"`
	// LateEntrySpans: a SERVER span that starts after its parent ended is a follow-up nobody
	// waits for (a redirect followed later) when its root completed and the span it follows
	// ended without an error or a cancellation; otherwise it is judged like any span
	// (verdict.Correlator.isFollowUp, docs/verdicts.md).
	LateEntrySpans bool `mapstructure:"late_entry_spans"`
}

// LimitsConfig bounds the processor's state. Each bound has an eviction policy and a counter.
type LimitsConfig struct {
	// MaxTraces bounds traces held while waiting; the oldest is decided early when full.
	MaxTraces int `mapstructure:"max_traces"`
	// MaxSpansPerTrace bounds spans held for one trace; a full trace is decided early.
	MaxSpansPerTrace int `mapstructure:"max_spans_per_trace"`
	// MaxHeldBytes bounds the spans held, in bytes of their OTLP protobuf encoding (each batch's
	// ptrace.ProtoMarshaler.TracesSize, shared evenly among its spans); when exceeded, the oldest
	// traces are decided early (evictions{state="bytes"}). The heap the spans take is a few times
	// this (README). 0: no bound in bytes.
	MaxHeldBytes int64 `mapstructure:"max_held_bytes"`
	// MaxRootRecords bounds root records kept for late spans and key-bound traces (FIFO).
	MaxRootRecords int `mapstructure:"max_root_records"`
	// MaxIdempotencyKeys bounds idempotency-key hashes remembered (FIFO).
	MaxIdempotencyKeys int `mapstructure:"max_idempotency_keys"`
	// MaxMultiRootSpans bounds the spans of traces with several roots whose root is remembered
	// so that late spans are judged against the root their siblings had (oldest traces first).
	MaxMultiRootSpans int `mapstructure:"max_multi_root_spans"`
	// MaxContextSpans bounds the records kept of spans already released (a few hundred bytes
	// each, not the spans), so that later spans of their trace are judged with them (oldest
	// traces first).
	MaxContextSpans int `mapstructure:"max_context_spans"`
	// MaxPendingSpans bounds the records of spans that left before their root arrived; when
	// full, the oldest trace's are judged without their root (unknown) and carried.
	MaxPendingSpans int `mapstructure:"max_pending_spans"`
	// MaxOpenRuns bounds runs left open by a decision (their final attempt so far not
	// terminal); when full, the oldest is closed with the outcome it had then.
	MaxOpenRuns int `mapstructure:"max_open_runs"`
}

var _ confmap.Validator = (*Config)(nil)

// Validate checks the configuration; each error names its field.
func (c *Config) Validate() error {
	var errs []error
	if c.DecisionWait < 0 {
		errs = append(errs, fmt.Errorf("decision_wait: must not be negative, got %s", c.DecisionWait))
	}
	if c.DecisionWaitAfterRoot < 0 {
		errs = append(errs, fmt.Errorf("decision_wait_after_root: must not be negative, got %s", c.DecisionWaitAfterRoot))
	}
	if c.Limits.MaxTraces <= 0 {
		errs = append(errs, fmt.Errorf("limits.max_traces: must be positive, got %d", c.Limits.MaxTraces))
	}
	if c.SendBatchMaxSize <= 0 {
		errs = append(errs, fmt.Errorf("send_batch_max_size: must be positive, got %d", c.SendBatchMaxSize))
	}
	if c.Limits.MaxHeldBytes < 0 {
		errs = append(errs, fmt.Errorf("limits.max_held_bytes: must not be negative (0: no bound), got %d", c.Limits.MaxHeldBytes))
	}
	if c.Limits.MaxSpansPerTrace <= 0 {
		errs = append(errs, fmt.Errorf("limits.max_spans_per_trace: must be positive, got %d", c.Limits.MaxSpansPerTrace))
	}
	for name, list := range map[string][]DeadlineConfig{
		"attributes.deadlines": c.Attributes.Deadlines, "attributes.extra_deadlines": c.Attributes.ExtraDeadlines,
	} {
		for i, d := range list {
			if strings.TrimSpace(d.Attribute) == "" {
				errs = append(errs, fmt.Errorf("%s[%d].attribute: must not be empty", name, i))
			}
			if err := d.Format.Check(); err != nil {
				errs = append(errs, fmt.Errorf("%s[%d].format: %w", name, i, err))
			}
		}
	}
	a := c.Attributes
	for name, list := range map[string][]string{
		"attributes.attempt": a.Attempt, "attributes.idempotency_key": a.IdempotencyKey,
		"attributes.input_tokens": a.InputTokens, "attributes.output_tokens": a.OutputTokens,
		"attributes.model": a.Model, "attributes.cost": a.Cost,
		"attributes.extra_attempt": a.ExtraAttempt, "attributes.extra_idempotency_key": a.ExtraIdempotencyKey,
		"attributes.extra_input_tokens": a.ExtraInputTokens, "attributes.extra_output_tokens": a.ExtraOutputTokens,
		"attributes.extra_model": a.ExtraModel, "attributes.extra_cost": a.ExtraCost,
	} {
		for i, a := range list {
			if strings.TrimSpace(a) == "" {
				errs = append(errs, fmt.Errorf("%s[%d]: must not be empty", name, i))
			}
		}
	}
	// The rules (clock_skew_tolerance, run_timeout, max_attempts, cancellation.grace,
	// retryable.*, prices, limits.max_root_records, limits.max_idempotency_keys,
	// limits.max_multi_root_spans, limits.max_context_spans, limits.max_pending_spans,
	// limits.max_open_runs, max_request_duration) are checked once, by the correlator's own Validate, which
	// names them as written here.
	if err := c.verdictConfig().Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// verdictConfig maps the collector configuration onto the correlator's rules.
func (c *Config) verdictConfig() verdict.Config {
	vc := verdict.DefaultConfig()
	vc.ClockSkew = c.ClockSkewTolerance
	vc.RunTimeout = c.RunTimeout
	vc.MaxAttempts = c.MaxAttempts
	vc.CancellationGrace = c.Cancellation.Grace
	vc.CancelErrorTypes = c.Cancellation.ErrorTypes
	vc.DeadlineErrorTypes = c.Cancellation.DeadlineErrorTypes
	vc.RetryableHTTPStatus = c.Retryable.HTTPStatusCodes
	vc.RetryableGRPCStatus = c.Retryable.GRPCStatusCodes
	vc.RetryableErrorTypes = c.Retryable.ErrorTypes
	vc.Prices = make(map[string]verdict.Price, len(c.Prices))
	for m, p := range c.Prices {
		vc.Prices[m] = verdict.Price{InputPerMillion: p.InputPerMillion, OutputPerMillion: p.OutputPerMillion}
	}
	vc.DetachConsumers = c.Detached.ConsumerSpans
	vc.DetachLinkedRoots = c.Detached.LinkedRoots
	vc.DetachLateEntries = c.Detached.LateEntrySpans
	vc.MaxRootRecords = c.Limits.MaxRootRecords
	vc.MaxKeys = c.Limits.MaxIdempotencyKeys
	vc.MaxIndexedSpans = c.Limits.MaxMultiRootSpans
	vc.MaxContextSpans = c.Limits.MaxContextSpans
	vc.MaxPendingSpans = c.Limits.MaxPendingSpans
	vc.MaxOpenRuns = c.Limits.MaxOpenRuns
	vc.MaxRequestDuration = c.MaxRequestDuration
	vc.ChainWait = c.DecisionWait
	return vc
}

// readerOptions maps the configuration onto the span reader's attribute names: the effective
// lists (each list, then its extra_ list).
func (c *Config) readerOptions() spanread.Options {
	a := c.Attributes.Effective()
	o := spanread.Options{
		AttemptAttributes: a.Attempt,
		IdempotencyKeys:   a.IdempotencyKey,
		InputTokens:       a.InputTokens,
		OutputTokens:      a.OutputTokens,
		Models:            a.Model,
		CostAttributes:    a.Cost,
	}
	for _, d := range a.Deadlines {
		o.Deadlines = append(o.Deadlines, spanread.DeadlineAttribute{Attribute: d.Attribute, Format: d.Format})
	}
	return o
}
