package aware

import (
	"bytes"
	"context"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	backoff "github.com/cenkalti/backoff/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// The pairing tests: aware.Retry with real otelhttp / otelgrpc instrumentation, the OTel SDK
// exporting into tracetest's in-memory exporter, and a real loopback server. No mode option
// is given: one span per attempt must be the default.

func memExporter(t *testing.T) (*tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return exp, tp
}

// attemptSpans returns the spans that are attempts as the orphan processor reads them: CLIENT
// spans (DESIGN.md "attempt"; SERVER spans are the callee's side, never attempts), in start
// order.
func attemptSpans(spans tracetest.SpanStubs) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range spans {
		if s.SpanKind == trace.SpanKindClient {
			out = append(out, s)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].StartTime.Before(out[j-1].StartTime); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func stubAttr(s tracetest.SpanStub, key string) (int64, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.AsInt64(), true
		}
	}
	return 0, false
}

func stubString(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// checkOnePerAttempt asserts n attempt spans, children of the loop's span, the first without a
// resend count and attempt k with http.request.resend_count k-1: what the processor reads.
func checkOnePerAttempt(t *testing.T, spans tracetest.SpanStubs, loopName string, n int) tracetest.SpanStubs {
	t.Helper()
	var loop *tracetest.SpanStub
	for i := range spans {
		if spans[i].Name == loopName && spans[i].SpanKind == trace.SpanKindInternal {
			require.Nil(t, loop, "one loop span")
			loop = &spans[i]
		}
	}
	require.NotNil(t, loop, "the loop's span")
	attempts := attemptSpans(spans)
	require.Len(t, attempts, n, "exactly one CLIENT span per attempt")
	for i, s := range attempts {
		assert.Equal(t, loop.SpanContext.SpanID(), s.Parent.SpanID(), "attempt %d under the loop", i+1)
		rc, ok := stubAttr(s, AttrResendCount)
		assert.Equal(t, i > 0, ok, "resend count on retries only (attempt %d)", i+1)
		if ok {
			assert.Equal(t, int64(i), rc)
		}
	}
	return attempts
}

func TestPairingOtelhttpOneSpanPerAttemptByDefault(t *testing.T) {
	exp, tp := memExporter(t)
	var hits atomic.Int32
	srv := httptest.NewServer(otelhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) < 3 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}), "POST /search", otelhttp.WithTracerProvider(tp)))
	defer srv.Close()
	client := &http.Client{Transport: otelhttp.NewTransport(NewTransport(nil), otelhttp.WithTracerProvider(tp))}

	resp, err := Retry(context.Background(), func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/search", nil)
		return CheckResponse(client.Do(req))
	}, WithTracerProvider(tp), WithName("retry search"), WithBackOff(backoff.NewConstantBackOff(time.Millisecond)))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	spans := exp.GetSpans()
	attempts := checkOnePerAttempt(t, spans, "retry search", 3)
	for i, s := range attempts {
		assert.Equal(t, "HTTP POST", s.Name, "otelhttp's span, not one of the loop's")
		want := "503"
		if i == 2 {
			want = "200"
		}
		assert.Equal(t, want, stubString(s, "http.response.status_code"))
	}
	servers := 0
	for _, s := range spans {
		if s.SpanKind == trace.SpanKindServer {
			servers++
		}
	}
	assert.Equal(t, 3, servers, "one SERVER span per attempt on the callee")
	assert.Len(t, spans, 7, "loop + 3 CLIENT + 3 SERVER, nothing else")
}

// The same attempt function without instrumentation: the loop makes the span, after the
// attempt, with the attempt's start time.
func TestPairingPlainClientLoopMakesTheSpan(t *testing.T) {
	exp, tp := memExporter(t)
	var starts []time.Time
	err := Do(context.Background(), func(ctx context.Context) error {
		starts = append(starts, time.Now())
		time.Sleep(2 * time.Millisecond)
		if len(starts) < 2 {
			return &StatusError{Code: 503}
		}
		return nil
	}, WithTracerProvider(tp), WithName("retry search"), WithAttemptName("POST /search"),
		WithBackOff(backoff.NewConstantBackOff(time.Millisecond)))
	require.NoError(t, err)
	attempts := checkOnePerAttempt(t, exp.GetSpans(), "retry search", 2)
	for i, s := range attempts {
		assert.Equal(t, "POST /search", s.Name)
		assert.False(t, s.StartTime.After(starts[i]), "the span starts when the attempt did")
		assert.GreaterOrEqual(t, s.EndTime.Sub(s.StartTime), 2*time.Millisecond)
	}
	assert.Equal(t, "503", stubString(attempts[0], AttrErrorType))
}

