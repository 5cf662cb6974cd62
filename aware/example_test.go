package aware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	backoff "github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/orphanwatch/orphanwatch/aware"
)

// A flaky call retried until it succeeds: the caller's context is checked before every
// attempt, and every attempt sees its number.
func ExampleRetry() {
	calls := 0
	v, err := aware.Retry(context.Background(), func(ctx context.Context) (string, error) {
		calls++
		a, _ := aware.AttemptFromContext(ctx)
		if calls < 3 {
			fmt.Printf("attempt %d: 503\n", a.Number)
			return "", &aware.StatusError{Code: 503}
		}
		fmt.Printf("attempt %d: 200\n", a.Number)
		return "result", nil
	}, aware.WithBackOff(backoff.NewConstantBackOff(time.Millisecond)))
	fmt.Println(v, err)
	// Output:
	// attempt 1: 503
	// attempt 2: 503
	// attempt 3: 200
	// result <nil>
}

// The caller leaves while the loop waits out a 10 s backoff: the wait ends at once, and the
// error says where the loop was.
func ExampleRetry_cancelledDuringBackoff() {
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	time.AfterFunc(20*time.Millisecond, cancel) // the user closes the tab
	err := aware.Do(ctx, func(context.Context) error {
		return &aware.StatusError{Code: 503}
	}, aware.WithBackOff(backoff.NewConstantBackOff(10*time.Second)))

	var stopped *aware.CancelError
	fmt.Println(err)
	fmt.Println(errors.Is(err, context.Canceled), errors.As(err, &stopped), stopped.Stage, stopped.Attempts)
	fmt.Println(time.Since(start) < 5*time.Second)
	// Output:
	// abandoned during backoff after 1 attempt: context canceled
	// true true during backoff 1
	// true
}

// A deadline that has passed: nothing is dispatched.
func ExampleRetry_deadlinePassed() {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	err := aware.Do(ctx, func(context.Context) error {
		fmt.Println("never runs")
		return nil
	})
	fmt.Println(err)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// abandoned before dispatch after 0 attempts: context deadline exceeded
	// true
}

// The deadline as data: Handler reads it into the request's context, Transport writes it on
// every outgoing request and refuses to send once it has passed.
func ExampleTransport() {
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Header.Get(aware.HeaderDeadline))
	}))
	defer sub.Close()
	client := &http.Client{Transport: aware.NewTransport(nil)}

	deadline := time.Date(2030, 1, 1, 0, 0, 2, 250_000_000, time.UTC)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, sub.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("X-Deadline:", string(got))

	late, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel2()
	req, _ = http.NewRequestWithContext(late, http.MethodGet, sub.URL, nil)
	_, err = client.Do(req)
	fmt.Println(errors.Is(err, aware.ErrDeadlinePassed), errors.Is(err, context.DeadlineExceeded))
	fmt.Println(aware.ErrDeadlinePassed)
	// Output:
	// X-Deadline: 1893456002.250000
	// true true
	// deadline already passed before dispatch
}

// A server reads grpc-timeout, X-Deadline or Envoy's x-envoy-expected-rq-timeout-ms; the
// earliest wins.
func ExampleHandler() {
	h := aware.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dl, ok := r.Context().Deadline()
		fmt.Println(ok, time.Until(dl) > 200*time.Millisecond && time.Until(dl) <= 250*time.Millisecond)
	}))
	r := httptest.NewRequest(http.MethodPost, "/agent", nil)
	r.Header.Set("grpc-timeout", "250m")
	r.Header.Set("x-envoy-expected-rq-timeout-ms", "15000")
	h.ServeHTTP(httptest.NewRecorder(), r)
	// Output:
	// true true
}

