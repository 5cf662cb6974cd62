package aware

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// healthServer is hop C: it records the deadline its handlers see.
type healthServer struct {
	grpc_health_v1.UnimplementedHealthServer
	mu        sync.Mutex
	deadlines []time.Time
	xdeadline []string
	calls     atomic.Int32
}

func (h *healthServer) note(ctx context.Context) {
	h.calls.Add(1)
	dl, _ := ctx.Deadline()
	md, _ := metadata.FromIncomingContext(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deadlines = append(h.deadlines, dl)
	h.xdeadline = append(h.xdeadline, md.Get(MetadataDeadline)...)
}

func (h *healthServer) Check(ctx context.Context, _ *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	h.note(ctx)
	return &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}, nil
}

func (h *healthServer) Watch(_ *grpc_health_v1.HealthCheckRequest, ss grpc_health_v1.Health_WatchServer) error {
	h.note(ss.Context())
	return ss.Send(&grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING})
}

// startGRPC serves hop C on a loopback listener and returns a client connection with the
// client interceptors.
func startGRPC(t *testing.T) (*healthServer, grpc_health_v1.HealthClient, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &healthServer{}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(UnaryServerInterceptor()), grpc.ChainStreamInterceptor(StreamServerInterceptor()))
	grpc_health_v1.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(ln.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(UnaryClientInterceptor()),
		grpc.WithChainStreamInterceptor(StreamClientInterceptor()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return hs, grpc_health_v1.NewHealthClient(cc), ln.Addr().String()
}

// The deadline the user's client sets travels gateway (HTTP) -> agent (HTTP) -> tool (gRPC):
// every hop's context ends at the same instant.
func TestDeadlineAcrossTwoHTTPHopsAndOneGRPCHop(t *testing.T) {
	hs, tool, _ := startGRPC(t)

	var agentDeadline, gatewayDeadline time.Time
	var agentHeader string
	agent := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agentDeadline, _ = r.Context().Deadline()
		agentHeader = r.Header.Get(HeaderDeadline)
		if _, err := tool.Check(r.Context(), &grpc_health_v1.HealthCheckRequest{}); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		stream, err := tool.Watch(r.Context(), &grpc_health_v1.HealthCheckRequest{})
		if err == nil {
			_, err = stream.Recv()
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		_, _ = io.WriteString(w, "agent ok")
	})))
	defer agent.Close()
	client := &http.Client{Transport: NewTransport(nil)}
	gateway := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gatewayDeadline, _ = r.Context().Deadline()
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, agent.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})))
	defer gateway.Close()

	deadline := time.Now().Add(5 * time.Second).Truncate(time.Microsecond)
	req, _ := http.NewRequest(http.MethodPost, gateway.URL, nil)
	req.Header.Set(HeaderDeadline, FormatUnixSeconds(deadline))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))

	assert.True(t, gatewayDeadline.Equal(deadline), "gateway %v want %v", gatewayDeadline, deadline)
	assert.True(t, agentDeadline.Equal(deadline), "agent %v want %v", agentDeadline, deadline)
	assert.Equal(t, FormatUnixSeconds(deadline), agentHeader)
	require.Len(t, hs.deadlines, 2, "unary and stream")
	for _, d := range hs.deadlines {
		assert.True(t, d.Equal(deadline), "tool %v want %v (x-deadline is absolute, grpc-timeout only later)", d, deadline)
	}
	assert.Equal(t, []string{FormatUnixSeconds(deadline), FormatUnixSeconds(deadline)}, hs.xdeadline)
}

// A request whose deadline passes while the gateway waits is never sent on: the agent never
// sees it, and the gateway's client error says why.
func TestNoDispatchAfterDeadlineHTTP(t *testing.T) {
	var agentCalls atomic.Int32
	agent := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { agentCalls.Add(1) }))
	defer agent.Close()
	client := &http.Client{Transport: NewTransport(nil)}
	var sendErr error
	gateway := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // slow work; the deadline passes
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, agent.URL, nil)
		_, sendErr = client.Do(req)
		w.WriteHeader(http.StatusGatewayTimeout)
	})))
	defer gateway.Close()
	req, _ := http.NewRequest(http.MethodPost, gateway.URL, nil)
	req.Header.Set(HeaderGRPCTimeout, "100m")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusGatewayTimeout, resp.StatusCode)
	assert.Zero(t, agentCalls.Load())
	require.Error(t, sendErr)
	assert.ErrorIs(t, sendErr, ErrDeadlinePassed)
	assert.ErrorIs(t, sendErr, context.DeadlineExceeded)
	assert.Contains(t, sendErr.Error(), "deadline already passed before dispatch")
}

