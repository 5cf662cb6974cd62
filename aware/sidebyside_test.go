package aware_test

// The side-by-side page of README.md ("Side by side: cenkalti/backoff, go-retryablehttp,
// aware"): the same retry loop written with each library, and what each does when the caller
// leaves before dispatch, mid-attempt and mid-backoff. Every claim of the page's table is an
// assertion here. All three loops use a real otelhttp client against a loopback server, with
// the OTel SDK exporting into tracetest's in-memory exporter, as a service would.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	backoff "github.com/cenkalti/backoff/v5"
	retryablehttp "github.com/hashicorp/go-retryablehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/orphanwatch/orphanwatch/aware"
)

// searchWithBackoff is the loop written with cenkalti/backoff/v5: the operation closes over
// the caller's ctx (v5's Operation takes no context).
func searchWithBackoff(ctx context.Context, client *http.Client, url string, wait time.Duration, calls *atomic.Int32) (*http.Response, error) {
	return backoff.Retry(ctx, func() (*http.Response, error) {
		calls.Add(1)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, backoff.Permanent(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		if aware.RetryableHTTPStatus(resp.StatusCode) {
			resp.Body.Close()
			return nil, fmt.Errorf("HTTP status %d", resp.StatusCode)
		}
		return resp, nil
	}, backoff.WithBackOff(backoff.NewConstantBackOff(wait)), backoff.WithMaxTries(5))
}

// searchWithRetryablehttp is the loop written with hashicorp/go-retryablehttp: its client
// wraps the otelhttp client and retries inside Do.
func searchWithRetryablehttp(ctx context.Context, client *http.Client, url string, wait time.Duration, calls *atomic.Int32) (*http.Response, error) {
	rc := retryablehttp.NewClient()
	rc.HTTPClient = client
	rc.RetryMax = 4 // 5 attempts
	rc.RetryWaitMin, rc.RetryWaitMax = wait, wait
	rc.Logger = nil
	rc.RequestLogHook = func(retryablehttp.Logger, *http.Request, int) { calls.Add(1) }
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return rc.Do(req)
}

// searchWithAware is the loop written with aware: the attempt gets its own ctx, CheckResponse
// decides, and the client has aware.Transport inside otelhttp's.
func searchWithAware(ctx context.Context, client *http.Client, url string, wait time.Duration, calls *atomic.Int32) (*http.Response, error) {
	return aware.Retry(ctx, func(ctx context.Context) (*http.Response, error) {
		calls.Add(1)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, backoff.Permanent(err)
		}
		return aware.CheckResponse(client.Do(req))
	}, aware.WithName("retry search"), aware.WithBackOff(backoff.NewConstantBackOff(wait)))
}

type library struct {
	name   string
	search func(ctx context.Context, client *http.Client, url string, wait time.Duration, calls *atomic.Int32) (*http.Response, error)
	// inner is the transport inside otelhttp's: aware's loop uses aware.Transport there.
	inner func() http.RoundTripper
}

var libraries = []library{
	{"cenkalti/backoff/v5", searchWithBackoff, func() http.RoundTripper { return http.DefaultTransport }},
	{"hashicorp/go-retryablehttp", searchWithRetryablehttp, func() http.RoundTripper { return http.DefaultTransport }},
	{"aware", searchWithAware, func() http.RoundTripper { return aware.NewTransport(nil) }},
}

// outcome is what one loop did once the caller left.
type outcome struct {
	err        error
	took       time.Duration // from the caller leaving to the loop returning
	calls      int32         // attempt functions run (retryablehttp: requests handed to its client)
	hits       int32         // requests the server received
	clientSpan int           // CLIENT spans (attempts, as the processor reads them)
	cancelSeen bool          // some span records error.type "context canceled" (the loop noticed)
	clientErr  []string      // error.type of each CLIENT span
}

// run runs lib's loop (waiting wait between attempts) against a loopback server that counts
// the requests it receives and answers with handler (given the request's number, from 1);
// leave makes the caller leave (with cancel) and returns when it did.
func run(t *testing.T, lib library, wait time.Duration, handler func(w http.ResponseWriter, r *http.Request, hit int32), ctx context.Context, cancel context.CancelFunc, leave func() time.Time) outcome {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	prev := otel.GetTracerProvider() // a service's main sets the global provider
	otel.SetTracerProvider(tp)
	defer otel.SetTracerProvider(prev)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler(w, r, hits.Add(1)) }))
	defer srv.Close()
	client := &http.Client{Transport: otelhttp.NewTransport(lib.inner(), otelhttp.WithTracerProvider(tp))}
	caller, span := tp.Tracer("caller").Start(ctx, "GET /agent", trace.WithSpanKind(trace.SpanKindServer))

	var o outcome
	var calls atomic.Int32
	left := make(chan time.Time, 1)
	go func() { left <- leave() }()
	resp, err := lib.search(caller, client, srv.URL+"/search", wait, &calls)
	end := time.Now()
	cancel()
	span.End()
	if resp != nil {
		resp.Body.Close()
	}
	o.took = end.Sub(<-left)
	o.err, o.calls, o.hits = err, calls.Load(), hits.Load()
	for _, s := range exp.GetSpans() {
		for _, kv := range s.Attributes {
			if kv.Key == "error.type" && kv.Value.AsString() == "context canceled" {
				o.cancelSeen = true
			}
		}
		if s.SpanKind == trace.SpanKindClient {
			o.clientSpan++
			et := ""
			for _, kv := range s.Attributes {
				if kv.Key == "error.type" {
					et = kv.Value.AsString()
				}
			}
			o.clientErr = append(o.clientErr, et)
		}
	}
	t.Logf("%s: err=%v took=%v calls=%d hits=%d client spans=%d %q cancel recorded=%v",
		lib.name, o.err, o.took.Round(time.Millisecond), o.calls, o.hits, o.clientSpan, o.clientErr, o.cancelSeen)
	return o
}