// "My client is already instrumented" by something this package does not see: the loop
// makes no attempt span at all.
func TestPairingInstrumentedClientLoopMakesNone(t *testing.T) {
	exp, tp := memExporter(t)
	calls := 0
	err := Do(context.Background(), func(ctx context.Context) error {
		calls++
		_, span := tp.Tracer("other").Start(ctx, "other client", trace.WithSpanKind(trace.SpanKindClient))
		span.End()
		if calls < 2 {
			return &StatusError{Code: 503}
		}
		return nil
	}, WithTracerProvider(tp), WithName("retry"), WithInstrumentedClient(),
		WithBackOff(backoff.NewConstantBackOff(time.Millisecond)))
	require.NoError(t, err)
	attempts := attemptSpans(exp.GetSpans())
	require.Len(t, attempts, 2)
	for _, s := range attempts {
		assert.Equal(t, "other client", s.Name)
	}
}

// flakyHealth answers UNAVAILABLE to the first fail calls.
type flakyHealth struct {
	grpc_health_v1.UnimplementedHealthServer
	fail  int32
	calls atomic.Int32
}

func (h *flakyHealth) Check(context.Context, *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	if h.calls.Add(1) <= h.fail {
		return nil, status.Error(codes.Unavailable, "warming up")
	}
	return &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}, nil
}

func TestPairingOtelgrpcOneSpanPerAttemptByDefault(t *testing.T) {
	exp, tp := memExporter(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp))),
		grpc.ChainUnaryInterceptor(UnaryServerInterceptor()))
	grpc_health_v1.RegisterHealthServer(srv, &flakyHealth{fail: 2})
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	cc, err := grpc.NewClient(ln.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(ClientStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(tp)))),
		grpc.WithChainUnaryInterceptor(UnaryClientInterceptor()))
	require.NoError(t, err)
	defer cc.Close()
	health := grpc_health_v1.NewHealthClient(cc)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := Retry(ctx, func(ctx context.Context) (*grpc_health_v1.HealthCheckResponse, error) {
		return health.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
	}, WithTracerProvider(tp), WithName("retry health"), WithBackOff(backoff.NewConstantBackOff(time.Millisecond)))
	require.NoError(t, err)
	assert.Equal(t, grpc_health_v1.HealthCheckResponse_SERVING, resp.Status)

	attempts := checkOnePerAttempt(t, exp.GetSpans(), "retry health", 3)
	for i, s := range attempts {
		assert.Equal(t, "grpc.health.v1.Health/Check", s.Name, "otelgrpc's span, not one of the loop's")
		want := "UNAVAILABLE"
		if i == 2 {
			want = "OK"
		}
		assert.Equal(t, want, stubString(s, "rpc.response.status_code"), "attempt %d", i+1)
	}
}

// A service that set up otelhttp the shortest way (no WithTracerProvider: otelhttp takes the
// provider of the span in the request's context) and forgot aware.Transport, or put it
// outside otelhttp's: still one span per attempt, otelhttp's, with the resend count.
func TestPairingOtelhttpWithoutTransportInside(t *testing.T) {
	for name, transport := range map[string]func() http.RoundTripper{
		"otelhttp alone":                   func() http.RoundTripper { return otelhttp.NewTransport(http.DefaultTransport) },
		"aware.Transport outside otelhttp": func() http.RoundTripper { return NewTransport(otelhttp.NewTransport(http.DefaultTransport)) },
	} {
		t.Run(name, func(t *testing.T) {
			exp, tp := memExporter(t)
			srv := unavailableTwice(t)
			client := &http.Client{Transport: transport()}
			resp, err := Retry(context.Background(), func(ctx context.Context) (*http.Response, error) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				return CheckResponse(client.Do(req))
			}, WithTracerProvider(tp), WithName("retry search"), WithBackOff(backoff.NewConstantBackOff(time.Millisecond)))
			require.NoError(t, err)
			resp.Body.Close()
			for _, s := range checkOnePerAttempt(t, exp.GetSpans(), "retry search", 3) {
				assert.Equal(t, "HTTP GET", s.Name, "otelhttp's span")
			}
		})
	}
}

