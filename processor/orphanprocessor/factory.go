// Package orphanprocessor provides the `orphan` traces processor: it holds the spans of each
// trace for a short wait, correlates retry attempts with the liveness of their root request,
// decides each run's outcome, and writes the verdicts onto the spans as `orphanwatch.*`
// attributes (docs/verdicts.md). The decisions themselves live in internal/verdict.
package orphanprocessor

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// NewFactory returns the factory of the `orphan` processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithTraces(createTracesProcessor, metadata.TracesStability),
	)
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
		{Attribute: "http.request.header.x-deadline", Format: spanread.FormatUnixSeconds},
		{Attribute: "http.request.header.x-deadline-ms", Format: spanread.FormatUnixMilliseconds},
		{Attribute: "http.request.header.grpc-timeout", Format: spanread.FormatGRPCTimeout},
		{Attribute: "rpc.grpc.request.metadata.grpc-timeout", Format: spanread.FormatGRPCTimeout},
		{Attribute: "http.request.header.x-envoy-expected-rq-timeout-ms", Format: spanread.FormatMilliseconds},
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

// defaultSendBatchMaxSize is send_batch_max_size's default: the batch processor's usual
// send_batch_max_size, 8192 spans (about 2.7 MB of OTLP at the 330 bytes a span of issue 30's
// traffic took), under the 4 MiB an OTLP gRPC receiver takes by default and the 20 MiB of an
// OTLP HTTP receiver.
const defaultSendBatchMaxSize = 8192

// defaultMaxHeldBytes is limits.max_held_bytes's default (see the README for the heap it takes).
const defaultMaxHeldBytes = 256 << 20

func createDefaultConfig() component.Config {
	vc := verdict.DefaultConfig()
	return &Config{
		DecisionWait:          30 * time.Second,
		DecisionWaitAfterRoot: 2 * time.Second,
		MaxRequestDuration:    vc.MaxRequestDuration,
		ClockSkewTolerance:    vc.ClockSkew,
		RunTimeout:            vc.RunTimeout,
		MaxAttempts:           vc.MaxAttempts,
		SendBatchMaxSize:      defaultSendBatchMaxSize,
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
		Limits: LimitsConfig{
			MaxTraces:          50_000,
			MaxSpansPerTrace:   10_000,
			MaxHeldBytes:       defaultMaxHeldBytes,
			MaxRootRecords:     vc.MaxRootRecords,
			MaxIdempotencyKeys: vc.MaxKeys,
			MaxMultiRootSpans:  vc.MaxIndexedSpans,
			MaxContextSpans:    vc.MaxContextSpans,
			MaxPendingSpans:    vc.MaxPendingSpans,
			MaxOpenRuns:        vc.MaxOpenRuns,
		},
	}
}

func createTracesProcessor(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	c := cfg.(*Config)
	p, err := newOrphanProcessor(set, c, next)
	if err != nil {
		return nil, err
	}
	logAttributes(set.Logger, c.Attributes.Effective())
	return p, nil
}

// logAttributes logs, once as the processor is created, the span attributes it reads: the
// defaults, replaced or extended by the configuration (attributes.*, attributes.extra_*).
func logAttributes(logger *zap.Logger, a AttributesConfig) {
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