// leaveOnce is a leave for run: once ready is signalled and pause has passed, the caller leaves
// (cancel).
func leaveOnce(ready <-chan struct{}, pause time.Duration, cancel context.CancelFunc) func() time.Time {
	return func() time.Time {
		<-ready
		time.Sleep(pause)
		now := time.Now()
		cancel()
		return now
	}
}

// runLeaving runs lib (waiting 10 s between attempts) against handler, with a caller that leaves
// pause after handler first signals ready, and asserts that the loop gave up with
// context.Canceled as checkErr says lib reports a leaving at stage.
func runLeaving(t *testing.T, lib library, stage aware.Stage, pause time.Duration, handler func(w http.ResponseWriter, r *http.Request, ready chan<- struct{})) outcome {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{}, 8)
	o := run(t, lib, 10*time.Second, func(w http.ResponseWriter, r *http.Request, _ int32) {
		handler(w, r, ready)
	}, ctx, cancel, leaveOnce(ready, pause, cancel))
	require.ErrorIs(t, o.err, context.Canceled)
	checkErr(t, lib.name, o.err, stage)
	return o
}

// checkErr asserts the error each library returns, as the page quotes it.
func checkErr(t *testing.T, lib string, err error, stage aware.Stage) {
	t.Helper()
	switch lib {
	case "cenkalti/backoff/v5":
		assert.Same(t, context.Canceled, err, "context.Canceled itself")
	case "hashicorp/go-retryablehttp":
		if stage == aware.DuringBackoff {
			assert.Same(t, context.Canceled, err, "context.Canceled itself")
		} else {
			assert.Regexp(t, `^GET http://\S+ giving up after 1 attempt\(s\): context canceled$`, err.Error())
		}
	case "aware":
		var ce *aware.CancelError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, stage, ce.Stage)
	}
}

// Before dispatch: the caller has already gone when the loop starts.
func TestSideBySideBeforeDispatch(t *testing.T) {
	for _, lib := range libraries {
		t.Run(lib.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			o := run(t, lib, 10*time.Second, func(http.ResponseWriter, *http.Request, int32) {}, ctx, cancel, time.Now)
			require.ErrorIs(t, o.err, context.Canceled)
			checkErr(t, lib.name, o.err, aware.BeforeDispatch)
			assert.Zero(t, o.hits, "nothing reaches the server")
			switch lib.name {
			case "aware":
				var ce *aware.CancelError
				require.ErrorAs(t, o.err, &ce)
				assert.Equal(t, aware.BeforeDispatch, ce.Stage)
				assert.Zero(t, o.calls, "the attempt function is never called")
				assert.Zero(t, o.clientSpan, "no attempt span")
				assert.True(t, o.cancelSeen, "the loop's span records context canceled")
			default:
				assert.Equal(t, int32(1), o.calls, "the attempt is made once, with a dead context")
				assert.Equal(t, 1, o.clientSpan, "otelhttp records an attempt that started after the caller had gone")
				assert.Equal(t, []string{"*errors.errorString"}, o.clientErr, "otelhttp alone records the error's Go type")
				assert.False(t, o.cancelSeen)
			}
		})
	}
}

