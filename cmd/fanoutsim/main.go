// Command fanoutsim runs a real agent fan-out over loopback HTTP, instrumented with the
// OpenTelemetry Go SDK and exported over OTLP: a gateway, sub-agents (planner, researcher,
// coder, critic), a flaky search tool and a fake model provider, each its own service. Users
// arrive, lose patience and close the tab. In --mode=blind the sub-agents' retry loops never
// notice; in --mode=aware they check before every attempt, wait interruptibly and carry the
// deadline as data. At the end it prints the ground truth of what happened (and writes it as
// JSON with --truth FILE), to compare with what orphanwatch reports.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"go.opentelemetry.io/otel"

	"github.com/orphanwatch/orphanwatch/cmd/fanoutsim/sim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// modelsFlag parses agent=model,agent=model.
type modelsFlag map[string]string

func (m modelsFlag) String() string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (m modelsFlag) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		if !ok || strings.TrimSpace(k) == "" || strings.TrimSpace(val) == "" {
			return fmt.Errorf("want agent=model, got %q", part)
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return nil
}

// lockedWriter serialises writes from the simulation's goroutines and the SDK's.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func run(args []string, stdout, stderrW io.Writer) int {
	stderr := &lockedWriter{w: stderrW}
	o := sim.DefaultOptions()
	fs := flag.NewFlagSet("fanoutsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("mode", string(o.Mode), "retry loops: blind (never check the caller) or aware (check every attempt, interruptible backoff, X-Deadline propagated)")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of every random draw (arrivals, patience, tool failures, latencies, tokens)")
	fs.Float64Var(&o.Rate, "rate", o.Rate, "users arriving per second (Poisson)")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "wall-clock window during which users arrive")
	fs.IntVar(&o.Requests, "requests", o.Requests, "at most this many users (0: no limit but --duration)")
	fs.IntVar(&o.SubAgents, "subagents", o.SubAgents, "sub-agents per request (planner, researcher, coder, critic, then subagent-5...)")
	fs.Float64Var(&o.ToolFailureRate, "tool-failure-rate", o.ToolFailureRate, "probability that a search-tool attempt answers 503")
	fs.IntVar(&o.MaxAttempts, "max-attempts", o.MaxAttempts, "attempts per tool call, first try included")
	fs.DurationVar(&o.BackoffBase, "backoff-base", o.BackoffBase, "first backoff wait (nominal; doubles per attempt)")
	fs.DurationVar(&o.BackoffMax, "backoff-max", o.BackoffMax, "largest backoff wait (nominal)")
	fs.Float64Var(&o.Jitter, "jitter", o.Jitter, "fraction of each backoff wait randomised away (0 none, 0.5 equal jitter, 1 full jitter)")
	fs.DurationVar(&o.PatienceMean, "patience-mean", o.PatienceMean, "mean user patience before closing the tab (nominal)")
	fs.StringVar(&o.PatienceDist, "patience-dist", o.PatienceDist, "patience distribution: lognormal, exponential or fixed")
	fs.Float64Var(&o.PatienceSigma, "patience-sigma", o.PatienceSigma, "sigma of the lognormal patience")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "gateway timeout; in aware mode the deadline sent as X-Deadline (nominal)")
	fs.DurationVar(&o.ToolLatency, "tool-latency", o.ToolLatency, "mean search-tool latency (nominal)")
	fs.DurationVar(&o.ModelFirstToken, "model-first-token", o.ModelFirstToken, "model latency before the first token (nominal)")
	fs.DurationVar(&o.ModelPerToken, "model-per-token", o.ModelPerToken, "model latency per output token (nominal)")
	fs.Float64Var(&o.TokenScale, "token-scale", o.TokenScale, "multiplies the token counts of model calls")
	fs.Float64Var(&o.TimeScale, "time-scale", o.TimeScale, "multiplies every nominal duration (0.1: the same story ten times faster)")
	models := modelsFlag{}
	fs.Var(models, "models", "models per sub-agent, agent=model,... (default planner=gpt-4o-mini,researcher=gpt-4o,coder=gpt-4o,critic=gpt-4o-mini)")
	fs.DurationVar(&o.DrainTimeout, "drain-timeout", o.DrainTimeout, "wall-clock bound on waiting for work in flight after the last user (0: derived)")
	fs.DurationVar(&o.Tolerance, "skew-tolerance", o.Tolerance, "clock-skew tolerance of the truth, as the orphan processor's clock_skew_tolerance (0: exact)")
	fs.StringVar(&o.OTLPEndpoint, "otlp-endpoint", "", "OTLP endpoint host:port or URL (default localhost:4317 for grpc, localhost:4318 for http; none: export nothing)")
	fs.StringVar(&o.OTLPProtocol, "otlp-protocol", o.OTLPProtocol, "OTLP protocol: grpc or http")
	fs.BoolVar(&o.OTLPInsecure, "otlp-insecure", o.OTLPInsecure, "no TLS towards the OTLP endpoint")
	fs.DurationVar(&o.OTLPTimeout, "otlp-timeout", o.OTLPTimeout, "timeout of each OTLP export request (0: the exporter's default, 10s)")
	fs.IntVar(&o.ExportQueueSize, "otlp-queue-size", o.ExportQueueSize, "queue of each service's batch span processor; spans ending while it is full are dropped (and counted)")
	truthFile := fs.String("truth", "", "write the ground truth as JSON to this file")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fanoutsim: unexpected arguments %q\n", fs.Args())
		return 2
	}
	o.Mode = sim.Mode(*mode)
	if len(models) > 0 {
		o.Models = models
	}
	if !*quiet {
		o.Log = stderr
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(stderr, "fanoutsim: %v\n", err)
		return 2
	}

	// Export errors (no collector listening, say) are reported, a few of them.
	var exportErrors atomic.Int64
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		if n := exportErrors.Add(1); n <= 3 {
			fmt.Fprintf(stderr, "fanoutsim: telemetry: %v\n", err)
		}
	}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t, err := sim.Run(ctx, o)
	if t.Runs == nil && err != nil {
		fmt.Fprintf(stderr, "fanoutsim: %v\n", err)
		return 1
	}
	_ = t.WriteSummary(stdout)
	code := 0
	if err != nil {
		fmt.Fprintf(stderr, "fanoutsim: %v\n", err)
		code = 1
	}
	if n := exportErrors.Load(); n > 0 {
		// The truth holds, but the collector did not get (all) the spans.
		fmt.Fprintf(stderr, "fanoutsim: %d telemetry errors: spans were lost (use --otlp-endpoint=none to export nothing)\n", n)
		code = 1
	}
	if *truthFile != "" {
		b, jerr := json.MarshalIndent(t, "", "  ")
		if jerr == nil {
			jerr = os.WriteFile(*truthFile, append(b, '\n'), 0o644)
		}
		if jerr != nil {
			fmt.Fprintf(stderr, "fanoutsim: truth: %v\n", jerr)
			code = 1
		}
	}
	return code
}
