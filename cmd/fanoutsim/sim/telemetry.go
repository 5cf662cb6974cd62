package sim

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
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
	runID    string
	book     *truth.Book
	provider map[string]*sdktrace.TracerProvider
	order    []string
}

// sharedExporter lets several providers use one exporter: their Shutdown does not close it.
type sharedExporter struct{ sdktrace.SpanExporter }

func (sharedExporter) Shutdown(context.Context) error { return nil }

func newTelemetry(ctx context.Context, o Options, book *truth.Book, services []string) (*telemetry, error) {
	t := &telemetry{book: book, provider: map[string]*sdktrace.TracerProvider{}, runID: keyFor(uint64(time.Now().UnixNano()), "instance")}
	if o.Exporter != nil {
		t.exp = o.Exporter
	} else {
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
			sdktrace.WithBatcher(sharedExporter{t.exp},
				sdktrace.WithBatchTimeout(time.Second),
				sdktrace.WithMaxQueueSize(1<<16),
				sdktrace.WithMaxExportBatchSize(2048),
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
		opts := []otlptracehttp.Option{otlptracehttp.WithRetry(otlptracehttp.RetryConfig{
			Enabled: true, InitialInterval: retry.initial, MaxInterval: retry.max, MaxElapsedTime: retry.elapsed,
		})}
		switch {
		case ep == "":
			opts = append(opts, otlptracehttp.WithEndpoint("localhost:4318"))
		case strings.Contains(ep, "://"):
			// A URL without a path means the receiver's base: the traces path is /v1/traces.
			if u, err := url.Parse(ep); err == nil && (u.Path == "" || u.Path == "/") {
				u.Path = "/v1/traces"
				ep = u.String()
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(ep))
		default:
			opts = append(opts, otlptracehttp.WithEndpoint(ep))
		}
		if o.OTLPInsecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		return otlptracehttp.New(ctx, opts...)
	case "grpc":
		opts := []otlptracegrpc.Option{otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{
			Enabled: true, InitialInterval: retry.initial, MaxInterval: retry.max, MaxElapsedTime: retry.elapsed,
		})}
		switch {
		case ep == "":
			opts = append(opts, otlptracegrpc.WithEndpoint("localhost:4317"))
		case strings.Contains(ep, "://"):
			opts = append(opts, otlptracegrpc.WithEndpointURL(ep))
		default:
			opts = append(opts, otlptracegrpc.WithEndpoint(ep))
		}
		if o.OTLPInsecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	return nil, fmt.Errorf("otlp-protocol: %q is neither grpc nor http", o.OTLPProtocol)
}

func (t *telemetry) tp(svc string) *sdktrace.TracerProvider { return t.provider[svc] }

func (t *telemetry) tracer(svc string) trace.Tracer {
	return t.provider[svc].Tracer("github.com/orphanwatch/orphanwatch/cmd/fanoutsim")
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