// otelhttp given its own provider and no aware.Transport inside is instrumentation this
// package cannot see: "my client is already instrumented" says so, and the loop makes no span.
func TestPairingOtelhttpOwnProviderNeedsInstrumentedClient(t *testing.T) {
	for _, instrumented := range []bool{false, true} {
		exp, tp := memExporter(t)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		client := &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport, otelhttp.WithTracerProvider(tp))}
		opts := []Option{WithTracerProvider(tp), WithName("retry")}
		if instrumented {
			opts = append(opts, WithInstrumentedClient())
		}
		resp, err := Retry(context.Background(), func(ctx context.Context) (*http.Response, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			return CheckResponse(client.Do(req))
		}, opts...)
		require.NoError(t, err)
		resp.Body.Close()
		srv.Close()
		want := map[bool]int{false: 2, true: 1}[instrumented] // without the option: otelhttp's and the loop's
		assert.Len(t, attemptSpans(exp.GetSpans()), want, "WithInstrumentedClient=%v", instrumented)
	}
}

// A service whose otelhttp client and server were given their tracer provider
// (otelhttp.WithTracerProvider) and that set no global provider, nor aware.WithTracerProvider:
// the loop takes the provider of the recording span in the caller's context (the request's
// server span), as otelhttp's transport does, so that its span exists and the attempts are
// its children.
func TestPairingLoopSpanFromContextProvider(t *testing.T) {
	exp, tp := memExporter(t)
	srv := unavailableTwice(t)
	client := &http.Client{Transport: otelhttp.NewTransport(NewTransport(nil), otelhttp.WithTracerProvider(tp))}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "POST /agent", trace.WithSpanKind(trace.SpanKindServer))
	resp, err := Retry(ctx, func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		return CheckResponse(client.Do(req))
	}, WithName("retry search"), WithBackOff(backoff.NewConstantBackOff(time.Millisecond)))
	require.NoError(t, err)
	resp.Body.Close()
	parent.End()
	spans := exp.GetSpans()
	for _, s := range checkOnePerAttempt(t, spans, "retry search", 3) {
		assert.Equal(t, "HTTP GET", s.Name, "otelhttp's span, not one of the loop's")
	}
	for _, s := range spans {
		if s.Name == "retry search" {
			assert.Equal(t, parent.SpanContext().SpanID(), s.Parent.SpanID(), "the loop under the caller's span")
		}
	}
}

// The same client in a context without a span (a background job): the loop has no provider
// to record with while the client's instrumentation records the attempts. The loop says so
// once, through the OTel error handler (which logs by default), naming the option that fixes it.
func TestPairingLoopWithoutProviderSaysSo(t *testing.T) {
	exp, tp := memExporter(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	client := &http.Client{Transport: otelhttp.NewTransport(NewTransport(nil), otelhttp.WithTracerProvider(tp))}
	var logged lockedLog
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)
	name := "retry " + t.Name() // reported once per loop name: a name no other test uses
	for range 2 {
		resp, err := Retry(context.Background(), func(ctx context.Context) (*http.Response, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			return CheckResponse(client.Do(req))
		}, WithName(name))
		require.NoError(t, err)
		resp.Body.Close()
	}
	assert.Len(t, attemptSpans(exp.GetSpans()), 2, "otelhttp's spans")
	out := logged.String()
	assert.Equal(t, 1, strings.Count(out, `aware: retry loop "`+name+`" records no span`), "once per loop name:\n%s", out)
	assert.Contains(t, out, "aware.WithTracerProvider")

	// Given the provider, the loop records and says nothing.
	logged.Reset()
	exp.Reset()
	resp, err := Retry(context.Background(), func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		return CheckResponse(client.Do(req))
	}, WithName(name+" given"), WithTracerProvider(tp))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Empty(t, logged.String())
	checkOnePerAttempt(t, exp.GetSpans(), name+" given", 1)
}

// lockedLog collects what the log package writes, for a test to read.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *lockedLog) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Reset()
}

// unavailableTwice starts a server that answers 503 to the first two requests and 200 to the
// others; it is closed when the test ends.
func unavailableTwice(t *testing.T) *httptest.Server {
	srv, _ := hitServer(t, func(w http.ResponseWriter, _ *http.Request, hit int32) {
		if hit < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	return srv
}