func TestHandler(t *testing.T) {
	var ctxErr error
	var hadDeadline bool
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctxErr = r.Context().Err()
		_, hadDeadline = r.Context().Deadline()
	}))
	serve := func(h http.Handler, hdr http.Header) int {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header = hdr
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	// No header: untouched.
	serve(h, http.Header{})
	assert.False(t, hadDeadline)
	assert.NoError(t, ctxErr)
	// Junk: ignored.
	serve(h, http.Header{"X-Deadline": {"tomorrow"}})
	assert.False(t, hadDeadline)
	// Envoy's header.
	serve(h, http.Header{"X-Envoy-Expected-Rq-Timeout-Ms": {"15000"}})
	assert.True(t, hadDeadline)
	assert.NoError(t, ctxErr)
	// Passed: the handler runs with a done context.
	serve(h, http.Header{"X-Deadline": {FormatUnixSeconds(time.Now().Add(-time.Second))}})
	assert.ErrorIs(t, ctxErr, context.DeadlineExceeded)
	serve(h, http.Header{"Grpc-Timeout": {"0n"}})
	assert.ErrorIs(t, ctxErr, context.DeadlineExceeded)
	// Passed, rejecting: 504 without the handler.
	ctxErr = nil
	called := false
	rh := Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }), WithRejectPassed())
	assert.Equal(t, http.StatusGatewayTimeout, serve(rh, http.Header{"X-Deadline": {"1"}}))
	assert.False(t, called)
	assert.Equal(t, http.StatusOK, serve(rh, http.Header{"X-Deadline": {FormatUnixSeconds(time.Now().Add(time.Minute))}}))
	assert.True(t, called)

	// An earlier deadline already on the context is kept.
	early := time.Now().Add(time.Second)
	var got time.Time
	eh := Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got, _ = r.Context().Deadline() }))
	ctx, cancel := context.WithDeadline(context.Background(), early)
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	r.Header.Set(HeaderDeadline, FormatUnixSeconds(early.Add(time.Hour)))
	eh.ServeHTTP(httptest.NewRecorder(), r)
	assert.True(t, got.Equal(early))
}

func TestHandlerRecordsDeadlineOnServerSpan(t *testing.T) {
	sr, tp := recorder(t)
	srv := httptest.NewServer(otelhttp.NewHandler(Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), WithDeadlineAttribute()), "GET /", otelhttp.WithTracerProvider(tp)))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set(HeaderGRPCTimeout, "5S")
	before := time.Now()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Len(t, sr.Ended(), 1)
	v, ok := attr(sr.Ended()[0], AttrDeadline)
	require.True(t, ok)
	dl, err := ParseUnixSeconds(v.AsStringSlice()[0])
	require.NoError(t, err)
	assert.WithinDuration(t, before.Add(5*time.Second), dl, time.Second)
}

// base records the requests a Transport sends.
type base struct {
	reqs []*http.Request
}

func (b *base) RoundTrip(r *http.Request) (*http.Response, error) {
	b.reqs = append(b.reqs, r)
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
}

