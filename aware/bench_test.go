package aware

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	backoff "github.com/cenkalti/backoff/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The overhead of the aware loop per attempt, against the blind loop of the article: a
// function that fails four times and succeeds on the fifth, no backoff wait (a zero policy),
// so that only the loop's own work is measured. Divide ns/op by 5 for ns per attempt.

const benchAttempts = 5

var errBench = errors.New("503")

func flaky() func(context.Context) error {
	n := 0
	return func(context.Context) error {
		if n++; n%benchAttempts != 0 {
			return errBench
		}
		return nil
	}
}

// BenchmarkLoopBare is the blind loop: no check, no tracing.
func BenchmarkLoopBare(b *testing.B) {
	op := flaky()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for n := 1; n <= benchAttempts; n++ {
			if op(ctx) == nil {
				break
			}
		}
	}
}

func benchAware(b *testing.B, opts ...Option) {
	op := flaky()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts = append([]Option{WithBackOff(&backoff.ZeroBackOff{}), WithMaxAttempts(benchAttempts), WithIdempotencyKey("k")}, opts...)
	b.ReportAllocs()
	for b.Loop() {
		if err := Do(ctx, op, opts...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoopAwareNoopTracer: checks, cancellable waits, attempt in the context; tracing
// disabled (a no-op TracerProvider).
func BenchmarkLoopAwareNoopTracer(b *testing.B) {
	benchAware(b, WithTracerProvider(noop.NewTracerProvider()))
}

// BenchmarkLoopAwareSDKSpans: the same with the OTel SDK recording a loop span and one span
// per attempt (sampled, no exporter).
func BenchmarkLoopAwareSDKSpans(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	benchAware(b, WithTracerProvider(tp))
}

// BenchmarkLoopAwareSDKExisting: SDK tracing with WithInstrumentedClient (only the loop's
// span; the attempts' spans are otelhttp's and not counted here).
func BenchmarkLoopAwareSDKExisting(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	benchAware(b, WithTracerProvider(tp), WithInstrumentedClient())
}

// BenchmarkLoopAwareRandomKey: the no-op tracer with a fresh random idempotency key per loop
// (the default).
func BenchmarkLoopAwareRandomKey(b *testing.B) {
	benchAware(b, WithTracerProvider(noop.NewTracerProvider()), WithIdempotencyKey(""), func(c *config) { c.noKey = false })
}

// The same against a real attempt: one HTTP request to a loopback server. Bare: a plain
// client; aware: aware.Do around it, the client's transport wrapped in aware.Transport, a
// deadline on the context (written as X-Deadline), no-op tracing.
func benchHTTP(b *testing.B, aware bool) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	base := &http.Transport{MaxIdleConnsPerHost: 4}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: base}
	if aware {
		client = &http.Client{Transport: &Transport{Base: base}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	call := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	opts := []Option{WithTracerProvider(noop.NewTracerProvider()), WithIdempotencyKey("k")}
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if aware {
			err = Do(ctx, call, opts...)
		} else {
			err = call(ctx)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoopHTTPBare: one loopback HTTP attempt, no loop.
func BenchmarkLoopHTTPBare(b *testing.B) { benchHTTP(b, false) }

// BenchmarkLoopHTTPAware: the same attempt through aware.Do and aware.Transport.
func BenchmarkLoopHTTPAware(b *testing.B) { benchHTTP(b, true) }
