// Package sim is fanoutsim's agent fan-out: a gateway, sub-agents, a flaky search tool and a
// fake model provider, each behind its own loopback HTTP server and its own TracerProvider, in
// one process. Users arrive, lose patience and leave; the retry loops of the sub-agents either
// never notice (blind mode, the seed's first listing) or check the caller before every attempt,
// wait their backoff interruptibly and carry the deadline as data (aware mode).
//
// [Run] runs one simulation and returns its ground truth ([truth.Truth]).
package sim

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/orphanwatch/orphanwatch/cmd/fanoutsim/truth"
)

// Mode selects the behaviour of the retry loops.
type Mode string

// Modes.
const (
	// Blind: sub-agents work on a context detached from the request, back off with time.Sleep,
	// never check whether the caller is still there, and no deadline travels.
	Blind Mode = "blind"
	// Aware: cancellation checked before every attempt, the backoff wait interruptible, and the
	// deadline carried as the X-Deadline header to every hop, which refuses to dispatch after it.
	Aware Mode = "aware"
)

// AgentNames are the sub-agents, in order; --subagents N takes the first N (more are named
// subagent-5, subagent-6, ...).
var AgentNames = []string{"planner", "researcher", "coder", "critic"}

// Service names of the other hops.
const (
	GatewayService = "gateway"
	ToolService    = "search-tool"
	ModelService   = "model-provider"
)

// DefaultModels is the model each sub-agent calls; agents not listed call gpt-4o-mini.
func DefaultModels() map[string]string {
	return map[string]string{
		"planner":    "gpt-4o-mini",
		"researcher": "gpt-4o",
		"coder":      "gpt-4o",
		"critic":     "gpt-4o-mini",
	}
}

// Options configure a simulation. Durations marked nominal are multiplied by TimeScale; the
// others are wall-clock time.
type Options struct {
	Mode Mode
	Seed uint64

	// Rate is the arrival rate of users per (wall) second, a Poisson process.
	Rate float64
	// Duration is the wall-clock window during which users arrive.
	Duration time.Duration
	// Requests caps the number of users (0: only Duration bounds them).
	Requests int

	// SubAgents is the fan-out: how many sub-agents the gateway calls per request.
	SubAgents int

	// ToolFailureRate is the probability that one search-tool attempt answers 503.
	ToolFailureRate float64
	// MaxAttempts bounds the attempts of one tool call (first try included).
	MaxAttempts int
	// BackoffBase and BackoffMax (nominal) shape the exponential backoff; Jitter (0..1) is the
	// fraction of each wait that is randomised away ("equal jitter" at 0.5).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	Jitter      float64

	// PatienceMean (nominal) is the mean time a user waits before closing the tab; PatienceDist
	// is lognormal (with PatienceSigma), exponential or fixed.
	PatienceMean  time.Duration
	PatienceDist  string
	PatienceSigma float64

	// RequestTimeout (nominal) is the gateway's own timeout; in aware mode the user's client
	// sends it as the X-Deadline of the request.
	RequestTimeout time.Duration

	// ToolLatency (nominal) is the mean latency of a search-tool attempt.
	ToolLatency time.Duration
	// ModelFirstToken and ModelPerToken (nominal) make a model call's latency:
	// first token + output tokens x per token.
	ModelFirstToken time.Duration
	ModelPerToken   time.Duration
	// TokenScale multiplies the token counts of model calls.
	TokenScale float64
	// Models maps a sub-agent to its model (nil: DefaultModels).
	Models map[string]string

	// TimeScale multiplies every nominal duration: 0.1 runs the same story ten times faster.
	TimeScale float64

	// DrainTimeout bounds the wait for in-flight work after the last user left (wall; 0:
	// derived from the nominal durations). Work still running then is cut off.
	DrainTimeout time.Duration

	// Tolerance is the clock-skew tolerance used when computing the truth (see
	// truth.Options.Tolerance). Set it to the orphan processor's clock_skew_tolerance to compare.
	Tolerance time.Duration
	// Prices is the price table of the truth (nil: truth.DefaultPrices).
	Prices truth.Prices

	// OTLPEndpoint is host:port (or a URL) of the OTLP receiver; empty: localhost:4317 for grpc,
	// localhost:4318 for http; "none" exports nothing (the truth is still computed). An http
	// URL without a path gets /v1/traces.
	OTLPEndpoint string
	// OTLPProtocol is grpc or http (OTLP/HTTP protobuf).
	OTLPProtocol string
	// OTLPInsecure disables TLS towards the endpoint.
	OTLPInsecure bool
	// OTLPTimeout bounds each OTLP export request (one try; the exporter retries for at most
	// 20 s). 0: the exporter's default, 10 s.
	OTLPTimeout time.Duration
	// ExportQueueSize is the queue of each service's BatchSpanProcessor: spans that end while
	// it is full are dropped (counted in the truth's export.spans_dropped).
	ExportQueueSize int
	// Exporter, when set, receives the spans instead of an OTLP exporter. It is flushed but not
	// shut down: the caller owns it (tracetest.InMemoryExporter resets itself on Shutdown).
	Exporter sdktrace.SpanExporter

	// Log receives progress lines (nil: none).
	Log io.Writer
}

