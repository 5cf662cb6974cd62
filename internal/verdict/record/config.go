package record

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Price is a model's price in USD per million tokens.
type Price struct {
	InputPerMillion  float64
	OutputPerMillion float64
}

// Config holds the classification rules. The zero value is not useful: start from
// [DefaultConfig].
type Config struct {
	// ClockSkew is the tolerance applied when a span and the source of its gone time are in
	// different services (different clocks). Spans of one service are compared exactly.
	ClockSkew time.Duration
	// CancelErrorTypes are error.type / exception.type values that mean the work noticed a
	// cancellation. Matched case-insensitively, also as the last segment after '.', ':' or
	// "::" ("CancelledError" matches "asyncio.CancelledError"); a name ending in "Exception" or
	// "Error" also matches its subclasses named by convention ("CancellationException" matches
	// "JobCancellationException"), unless the other list names the type exactly; one '*' in a
	// value stands for any text ("task * was cancelled").
	CancelErrorTypes []string
	// DeadlineErrorTypes are error.type / exception.type values that mean a deadline passed.
	DeadlineErrorTypes []string
	// RetryableErrorTypes are error.type (or exception.type) values of retryable failures,
	// beyond the HTTP and gRPC status codes that are retryable by definition. Matched
	// case-insensitively, as written or by the last segment after '.', ':' or "::"
	// ("openai.APITimeoutError" matches "APITimeoutError").
	RetryableErrorTypes []string
	// RetryableHTTPStatus lists HTTP status codes that are retryable. Default: 408, 425, 429 and
	// every 5xx but 501 (RFC 9110 §15.6; RFC 6585 for 429; RFC 8470 for 425).
	RetryableHTTPStatus []int
	// RetryableGRPCStatus lists retryable gRPC codes. Default UNAVAILABLE (14),
	// RESOURCE_EXHAUSTED (8), ABORTED (10) (gRPC status code guide).
	RetryableGRPCStatus []int
	// ModelOperations are gen_ai.operation.name values that make a span a model call.
	ModelOperations []string
	// CancellationGrace is how close to the gone time a recorded cancellation must be to count
	// as the run noticing that its caller left (DESIGN.md: "at about the gone time").
	CancellationGrace time.Duration
	// MaxAttempts closes a run when reached (0: no limit).
	MaxAttempts int
	// RunTimeout: an attempt that starts longer than this after the previous one ended starts a
	// new run (the previous run was over). 0 disables.
	RunTimeout time.Duration
	// Prices maps a model name (exact, else the longest prefix) to its price.
	Prices map[string]Price
	// PrefixPriced, when not nil, is told each model name that Prices prices by a prefix
	// rather than by an entry of its own (gpt-4o-mini by the gpt-4o entry when there is no
	// gpt-4o-mini entry), once per name, when a model call first names it, with the entry
	// used: the component logs it (the orphan processor at Info). At most
	// [MaxPrefixPricedReported] names are told. It is called from the goroutines deciding
	// traces, possibly at once, and must return quickly.
	PrefixPriced func(model, entry string)
	// DetachConsumers treats what runs under a messaging CONSUMER span as detached work.
	DetachConsumers bool
	// DetachLinkedRoots treats a trace whose root carries span links as detached work.
	DetachLinkedRoots bool
	// DetachLateEntries treats a SERVER span that starts after its parent had ended as a
	// follow-up nobody waits for (a redirect followed later) when its root completed and the
	// span it follows ended without an error or a cancellation (isFollowUp); otherwise it is
	// judged like any span.
	DetachLateEntries bool
	// MaxRootRecords bounds the root records kept for spans and traces that arrive later.
	MaxRootRecords int
	// MaxKeys bounds the idempotency keys remembered for binding work across traces.
	MaxKeys int
	// MaxIndexedSpans bounds the spans of traces with several roots whose root is remembered,
	// so that a late span is judged against the root its siblings had.
	MaxIndexedSpans int
	// MaxContextSpans bounds the spans kept of released traces (Span records, not the spans),
	// so that spans released later are judged with their earlier siblings (memo.go).
	MaxContextSpans int
	// MaxPendingSpans bounds the spans whose verdicts wait for their root (memo.go).
	MaxPendingSpans int
	// MaxOpenRuns bounds the runs left open by a release (memo.go).
	MaxOpenRuns int
	// MaxRequestDuration is how long verdicts wait for a root that has not come; then the
	// spans are judged without it (unknown, runs unknown_root).
	MaxRequestDuration time.Duration
	// ChainWait is how long an orphaned span whose chain to its root is incomplete waits for
	// it (Verdict.Provisional) before the single root known judges it: chain_wait
	// (rules.Config.EffectiveChainWait).
	ChainWait time.Duration
	// ReleaseWait is the longest a span that came in time may take to be released (the
	// component's decision_wait), which a run's end waits for (runOverAt: settled).
	ReleaseWait time.Duration
	// FutureTolerance is how far beyond the correlator's clock (the now of a release) a span
	// may end: clocks of the hosts that write spans run a little ahead of the collector's. A
	// span ending later is malformed (InvalidEndInFuture): a clock gone wrong, or a forged
	// time, that would otherwise count years of spend. Decisions without a clock (Decide,
	// DecideInto) do not check it.
	FutureTolerance time.Duration
}