// Mid-attempt: the caller leaves while the server works on the first attempt.
func TestSideBySideMidAttempt(t *testing.T) {
	for _, lib := range libraries {
		t.Run(lib.name, func(t *testing.T) {
			o := runLeaving(t, lib, aware.DuringAttempt, 0, func(_ http.ResponseWriter, r *http.Request, ready chan<- struct{}) {
				ready <- struct{}{}
				select { // the long work
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			})
			assert.Less(t, o.took, time.Second, "the attempt in flight is abandoned at once")
			assert.Equal(t, int32(1), o.hits, "no further attempt")
			assert.Equal(t, int32(1), o.calls)
			assert.Equal(t, 1, o.clientSpan)
			if lib.name == "aware" {
				var ce *aware.CancelError
				require.ErrorAs(t, o.err, &ce)
				assert.Equal(t, aware.DuringAttempt, ce.Stage)
				assert.Equal(t, []string{"context canceled"}, o.clientErr, "aware.Transport names the cause on otelhttp's span")
			} else {
				assert.Equal(t, []string{"*errors.errorString"}, o.clientErr, "otelhttp alone records the error's Go type")
			}
			assert.Equal(t, lib.name == "aware", o.cancelSeen)
		})
	}
}

// Mid-backoff: the caller leaves while the loop waits 10 s after a 503.
func TestSideBySideMidBackoff(t *testing.T) {
	for _, lib := range libraries {
		t.Run(lib.name, func(t *testing.T) {
			// 100 ms after the 503 the loop is in its 10 s wait
			o := runLeaving(t, lib, aware.DuringBackoff, 100*time.Millisecond, func(w http.ResponseWriter, _ *http.Request, answered chan<- struct{}) {
				w.WriteHeader(http.StatusServiceUnavailable)
				answered <- struct{}{}
			})
			assert.Less(t, o.took, time.Second, "the wait is cut short")
			assert.Equal(t, int32(1), o.hits)
			assert.Equal(t, int32(1), o.calls)
			assert.Equal(t, []string{"503"}, o.clientErr, "the one attempt span says 503")
			if lib.name == "aware" {
				var ce *aware.CancelError
				require.ErrorAs(t, o.err, &ce)
				assert.Equal(t, aware.DuringBackoff, ce.Stage)
			}
			assert.Equal(t, lib.name == "aware", o.cancelSeen, "only aware's loop span records that it noticed")
		})
	}
}

// The deadline as data: only aware's client tells the next hop how long the caller will wait.
func TestSideBySideDeadlineReachesTheNextHop(t *testing.T) {
	for _, lib := range libraries {
		t.Run(lib.name, func(t *testing.T) {
			var header atomic.Value
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			o := run(t, lib, 10*time.Second, func(w http.ResponseWriter, r *http.Request, _ int32) {
				header.Store(r.Header.Get(aware.HeaderDeadline))
			}, ctx, cancel, time.Now)
			require.NoError(t, o.err)
			if lib.name == "aware" {
				dl, err := aware.ParseUnixSeconds(header.Load().(string))
				require.NoError(t, err)
				assert.WithinDuration(t, time.Now().Add(30*time.Second), dl, 5*time.Second)
			} else {
				assert.Empty(t, header.Load(), "no X-Deadline: the next hop cannot know")
			}
		})
	}
}

// Which answers are retried: 408 Request Timeout (and 425 Too Early) are retryable for
// orphanwatch (DESIGN.md "Run outcomes") and aware; go-retryablehttp's default policy does not
// retry them.
func TestSideBySideRetriesA408(t *testing.T) {
	for _, lib := range libraries {
		if lib.name == "cenkalti/backoff/v5" {
			continue // the operation decides; searchWithBackoff uses aware.RetryableHTTPStatus
		}
		t.Run(lib.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			o := run(t, lib, time.Millisecond, func(w http.ResponseWriter, _ *http.Request, hit int32) {
				if hit == 1 {
					w.WriteHeader(http.StatusRequestTimeout)
				}
			}, ctx, cancel, time.Now)
			require.NoError(t, o.err)
			want := map[string]int32{"aware": 2, "hashicorp/go-retryablehttp": 1}[lib.name]
			assert.Equal(t, want, o.hits)
		})
	}
}

// The defaults the page names, read from the libraries themselves.
func TestSideBySideDefaults(t *testing.T) {
	// cenkalti/backoff/v5: no attempt cap, 15 minutes of elapsed time.
	assert.Equal(t, 15*time.Minute, backoff.DefaultMaxElapsedTime)
	// go-retryablehttp: 4 retries, waits of 1 s to 30 s; Retry-After read on 429 and 503 only,
	// and not capped by RetryWaitMax.
	rc := retryablehttp.NewClient()
	assert.Equal(t, 4, rc.RetryMax)
	assert.Equal(t, time.Second, rc.RetryWaitMin)
	assert.Equal(t, 30*time.Second, rc.RetryWaitMax)
	answer := func(code int) *http.Response {
		return &http.Response{StatusCode: code, Header: http.Header{"Retry-After": {"3600"}}}
	}
	assert.Equal(t, time.Hour, rc.Backoff(rc.RetryWaitMin, rc.RetryWaitMax, 0, answer(429)))
	assert.Equal(t, time.Hour, rc.Backoff(rc.RetryWaitMin, rc.RetryWaitMax, 0, answer(503)))
	assert.Equal(t, time.Second, rc.Backoff(rc.RetryWaitMin, rc.RetryWaitMax, 0, answer(502)), "Retry-After ignored")
	// aware: 5 attempts; Retry-After on every retried status, capped at 30 s by default.
	assert.Equal(t, 5, aware.DefaultMaxAttempts)
	for _, code := range []int{408, 429, 502, 503} {
		_, err := aware.CheckResponse(answer(code), nil)
		var se *aware.StatusError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, aware.DefaultMaxRetryAfter, se.RetryAfter, "status %d", code)
	}
	assert.Equal(t, 30*time.Second, aware.DefaultMaxRetryAfter)
}