func ExampleParseGRPCTimeout() {
	for _, v := range []string{"250m", "5S", "1H", "5s", "123456789S"} {
		d, err := aware.ParseGRPCTimeout(v)
		fmt.Println(v, d, err)
	}
	fmt.Println(aware.FormatGRPCTimeout(1500 * time.Millisecond))
	// Output:
	// 250m 250ms <nil>
	// 5S 5s <nil>
	// 1H 1h0m0s <nil>
	// 5s 0s aware: bad deadline value: grpc-timeout unit "5s"
	// 123456789S 0s aware: bad deadline value: grpc-timeout "123456789S"
	// 1500000u
}

// With otelhttp, each attempt is otelhttp's CLIENT span, without any option: aware.Transport
// (inside otelhttp's transport) claims the attempt for otelhttp's span and writes the resend
// count on it, and the loop makes no span of its own for it.
func ExampleRetry_otelhttp() {
	var n atomic.Int32
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer tool.Close()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	client := &http.Client{Transport: otelhttp.NewTransport(aware.NewTransport(nil), otelhttp.WithTracerProvider(tp))}

	resp, err := aware.Retry(context.Background(), func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tool.URL+"/search", nil)
		return aware.CheckResponse(client.Do(req))
	}, aware.WithTracerProvider(tp), aware.WithName("retry search"),
		aware.WithBackOff(backoff.NewConstantBackOff(time.Millisecond)))
	if err == nil {
		resp.Body.Close()
	}
	fmt.Println(err)
	ended := spans.Ended()
	sort.Slice(ended, func(i, j int) bool { return ended[i].StartTime().Before(ended[j].StartTime()) })
	for _, s := range ended {
		resend := "-"
		for _, kv := range s.Attributes() {
			if kv.Key == aware.AttrResendCount {
				resend = kv.Value.Emit()
			}
		}
		fmt.Println(s.SpanKind(), s.Name(), "resend_count", resend)
	}
	// Output:
	// <nil>
	// internal retry search resend_count -
	// client HTTP POST resend_count -
	// client HTTP POST resend_count 1
	// client HTTP POST resend_count 2
}

// The body-read rule: Go's HTTP/1.x server cancels r.Context() when the client disconnects only
// once the handler has read the request body to EOF. This handler decodes the body and drains
// it to EOF before its long work, so it hears that the caller has gone; a handler that read
// none or only part of the body would wait the whole minute (TestHandlerBodyReadRule measures
// both). aware.WithReadBody does the reading for handlers that cannot.
func ExampleHandler_bodyReadRule() {
	working := make(chan struct{})
	stopped := make(chan error, 1)
	srv := httptest.NewServer(aware.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var question struct{ Q string }
		_ = json.NewDecoder(r.Body).Decode(&question)
		_, _ = io.Copy(io.Discard, r.Body) // to EOF: from here on the server watches the connection
		close(working)
		select { // the long work (a model call), with the caller's context
		case <-r.Context().Done():
			stopped <- r.Context().Err()
		case <-time.After(time.Minute):
			stopped <- nil
		}
	})))
	defer srv.Close()

	ctx, closeTab := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{"Q":"why?"}`))
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-working
	closeTab() // the user closes the tab
	fmt.Println("handler stopped:", <-stopped)
	// Output:
	// handler stopped: context canceled
}

// A retry loop over HTTP as the README shows it: CheckResponse turns 408/425/429/5xx (but 501)
// into retryable errors and honours Retry-After; the loop stops after 5 attempts by default.
func ExampleCheckResponse() {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			fmt.Fprint(w, "answer")
		}
	}))
	defer srv.Close()
	client := &http.Client{Transport: aware.NewTransport(nil)}

	resp, err := aware.Retry(context.Background(), func(ctx context.Context) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return nil, backoff.Permanent(err)
		}
		return aware.CheckResponse(client.Do(req))
	}, aware.WithBackOff(backoff.NewConstantBackOff(time.Millisecond)),
		aware.WithOnRetry(func(attempt int, err error, wait time.Duration) {
			fmt.Printf("attempt %d: %v, next in %v\n", attempt, err, wait)
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// attempt 1: HTTP status 429, next in 0s
	// attempt 2: HTTP status 503, next in 1ms
	// 200 answer
}