// DefaultConfig returns the rules that follow the OpenTelemetry semantic conventions and the
// HTTP and gRPC specifications.
func DefaultConfig() Config {
	retryHTTP := []int{408, 425, 429}
	for c := 500; c <= 599; c++ {
		if c != 501 {
			retryHTTP = append(retryHTTP, c)
		}
	}
	return Config{
		ClockSkew: 250 * time.Millisecond,
		CancelErrorTypes: []string{
			// Go, Python (asyncio, concurrent.futures), Java and Kotlin (and every subclass
			// named ...CancellationException: kotlinx.coroutines.JobCancellationException),
			// C#, JavaScript, Swift (CancellationError), Rust/tokio (JoinError::Cancelled and
			// the message it displays), servlet and Starlette client disconnects.
			"context canceled", "context.Canceled", "canceled", "cancelled",
			"CancelledError", "CancellationException", "JobCancellationException",
			"OperationCanceledException", "TaskCanceledException", "AbortError",
			"CancellationError", "task * was cancelled", "task * was canceled",
			"rpc error: code = Canceled*", // grpc-go's status error text
			"ClientDisconnect", "ClientAbortException",
		},
		DeadlineErrorTypes: []string{
			"context deadline exceeded", "context.DeadlineExceeded", "deadline_exceeded",
			"DeadlineExceeded", "DeadlineExceededError", "TimeoutCancellationException",
			"rpc error: code = DeadlineExceeded*",
		},
		// The connection and timeout errors of common languages and SDKs (DESIGN.md "Run
		// outcomes"), matched by their last segment: Python's requests/httpx (ReadTimeout,
		// ConnectTimeout), builtin TimeoutError, the OpenAI and Anthropic SDKs' APITimeoutError
		// and APIConnectionError, Java's java.net.SocketTimeoutException, .NET's
		// System.TimeoutException, Go's "i/o timeout" (the text after a net.OpError's last
		// colon), Node's ETIMEDOUT and ECONNRESET; and the semantic conventions' "timeout".
		RetryableErrorTypes: []string{"timeout", "connection_reset", "connection_refused",
			"ReadTimeout", "ConnectTimeout", "TimeoutError", "APITimeoutError", "APIConnectionError",
			"SocketTimeoutException", "TimeoutException", "i/o timeout",
			"ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "RateLimitError",
			"InternalServerError", "ServiceUnavailableError"},
		RetryableHTTPStatus: retryHTTP,
		RetryableGRPCStatus: []int{14, 8, 10},
		ModelOperations:     []string{"chat", "text_completion", "generate_content", "embeddings", "completion"},
		CancellationGrace:   time.Second,
		MaxAttempts:         0,
		RunTimeout:          5 * time.Minute,
		Prices:              map[string]Price{},
		DetachConsumers:     true,
		DetachLinkedRoots:   true,
		DetachLateEntries:   true,
		MaxRootRecords:      100_000,
		MaxKeys:             100_000,
		MaxIndexedSpans:     100_000,
		MaxContextSpans:     100_000,
		MaxPendingSpans:     200_000,
		MaxOpenRuns:         100_000,
		MaxRequestDuration:  30 * time.Minute,
		ChainWait:           30 * time.Second,
		ReleaseWait:         30 * time.Second,
		FutureTolerance:     5 * time.Minute,
	}
}

// Validate reports every invalid field, each once, naming it as the orphan processor's YAML
// configuration does (clock_skew_tolerance, cancellation.grace, limits.*, prices.<model>.*).
func (c Config) Validate() error {
	var errs []error
	// Each setting a rule bounds from below: durations and counts alike print with %v.
	for _, b := range []struct {
		field string
		bad   bool
		must  string
		got   any
	}{
		{"clock_skew_tolerance", c.ClockSkew < 0, "not be negative", c.ClockSkew},
		{"cancellation.grace", c.CancellationGrace < 0, "not be negative", c.CancellationGrace},
		{"max_attempts", c.MaxAttempts < 0, "not be negative", c.MaxAttempts},
		{"run_timeout", c.RunTimeout < 0, "not be negative", c.RunTimeout},
		{"limits.max_root_records", c.MaxRootRecords <= 0, "be positive", c.MaxRootRecords},
		{"limits.max_idempotency_keys", c.MaxKeys <= 0, "be positive", c.MaxKeys},
		{"limits.max_multi_root_spans", c.MaxIndexedSpans <= 0, "be positive", c.MaxIndexedSpans},
		{"limits.max_context_spans", c.MaxContextSpans <= 0, "be positive", c.MaxContextSpans},
		{"limits.max_pending_spans", c.MaxPendingSpans <= 0, "be positive", c.MaxPendingSpans},
		{"limits.max_open_runs", c.MaxOpenRuns <= 0, "be positive", c.MaxOpenRuns},
		{"max_request_duration", c.MaxRequestDuration <= 0, "be positive", c.MaxRequestDuration},
		{"future_tolerance", c.FutureTolerance < 0, "not be negative", c.FutureTolerance},
	} {
		if b.bad {
			errs = append(errs, fmt.Errorf("%s: must %s, got %v", b.field, b.must, b.got))
		}
	}
	for _, code := range c.RetryableHTTPStatus {
		if code < 100 || code > 599 {
			errs = append(errs, fmt.Errorf("retryable.http_status_codes: %d is not an HTTP status code", code))
		}
	}
	for _, code := range c.RetryableGRPCStatus {
		if code < 0 || code > 16 {
			errs = append(errs, fmt.Errorf("retryable.grpc_status_codes: %d is not a gRPC status code (0-16)", code))
		}
	}
	for _, m := range slices.Sorted(maps.Keys(c.Prices)) {
		p := c.Prices[m]
		if strings.TrimSpace(m) == "" {
			errs = append(errs, errors.New("prices: model name must not be empty"))
		}
		for _, f := range []struct {
			field string
			v     float64
		}{{"input_per_million", p.InputPerMillion}, {"output_per_million", p.OutputPerMillion}} {
			if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
				errs = append(errs, fmt.Errorf("prices.%s.%s: must be a non-negative number, got %v", m, f.field, f.v))
			}
		}
	}
	return errors.Join(errs...)
}