func TestTransport(t *testing.T) {
	b := &base{}
	tr := &Transport{Base: b, GRPCTimeout: true}

	// No deadline, no attempt: the request goes as it is.
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/", nil)
	_, err := tr.RoundTrip(req)
	require.NoError(t, err)
	assert.Same(t, req, b.reqs[0])
	assert.Empty(t, b.reqs[0].Header.Get(HeaderDeadline))

	// A deadline: written, the earlier of the context's and the request's own; the caller's
	// request is not modified.
	dl := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(context.Background(), dl)
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:1/", nil)
	_, err = tr.RoundTrip(req)
	require.NoError(t, err)
	sent := b.reqs[1]
	assert.Equal(t, FormatUnixSeconds(dl), sent.Header.Get(HeaderDeadline))
	gt, err := ParseGRPCTimeout(sent.Header.Get(HeaderGRPCTimeout))
	require.NoError(t, err)
	assert.InDelta(t, time.Minute.Seconds(), gt.Seconds(), 1)
	assert.Empty(t, req.Header.Get(HeaderDeadline), "the caller's request is untouched")

	earlier := time.Now().Add(10 * time.Second)
	req.Header.Set(HeaderDeadline, FormatUnixSeconds(earlier))
	_, _ = tr.RoundTrip(req)
	assert.Equal(t, FormatUnixSeconds(earlier), b.reqs[2].Header.Get(HeaderDeadline))

	// Inside an attempt: the loop's idempotency key, unless the request has one.
	actx := ContextWithAttempt(ctx, Attempt{Number: 2, IdempotencyKey: "K"})
	req, _ = http.NewRequestWithContext(actx, http.MethodGet, "http://127.0.0.1:1/", nil)
	_, _ = tr.RoundTrip(req)
	assert.Equal(t, "K", b.reqs[3].Header.Get(HeaderIdempotencyKey))
	req.Header.Set(HeaderIdempotencyKey, "mine")
	_, _ = tr.RoundTrip(req)
	assert.Equal(t, "mine", b.reqs[4].Header.Get(HeaderIdempotencyKey))

	// Refusals: nothing reaches the base transport.
	n := len(b.reqs)
	past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel2()
	req, _ = http.NewRequestWithContext(past, http.MethodGet, "http://127.0.0.1:1/", nil)
	_, err = tr.RoundTrip(req)
	assert.ErrorIs(t, err, ErrDeadlinePassed)
	assert.Equal(t, "context deadline exceeded", ErrorType(err))

	cctx, cancel3 := context.WithCancel(context.Background())
	cancel3()
	req, _ = http.NewRequestWithContext(cctx, http.MethodGet, "http://127.0.0.1:1/", nil)
	_, err = tr.RoundTrip(req)
	assert.ErrorIs(t, err, context.Canceled)
	var et interface{ ErrorType() string }
	require.True(t, errors.As(err, &et))
	assert.Equal(t, "context canceled", et.ErrorType())

	// The clock says the deadline passed before the context's timer fired.
	lctx, cancel4 := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	defer cancel4()
	late := &Transport{Base: b, now: func() time.Time { return time.Now().Add(2 * time.Hour) }}
	req, _ = http.NewRequestWithContext(lctx, http.MethodGet, "http://127.0.0.1:1/", nil)
	_, err = late.RoundTrip(req)
	assert.ErrorIs(t, err, ErrDeadlinePassed)
	assert.Len(t, b.reqs, n)
}

func TestGRPCRefusesAfterDeadline(t *testing.T) {
	hs, tool, addr := startGRPC(t)

	// Client side: an expired context is not dispatched.
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := tool.Check(past, &grpc_health_v1.HealthCheckRequest{})
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	assert.Contains(t, status.Convert(err).Message(), "deadline already passed before dispatch")
	_, err = tool.Watch(past, &grpc_health_v1.HealthCheckRequest{})
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	gone, cancel2 := context.WithCancel(context.Background())
	cancel2()
	_, err = tool.Check(gone, &grpc_health_v1.HealthCheckRequest{})
	assert.Equal(t, codes.Canceled, status.Code(err))
	assert.Zero(t, hs.calls.Load())

	// Server side: a call carrying an x-deadline in the past (and no grpc-timeout) is refused
	// before the handler. Bypass the client interceptor by a raw connection.
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	raw := grpc_health_v1.NewHealthClient(cc)
	ctx := metadata.AppendToOutgoingContext(context.Background(), MetadataDeadline, FormatUnixSeconds(time.Now().Add(-time.Second)))
	_, err = raw.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	st, err := raw.Watch(ctx, &grpc_health_v1.HealthCheckRequest{})
	if err == nil {
		_, err = st.Recv()
	}
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	assert.Zero(t, hs.calls.Load())

	// And a live one goes through with its deadline.
	ctx = metadata.AppendToOutgoingContext(context.Background(), MetadataDeadline, FormatUnixSeconds(time.Now().Add(time.Minute)))
	_, err = raw.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), hs.calls.Load())
	assert.False(t, hs.deadlines[0].IsZero())
}
