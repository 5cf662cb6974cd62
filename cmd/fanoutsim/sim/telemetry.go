package sim

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/orphanwatch/orphanwatch/cmd/fanoutsim/truth"
)

// telemetry is one TracerProvider per service, each with its own resource (service.name),
// all exporting through one exporter, and all reporting span times to the truth book.
type telemetry struct {
	exp      sdktrace.SpanExporter
	ownsExp  bool
	discard  bool // --otlp-endpoint=none: nothing is exported, nothing can be lost
	runID    string
	book     *truth.Book
	tally    *exportTally
	provider map[string]*sdktrace.TracerProvider
	order    []string
}

// exportTally counts what became of the spans between the providers and the collector: every
// span that ended (a SpanProcessor on every provider, beside the batcher) and every span
// handed to the exporter, by the result of its export call. Ended spans never handed to the
// exporter were dropped by a BatchSpanProcessor (queue full, shut down before the flush).
type exportTally struct {
	ended, exported, failed, rejected, errors atomic.Int64
}

// OnEnd counts a span that ended.
func (t *exportTally) OnEnd(sdktrace.ReadOnlySpan)                     { t.ended.Add(1) }
func (t *exportTally) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (t *exportTally) Shutdown(context.Context) error                  { return nil }
func (t *exportTally) ForceFlush(context.Context) error                { return nil }
func (t *exportTally) counts() truth.Export {
	e := truth.Export{
		Ended:    int(t.ended.Load()),
		Exported: int(t.exported.Load()),
		Failed:   int(t.failed.Load()),
		Rejected: int(t.rejected.Load()),
		Errors:   int(t.errors.Load()),
	}
	e.Dropped = max(e.Ended-e.Exported-e.Failed-e.Rejected, 0)
	return e
}

// partialSuccess is how the OTLP exporters word a partial success in the error they return:
// "OTLP partial success: <message> (<n> spans rejected)".
var partialSuccess = regexp.MustCompile(`OTLP partial success: .*\((\d+) spans? rejected\)`)

// countingExporter lets several providers use one exporter (their Shutdown does not close it)
// and counts the spans of every export call by its result.
type countingExporter struct {
	sdktrace.SpanExporter
	t *exportTally
}

func (e countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	n := int64(len(spans))
	if err == nil {
		e.t.exported.Add(n)
		return nil
	}
	e.t.errors.Add(1)
	if m := partialSuccess.FindStringSubmatch(err.Error()); m != nil {
		// The request was accepted but for the rejected spans.
		if r, perr := strconv.ParseInt(m[1], 10, 64); perr == nil && r <= n {
			e.t.rejected.Add(r)
			e.t.exported.Add(n - r)
			return err
		}
	}
	e.t.failed.Add(n)
	return err
}

func (countingExporter) Shutdown(context.Context) error { return nil }

func newTelemetry(ctx context.Context, o Options, book *truth.Book, services []string) (*telemetry, error) {
	t := &telemetry{book: book, tally: &exportTally{}, provider: map[string]*sdktrace.TracerProvider{}, runID: keyFor(uint64(time.Now().UnixNano()), "instance")}
	if o.Exporter != nil {
		t.exp = o.Exporter
	} else {
		t.discard = o.OTLPEndpoint == "none"
		exp, err := newOTLPExporter(ctx, o)
		if err != nil {
			return nil, err
		}
		t.exp, t.ownsExp = exp, true
	}
	for _, svc := range services {
		res := resource.NewWithAttributes(semconv.SchemaURL,
			semconv.ServiceName(svc),
			semconv.ServiceVersion("fanoutsim"),
			semconv.ServiceInstanceID(svc+"-"+t.runID[:8]),
		)
		tp := sdktrace.NewTracerProvider(
			sdktrace.WithResource(res),
			sdktrace.WithSampler(sdktrace.AlwaysSample()),
			// The book first: it sees every span end synchronously.
			sdktrace.WithSpanProcessor(book),
			sdktrace.WithSpanProcessor(t.tally),
			sdktrace.WithBatcher(countingExporter{t.exp, t.tally},
				sdktrace.WithBatchTimeout(time.Second),
				sdktrace.WithMaxQueueSize(o.ExportQueueSize),
				sdktrace.WithMaxExportBatchSize(min(2048, o.ExportQueueSize)),
			),
		)
		t.provider[svc] = tp
		t.order = append(t.order, svc)
	}
	return t, nil
}