// DefaultOptions returns a short run at real speed: 10 s of arrivals at 2 users per second.
func DefaultOptions() Options {
	return Options{
		Mode:            Blind,
		Seed:            1,
		Rate:            2,
		Duration:        10 * time.Second,
		SubAgents:       4,
		ToolFailureRate: 0.4,
		MaxAttempts:     5,
		BackoffBase:     500 * time.Millisecond,
		BackoffMax:      8 * time.Second,
		Jitter:          0.5,
		PatienceMean:    4 * time.Second,
		PatienceDist:    "lognormal",
		PatienceSigma:   0.6,
		RequestTimeout:  15 * time.Second,
		ToolLatency:     200 * time.Millisecond,
		ModelFirstToken: 300 * time.Millisecond,
		ModelPerToken:   2 * time.Millisecond,
		TokenScale:      1,
		TimeScale:       1,
		Tolerance:       250 * time.Millisecond,
		OTLPProtocol:    "grpc",
		OTLPInsecure:    true,
		ExportQueueSize: 1 << 16,
	}
}

// ShortOptions returns a run of a few seconds in the given mode: the default story ten times
// faster (time scale 0.1), seed 7, at most 24 users arriving at 12 per second for 1.5 s, and
// half of the search-tool attempts failing. This module's tests run it, and test/scaleout
// replays its traces.
func ShortOptions(mode Mode) Options {
	o := DefaultOptions()
	o.Mode = mode
	o.Seed = 7
	o.TimeScale = 0.1
	o.Rate = 12
	o.Duration = 1500 * time.Millisecond
	o.Requests = 24
	o.ToolFailureRate = 0.5
	return o
}

