// Package rulesconfig is the configuration of the verdict rules that every orphanwatch component
// deciding verdicts shares: the orphan processor (annotate) and the orphanmetrics exporter and
// connector (observe). Its fields are squashed into each component's configuration, so they are
// written at the top level of the component's YAML (`prices`, `run_timeout`, `attributes`,
// `limits`...), under the same names whichever component decides.
package rulesconfig

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/deadlinefmt"
	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Config is the rule settings of a component that decides verdicts (README "Configuration
// reference"). Every field has a default ([Default]).
type Config struct {
	// DecisionWait is the longest the decision of a trace's spans waits for its root, from the
	// arrival of the trace's first span: the orphan processor holds the spans this long, an
	// observing exporter or connector keeps their records this long, when the root does not
	// come; then they are decided without it (deferred: their verdicts come when the root
	// does, docs/verdicts.md "When verdicts are decided"). No span waits longer before its
	// release, so a run's end waits this long (plus clock_skew_tolerance) for attempts still
	// held (verdict.Config.ReleaseWait). It has no other job: the chain wait is ChainWait, the
	// hold of an abandoned root AbandonedRootHold (both follow it when unset), and the
	// processor's decide-each-batch mode is its own setting (orphanprocessor decide_each_batch;
	// there decision_wait: 0 is its deprecated spelling). In an observing component 0 means no
	// wait: each batch's records are decided as they arrive.
	DecisionWait time.Duration `mapstructure:"decision_wait"`
	// DecisionWaitAfterRoot is how long the decision of a trace's spans waits after its root
	// span arrived (and of spans arriving after that, from their arrival): children exported
	// a little after their root, and clock skew. In the spirit of tail_sampling's
	// decision_wait_after_root_received. A value above decision_wait acts as decision_wait
	// (AfterRoot).
	DecisionWaitAfterRoot time.Duration `mapstructure:"decision_wait_after_root"`
	// ChainWait (`chain_wait`) is how long a span decided under its trace's root, but whose
	// chain of parents up to that root is incomplete (a span above it has not arrived: it may
	// belong under another root, or be detached), waits for the chain (verdict.Provisional)
	// before the single root known judges it (docs/verdicts.md "When verdicts are decided").
	// Nil (not set): decision_wait, which it was before it had its own name (EffectiveChainWait).
	// Must not be negative; 0 judges such spans at the next sweep.
	ChainWait *time.Duration `mapstructure:"chain_wait"`
	// AbandonedRootHold (`abandoned_root_hold`) is how long after its arrival the verdict of an
	// abandoned root (its request ended cancelled or deadline_exceeded) waits, so that orphans
	// arriving meanwhile deepen its orphaned depth and cancellation reach: the processor holds
	// the root span itself (its trace leaves without it), an observing component counts its
	// verdict then. Nil (not set): decision_wait, which it was before it had its own name
	// (EffectiveAbandonedRootHold). Must not be negative; 0 holds no root (its reach is what its
	// trace's release saw).
	AbandonedRootHold *time.Duration `mapstructure:"abandoned_root_hold"`
	// MaxRequestDuration is how long spans that arrived before their root wait for it: after
	// that they are judged without it (liveness unknown, runs unknown_root).
	MaxRequestDuration time.Duration `mapstructure:"max_request_duration"`
	// ClockSkewTolerance applies when a span and its root are in different services.
	ClockSkewTolerance time.Duration `mapstructure:"clock_skew_tolerance"`
	// FutureTolerance is how far beyond the collector's clock a span may end (the clocks of
	// the hosts that write spans run a little ahead): a span ending later gets no verdict that
	// counts time (spans_without_verdict{reason="end_in_future"}), and a root ending later
	// makes its trace judged at once without a root. Must not be negative.
	FutureTolerance time.Duration `mapstructure:"future_tolerance"`
	// RunTimeout: an attempt starting longer than this after the previous attempt ended begins
	// a new run. 0 disables.
	RunTimeout time.Duration `mapstructure:"run_timeout"`
	// MaxAttempts closes a run when reached. 0: no limit.
	MaxAttempts int `mapstructure:"max_attempts"`

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
	Format deadlinefmt.Format `mapstructure:"format"`
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

// LimitsConfig bounds what a component that decides keeps: the traces waiting for their
// decision, and what the correlator keeps between decisions. Each bound has an eviction policy
// and a counter.
type LimitsConfig struct {
	// MaxTraces bounds the traces waiting for their decision (their spans held by the
	// processor, their records by an observing exporter); the oldest is decided early when full.
	MaxTraces int `mapstructure:"max_traces"`
	// MaxSpansPerTrace bounds the spans (or records) waiting for one trace's decision; a full
	// trace is decided early.
	MaxSpansPerTrace int `mapstructure:"max_spans_per_trace"`
	// MaxRootRecords bounds root records kept for late spans and key-bound traces (FIFO).
	MaxRootRecords int `mapstructure:"max_root_records"`
	// MaxIdempotencyKeys bounds idempotency-key hashes remembered (FIFO).
	MaxIdempotencyKeys int `mapstructure:"max_idempotency_keys"`
	// MaxMultiRootSpans bounds the spans of traces with several roots whose root is remembered
	// so that late spans are judged against the root their siblings had (oldest traces first).
	MaxMultiRootSpans int `mapstructure:"max_multi_root_spans"`
	// MaxContextSpans bounds the records kept of spans already decided (a few hundred bytes
	// each, not the spans), so that later spans of their trace are judged with them (oldest
	// traces first).
	MaxContextSpans int `mapstructure:"max_context_spans"`
	// MaxPendingSpans bounds the records of spans that arrived before their root; when full,
	// the oldest trace's are judged without their root (unknown) and carried.
	MaxPendingSpans int `mapstructure:"max_pending_spans"`
	// MaxOpenRuns bounds runs left open by a decision (their final attempt so far not
	// terminal); when full, the oldest is closed with the outcome it had then.
	MaxOpenRuns int `mapstructure:"max_open_runs"`
}

// DefaultLimits returns the default bounds.
func DefaultLimits() LimitsConfig {
	vc := verdict.DefaultConfig()
	return LimitsConfig{
		MaxTraces:          50_000,
		MaxSpansPerTrace:   10_000,
		MaxRootRecords:     vc.MaxRootRecords,
		MaxIdempotencyKeys: vc.MaxKeys,
		MaxMultiRootSpans:  vc.MaxIndexedSpans,
		MaxContextSpans:    vc.MaxContextSpans,
		MaxPendingSpans:    vc.MaxPendingSpans,
		MaxOpenRuns:        vc.MaxOpenRuns,
	}
}

// Default returns the default rule settings: decision_wait 30s and the correlator's defaults.
func Default() Config {
	vc := verdict.DefaultConfig()
	return Config{
		DecisionWait:          30 * time.Second,
		DecisionWaitAfterRoot: 2 * time.Second,
		MaxRequestDuration:    vc.MaxRequestDuration,
		ClockSkewTolerance:    vc.ClockSkew,
		FutureTolerance:       vc.FutureTolerance,
		RunTimeout:            vc.RunTimeout,
		MaxAttempts:           vc.MaxAttempts,
		Attributes: AttributesConfig{
			Attempt:        defaultAttempts,
			IdempotencyKey: defaultIdempotencyKeys,
			Deadlines:      defaultDeadlines,
			InputTokens:    defaultInputTokens,
			OutputTokens:   defaultOutputTokens,
			Model:          defaultModels,
			Cost:           []string{"gen_ai.usage.cost"},
		},
		Cancellation: CancellationConfig{Grace: vc.CancellationGrace, ErrorTypes: vc.CancelErrorTypes, DeadlineErrorTypes: vc.DeadlineErrorTypes},
		Retryable: RetryableConfig{
			HTTPStatusCodes: vc.RetryableHTTPStatus,
			GRPCStatusCodes: vc.RetryableGRPCStatus,
			ErrorTypes:      vc.RetryableErrorTypes,
		},
		Prices:   map[string]PriceConfig{},
		Detached: DetachedConfig{ConsumerSpans: true, LinkedRoots: true, LateEntrySpans: true},
	}
}

// Default attribute names, following the OpenTelemetry semantic conventions and the names
// popular GenAI instrumentations write (OpenLLMetry, OpenInference, the Vercel AI SDK).
var (
	defaultIdempotencyKeys = []string{
		"http.request.header.idempotency-key", "http.request.header.x-idempotency-key",
		"rpc.grpc.request.metadata.idempotency-key",
	}
	// defaultAttempts: Envoy's x-envoy-attempt-count request header (retries and hedged tries
	// of one upstream request, 1-based), as the HTTP conventions capture it.
	defaultAttempts  = []string{"http.request.header.x-envoy-attempt-count"}
	defaultDeadlines = []DeadlineConfig{
		{Attribute: "http.request.header.x-deadline", Format: deadlinefmt.FormatUnixSeconds},
		{Attribute: "http.request.header.x-deadline-ms", Format: deadlinefmt.FormatUnixMilliseconds},
		{Attribute: "http.request.header.grpc-timeout", Format: deadlinefmt.FormatGRPCTimeout},
		{Attribute: "rpc.grpc.request.metadata.grpc-timeout", Format: deadlinefmt.FormatGRPCTimeout},
		{Attribute: "http.request.header.x-envoy-expected-rq-timeout-ms", Format: deadlinefmt.FormatMilliseconds},
	}
	defaultInputTokens = []string{
		"gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt",
		"llm.usage.prompt_tokens", "ai.usage.inputTokens", "ai.usage.promptTokens",
	}
	defaultOutputTokens = []string{
		"gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion",
		"llm.usage.completion_tokens", "ai.usage.outputTokens", "ai.usage.completionTokens",
	}
	defaultModels = []string{
		"gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "ai.response.model", "ai.model.id",
	}
)

// Validate checks the rule settings with the correlator bounds lim; each error names its field
// as written in YAML.
func (c *Config) Validate(lim LimitsConfig) error {
	var errs []error
	if c.DecisionWait < 0 {
		errs = append(errs, fmt.Errorf("decision_wait: must not be negative, got %s", c.DecisionWait))
	}
	if c.DecisionWaitAfterRoot < 0 {
		errs = append(errs, fmt.Errorf("decision_wait_after_root: must not be negative, got %s", c.DecisionWaitAfterRoot))
	}
	if c.ChainWait != nil && *c.ChainWait < 0 {
		errs = append(errs, fmt.Errorf("chain_wait: must not be negative (unset: decision_wait), got %s", *c.ChainWait))
	}
	if c.AbandonedRootHold != nil && *c.AbandonedRootHold < 0 {
		errs = append(errs, fmt.Errorf("abandoned_root_hold: must not be negative (0: no hold; unset: decision_wait), got %s", *c.AbandonedRootHold))
	}
	if lim.MaxTraces <= 0 {
		errs = append(errs, fmt.Errorf("limits.max_traces: must be positive, got %d", lim.MaxTraces))
	}
	if lim.MaxSpansPerTrace <= 0 {
		errs = append(errs, fmt.Errorf("limits.max_spans_per_trace: must be positive, got %d", lim.MaxSpansPerTrace))
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
	// limits.max_open_runs, max_request_duration, future_tolerance) are checked once, by the correlator's own
	// Validate, which names them as written here.
	if err := c.VerdictConfig(lim).Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// VerdictConfig maps the settings, with the correlator bounds lim, onto the correlator's rules.
func (c *Config) VerdictConfig(lim LimitsConfig) verdict.Config {
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
	vc.MaxRootRecords = lim.MaxRootRecords
	vc.MaxKeys = lim.MaxIdempotencyKeys
	vc.MaxIndexedSpans = lim.MaxMultiRootSpans
	vc.MaxContextSpans = lim.MaxContextSpans
	vc.MaxPendingSpans = lim.MaxPendingSpans
	vc.MaxOpenRuns = lim.MaxOpenRuns
	vc.MaxRequestDuration = c.MaxRequestDuration
	vc.FutureTolerance = c.FutureTolerance
	vc.ChainWait = c.EffectiveChainWait()
	vc.ReleaseWait = c.DecisionWait
	return vc
}

// AfterRoot is how long the decision of a trace waits after its root arrived:
// decision_wait_after_root, at most decision_wait.
func (c *Config) AfterRoot() time.Duration { return min(c.DecisionWaitAfterRoot, c.DecisionWait) }

// EffectiveChainWait is chain_wait, or decision_wait when chain_wait is not set.
func (c *Config) EffectiveChainWait() time.Duration {
	if c.ChainWait != nil {
		return *c.ChainWait
	}
	return c.DecisionWait
}

// EffectiveAbandonedRootHold is abandoned_root_hold, or decision_wait when it is not set.
func (c *Config) EffectiveAbandonedRootHold() time.Duration {
	if c.AbandonedRootHold != nil {
		return *c.AbandonedRootHold
	}
	return c.DecisionWait
}

// LongestWait is the longest anything waits in a component before its verdict is counted, not
// counting max_request_duration and run_timeout: decision_wait, chain_wait and
// abandoned_root_hold, whichever is longest. The horizons of what the time model keeps (the
// verdict latency's, a replay's drain) are measured with it.
func (c *Config) LongestWait() time.Duration {
	return max(c.DecisionWait, c.EffectiveChainWait(), c.EffectiveAbandonedRootHold())
}

// ReaderOptions maps the configuration onto the span reader's attribute names: the effective
// lists (each list, then its extra_ list).
func (c *Config) ReaderOptions() spanread.Options {
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

// LogAttributes logs, once as a component is created, the span attributes it reads: the
// defaults, replaced or extended by the configuration (attributes.*, attributes.extra_*).
func LogAttributes(logger *zap.Logger, a AttributesConfig) {
	deadlines := make([]string, len(a.Deadlines))
	for i, d := range a.Deadlines {
		deadlines[i] = d.Attribute + " (" + string(d.Format) + ")"
	}
	logger.Info("Span attributes read (attributes.* and attributes.extra_*)",
		zap.Strings("attempt", append([]string{"http.request.resend_count"}, a.Attempt...)),
		zap.Strings("idempotency_key", a.IdempotencyKey),
		zap.Strings("deadlines", deadlines),
		zap.Strings("input_tokens", a.InputTokens),
		zap.Strings("output_tokens", a.OutputTokens),
		zap.Strings("model", a.Model),
		zap.Strings("cost", a.Cost),
	)
}

// PrefixPricedLogger logs, once per model name (verdict.Config.PrefixPriced), a model that the
// prices table prices by the entry that prefixes its name: right for a dated version
// (gpt-4o-2024-08-06 by gpt-4o), wrong for another model (gpt-4o-mini by gpt-4o, 16 times its
// price), which an entry of its own fixes.
func PrefixPricedLogger(logger *zap.Logger) func(model, entry string) {
	return func(model, entry string) {
		logger.Info("Model priced by the prices entry that prefixes its name; give it an entry of its own if its price differs",
			zap.String("model", model), zap.String("prices_entry", entry))
	}
}