// discardExporter drops spans: --otlp-endpoint=none.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

func newOTLPExporter(ctx context.Context, o Options) (sdktrace.SpanExporter, error) {
	ep := o.OTLPEndpoint
	if ep == "none" {
		return discardExporter{}, nil
	}
	retry := struct {
		initial, max, elapsed time.Duration
	}{500 * time.Millisecond, 5 * time.Second, 20 * time.Second}
	switch o.OTLPProtocol {
	case "http":
		if strings.Contains(ep, "://") {
			// A URL without a path means the receiver's base: the traces path is /v1/traces.
			if u, err := url.Parse(ep); err == nil && (u.Path == "" || u.Path == "/") {
				u.Path = "/v1/traces"
				ep = u.String()
			}
		}
		opts := []otlptracehttp.Option{otlptracehttp.WithRetry(otlptracehttp.RetryConfig{
			Enabled: true, InitialInterval: retry.initial, MaxInterval: retry.max, MaxElapsedTime: retry.elapsed,
		})}
		opts = append(opts, exporterOptions(o, ep, "localhost:4318",
			otlptracehttp.WithEndpoint, otlptracehttp.WithEndpointURL, otlptracehttp.WithInsecure, otlptracehttp.WithTimeout)...)
		return otlptracehttp.New(ctx, opts...)
	case "grpc":
		opts := []otlptracegrpc.Option{otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{
			Enabled: true, InitialInterval: retry.initial, MaxInterval: retry.max, MaxElapsedTime: retry.elapsed,
		})}
		opts = append(opts, exporterOptions(o, ep, "localhost:4317",
			otlptracegrpc.WithEndpoint, otlptracegrpc.WithEndpointURL, otlptracegrpc.WithInsecure, otlptracegrpc.WithTimeout)...)
		return otlptracegrpc.New(ctx, opts...)
	}
	return nil, fmt.Errorf("otlp-protocol: %q is neither grpc nor http", o.OTLPProtocol)
}

// exporterOptions are the options of an OTLP trace exporter (otlptracehttp's or otlptracegrpc's,
// given by its option constructors) that o and the endpoint ep ask for: the endpoint (def when ep
// is empty, ep as a URL when it has a scheme, else as host:port), no TLS, the export timeout.
func exporterOptions[O any](o Options, ep, def string, endpoint, endpointURL func(string) O, insecure func() O, timeout func(time.Duration) O) []O {
	var opts []O
	switch {
	case ep == "":
		opts = append(opts, endpoint(def))
	case strings.Contains(ep, "://"):
		opts = append(opts, endpointURL(ep))
	default:
		opts = append(opts, endpoint(ep))
	}
	if o.OTLPInsecure {
		opts = append(opts, insecure())
	}
	if o.OTLPTimeout > 0 {
		opts = append(opts, timeout(o.OTLPTimeout))
	}
	return opts
}

func (t *telemetry) tp(svc string) *sdktrace.TracerProvider { return t.provider[svc] }

func (t *telemetry) tracer(svc string) trace.Tracer {
	return t.provider[svc].Tracer("github.com/orphanwatch/orphanwatch/cmd/fanoutsim")
}

// export is what became of the spans, once shut down; nil when nothing was exported
// (--otlp-endpoint=none).
func (t *telemetry) export() *truth.Export {
	if t.discard {
		return nil
	}
	e := t.tally.counts()
	return &e
}

// shutdown flushes and stops every provider, then the exporter if this package made it.
func (t *telemetry) shutdown(ctx context.Context) error {
	errs := make([]error, len(t.order))
	var wg sync.WaitGroup
	for i, svc := range t.order {
		wg.Go(func() {
			if err := t.provider[svc].Shutdown(ctx); err != nil {
				errs[i] = fmt.Errorf("%s: %w", svc, err)
			}
		})
	}
	wg.Wait()
	if t.ownsExp {
		if err := t.exp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("exporter: %w", err))
		}
	}
	return errors.Join(errs...)
}