// Validate reports every invalid field.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if o.Mode != Blind && o.Mode != Aware {
		bad("mode: %q is neither blind nor aware", o.Mode)
	}
	if !(o.Rate > 0) || o.Rate > 10_000 {
		bad("rate: must be in (0, 10000], got %v", o.Rate)
	}
	if o.Duration <= 0 && o.Requests <= 0 {
		bad("duration or requests: one must bound the run")
	}
	if o.Duration < 0 || o.Requests < 0 {
		bad("duration and requests must not be negative")
	}
	if o.Requests > 1_000_000 {
		bad("requests: at most 1000000, got %d", o.Requests)
	}
	if o.SubAgents < 1 || o.SubAgents > 64 {
		bad("subagents: must be 1..64, got %d", o.SubAgents)
	}
	if o.ToolFailureRate < 0 || o.ToolFailureRate > 1 {
		bad("tool-failure-rate: must be in [0, 1], got %v", o.ToolFailureRate)
	}
	if o.MaxAttempts < 1 || o.MaxAttempts > 100 {
		bad("max-attempts: must be 1..100, got %d", o.MaxAttempts)
	}
	if o.BackoffBase <= 0 || o.BackoffMax < o.BackoffBase {
		bad("backoff: base must be positive and max at least base (base %s, max %s)", o.BackoffBase, o.BackoffMax)
	}
	if o.Jitter < 0 || o.Jitter > 1 {
		bad("jitter: must be in [0, 1], got %v", o.Jitter)
	}
	if o.PatienceMean <= 0 {
		bad("patience-mean: must be positive, got %s", o.PatienceMean)
	}
	switch o.PatienceDist {
	case "lognormal", "exponential", "fixed":
	default:
		bad("patience-dist: %q is not lognormal, exponential or fixed", o.PatienceDist)
	}
	if o.PatienceSigma < 0 || o.PatienceSigma > 3 {
		bad("patience-sigma: must be in [0, 3], got %v", o.PatienceSigma)
	}
	if o.RequestTimeout <= 0 {
		bad("request-timeout: must be positive, got %s", o.RequestTimeout)
	}
	if o.ToolLatency < 0 || o.ModelFirstToken < 0 || o.ModelPerToken < 0 {
		bad("latencies must not be negative")
	}
	if !(o.TokenScale > 0) || o.TokenScale > 1000 {
		bad("token-scale: must be in (0, 1000], got %v", o.TokenScale)
	}
	if !(o.TimeScale > 0) || o.TimeScale > 100 {
		bad("time-scale: must be in (0, 100], got %v", o.TimeScale)
	}
	if o.ExportQueueSize < 1 {
		bad("otlp-queue-size: must be at least 1, got %d", o.ExportQueueSize)
	}
	if o.OTLPTimeout < 0 {
		bad("otlp-timeout: must not be negative, got %s", o.OTLPTimeout)
	}
	if o.DrainTimeout < 0 || o.Tolerance < 0 {
		bad("drain-timeout and tolerance must not be negative")
	}
	if o.Exporter == nil {
		switch o.OTLPProtocol {
		case "grpc", "http":
		default:
			bad("otlp-protocol: %q is neither grpc nor http", o.OTLPProtocol)
		}
	}
	for agent, m := range o.Models {
		if strings.TrimSpace(agent) == "" || strings.TrimSpace(m) == "" {
			bad("models: empty agent or model name")
		}
	}
	return errors.Join(errs...)
}

// scale returns the wall duration of a nominal one.
func (o Options) scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * o.TimeScale)
}

// agentNames returns the names of the first n sub-agents.
func agentNames(n int) []string {
	out := make([]string, 0, n)
	for i := range n {
		if i < len(AgentNames) {
			out = append(out, AgentNames[i])
		} else {
			out = append(out, fmt.Sprintf("subagent-%d", i+1))
		}
	}
	return out
}

func (o Options) modelOf(agent string) string {
	if m, ok := o.Models[agent]; ok {
		return m
	}
	if m, ok := DefaultModels()[agent]; ok {
		return m
	}
	return "gpt-4o-mini"
}

// maxOutputTokens is the largest output a sub-agent asks for (see plan).
const (
	minInputTokens  = 800
	maxInputTokens  = 4000
	minOutputTokens = 100
	maxOutputTokens = 900
)

// drainTimeout is how long in-flight work may run after the last user: the longest a blind
// sub-agent can work (every tool attempt, every backoff, the model call) after the longest a
// request can last, plus a margin.
func (o Options) drainTimeout() time.Duration {
	if o.DrainTimeout > 0 {
		return o.DrainTimeout
	}
	work := time.Duration(o.MaxAttempts) * (o.ToolLatency * 3 / 2)
	for n := 1; n < o.MaxAttempts; n++ {
		work += Backoff(n, o.BackoffBase, o.BackoffMax, 0, 0)
	}
	work += o.ModelFirstToken + time.Duration(float64(maxOutputTokens)*o.TokenScale)*o.ModelPerToken
	return o.scale(o.RequestTimeout+work) + 2*time.Second
}
