package aware

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	backoff "github.com/cenkalti/backoff/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
	"pgregory.net/rapid"
)

var errFlaky = errors.New("503 from the tool")

func recorder(t *testing.T) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return sr, tp
}

// hitServer starts a server whose handler h is also told which request this is (1, 2, ...),
// and returns it with the count of requests; it is closed when the test ends.
func hitServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request, hit int32)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	hits := new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, hits.Add(1)) }))
	t.Cleanup(srv.Close)
	return srv, hits
}

func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func byName(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func TestRetrySucceedsAfterFailures(t *testing.T) {
	sr, tp := recorder(t)
	calls := 0
	v, err := Retry(context.Background(), func(ctx context.Context) (string, error) {
		calls++
		a, ok := AttemptFromContext(ctx)
		require.True(t, ok)
		assert.Equal(t, calls, a.Number)
		if calls < 3 {
			return "", errFlaky
		}
		return "ok", nil
	}, WithBackOff(backoff.NewConstantBackOff(time.Millisecond)), WithTracerProvider(tp),
		WithName("retry search"), WithAttemptName("POST /search"), WithIdempotencyKey("k-1"),
		WithRecordedIdempotencyKey(), WithAttemptAttribute("app.attempt"))
	require.NoError(t, err)
	assert.Equal(t, "ok", v)

	spans := sr.Ended()
	loop := byName(spans, "retry search")
	require.Len(t, loop, 1)
	assert.Equal(t, trace.SpanKindInternal, loop[0].SpanKind())
	assert.Equal(t, codes.Unset, loop[0].Status().Code)
	atts := byName(spans, "POST /search")
	require.Len(t, atts, 3)
	for i, s := range atts {
		assert.Equal(t, trace.SpanKindClient, s.SpanKind())
		assert.Equal(t, loop[0].SpanContext().SpanID(), s.Parent().SpanID(), "attempts are children of the loop")
		rc, ok := attr(s, AttrResendCount)
		if i == 0 {
			assert.False(t, ok, "no resend count on the first try")
		} else {
			assert.Equal(t, int64(i), rc.AsInt64())
		}
		n, _ := attr(s, "app.attempt")
		assert.Equal(t, int64(i+1), n.AsInt64())
		k, _ := attr(s, AttrIdempotencyKey)
		assert.Equal(t, []string{"k-1"}, k.AsStringSlice())
		if i < 2 {
			assert.Equal(t, codes.Error, s.Status().Code)
			et, _ := attr(s, AttrErrorType)
			assert.Equal(t, "*errors.errorString", et.AsString())
		}
	}
}

func TestRetryCancelDuringBackoffStopsAtOnce(t *testing.T) {
	sr, tp := recorder(t)
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	start := time.Now()
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := Retry(ctx, func(context.Context) (int, error) {
		calls.Add(1)
		return 0, errFlaky
	}, WithBackOff(backoff.NewConstantBackOff(10*time.Second)), WithTracerProvider(tp))
	elapsed := time.Since(start)

	require.Error(t, err)
	assert.Less(t, elapsed, 2*time.Second, "the 10 s backoff was cut short")
	assert.Equal(t, int32(1), calls.Load())
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, errFlaky, "the last attempt's error is kept")
	var ce *CancelError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, DuringBackoff, ce.Stage)
	assert.Equal(t, 1, ce.Attempts)
	assert.Equal(t, "abandoned during backoff after 1 attempt: context canceled", ce.Error())

	loop := byName(sr.Ended(), "retry")
	require.Len(t, loop, 2, "the loop span and one attempt span share the default name")
	var l sdktrace.ReadOnlySpan
	for _, s := range loop {
		if s.SpanKind() == trace.SpanKindInternal {
			l = s
		}
	}
	require.NotNil(t, l)
	et, _ := attr(l, AttrErrorType)
	assert.Equal(t, "context canceled", et.AsString())
	assert.Equal(t, codes.Error, l.Status().Code)
}

func TestRetryNoDispatchAfterDeadline(t *testing.T) {
	var calls atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer cancel()
	_, err := Retry(ctx, func(context.Context) (int, error) {
		calls.Add(1)
		return 0, errFlaky
	}, WithBackOff(backoff.NewConstantBackOff(30*time.Millisecond)), WithMaxAttempts(100),
		WithTracerProvider(trace.NewNoopTracerProvider()))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var ce *CancelError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, int(calls.Load()), ce.Attempts, "every dispatched attempt is counted")
	assert.LessOrEqual(t, ce.Attempts, 4)
	assert.Equal(t, "context deadline exceeded", ce.ErrorType())

	// A context that is already done: nothing is dispatched.
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	calls.Store(0)
	err = Do(done, func(context.Context) error { calls.Add(1); return nil })
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, BeforeDispatch, ce.Stage)
	assert.Zero(t, ce.Attempts)
	assert.Zero(t, calls.Load())

	// A deadline that has passed on the clock though the context's timer has not fired yet.
	c := newConfig(nil)
	c.now = func() time.Time { return time.Now().Add(time.Hour) }
	later, cancel3 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel3()
	assert.True(t, gone(later, c.now))
	assert.False(t, gone(later, time.Now))
}

func TestRetryCauseAndDuringAttempt(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("user closed the tab")
	err := Do(ctx, func(actx context.Context) error {
		cancel(cause)
		<-actx.Done()
		return actx.Err()
	}, WithTracerProvider(trace.NewNoopTracerProvider()))
	var ce *CancelError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, DuringAttempt, ce.Stage)
	assert.Equal(t, 1, ce.Attempts)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, cause)
	assert.Contains(t, err.Error(), "user closed the tab")
}

func TestRetryClassifierPolicyAndBounds(t *testing.T) {
	noop := WithTracerProvider(trace.NewNoopTracerProvider())
	fast := WithBackOff(backoff.NewConstantBackOff(time.Microsecond))

	// Not retryable: returned as is after one attempt.
	calls := 0
	hard := &StatusError{Code: 400}
	err := Do(context.Background(), func(context.Context) error { calls++; return hard }, noop, fast)
	assert.Same(t, hard, err)
	assert.Equal(t, 1, calls)

	// Permanent errors stop too.
	calls = 0
	err = Do(context.Background(), func(context.Context) error { calls++; return backoff.Permanent(errFlaky) }, noop, fast)
	assert.ErrorIs(t, err, errFlaky)
	assert.Equal(t, 1, calls)

	// A custom classifier.
	calls = 0
	err = Do(context.Background(), func(context.Context) error { calls++; return hard }, noop, fast,
		WithRetryable(func(error) bool { return true }), WithMaxAttempts(3))
	var ex *ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, 3, ex.Attempts)
	assert.Equal(t, 3, calls)
	assert.ErrorIs(t, err, hard)

	// The policy says stop.
	calls = 0
	err = Do(context.Background(), func(context.Context) error { calls++; return errFlaky }, noop,
		WithBackOff(&backoff.StopBackOff{}))
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, 1, calls)

	// Retry-After overrides the policy.
	calls = 0
	var waits []time.Duration
	err = Do(context.Background(), func(context.Context) error {
		calls++
		if calls == 1 {
			return &backoff.RetryAfterError{Duration: 2 * time.Millisecond}
		}
		return nil
	}, noop, WithBackOff(backoff.NewConstantBackOff(time.Hour)),
		WithOnRetry(func(_ int, _ error, w time.Duration) { waits = append(waits, w) }))
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{2 * time.Millisecond}, waits)

	// Retryable statuses are those of the processor.
	for code, want := range map[int]bool{408: true, 425: true, 429: true, 500: true, 501: false, 503: true, 599: true, 400: false, 404: false} {
		assert.Equal(t, want, Retryable(&StatusError{Code: code}), "%d", code)
	}
	assert.False(t, Retryable(nil))
	assert.False(t, Retryable(context.Canceled))
}

func TestIdempotencyKeyDefaults(t *testing.T) {
	seen := map[string]bool{}
	for range 3 {
		_ = Do(context.Background(), func(ctx context.Context) error {
			a, _ := AttemptFromContext(ctx)
			seen[a.IdempotencyKey] = true
			return nil
		}, WithTracerProvider(trace.NewNoopTracerProvider()))
	}
	assert.Len(t, seen, 3, "one fresh key per loop")
	for k := range seen {
		assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, k)
	}
	_ = Do(context.Background(), func(ctx context.Context) error {
		a, _ := AttemptFromContext(ctx)
		assert.Empty(t, a.IdempotencyKey)
		return nil
	}, WithIdempotencyKey(""), WithTracerProvider(trace.NewNoopTracerProvider()))
}

// With otelhttp making the per-attempt CLIENT span, the loop makes none: each attempt is one
// CLIENT span, annotated by the Transport inside otelhttp's, with the key on the wire.
func TestRetryWithOtelhttpAnnotatesExistingSpans(t *testing.T) {
	sr, tp := recorder(t)
	var keys, deadlines []string
	srv, _ := hitServer(t, func(w http.ResponseWriter, r *http.Request, hit int32) {
		keys = append(keys, r.Header.Get(HeaderIdempotencyKey))
		deadlines = append(deadlines, r.Header.Get(HeaderDeadline))
		if hit < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	client := &http.Client{Transport: otelhttp.NewTransport(NewTransport(nil), otelhttp.WithTracerProvider(tp))}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := Retry(ctx, func(ctx context.Context) (string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/search", nil)
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			return "", &StatusError{Code: resp.StatusCode}
		}
		return string(b), nil
	}, WithTracerProvider(tp), WithName("retry search"),
		WithBackOff(backoff.NewConstantBackOff(time.Millisecond)), WithIdempotencyKey("key-7"), WithRecordedIdempotencyKey())
	require.NoError(t, err)
	assert.Equal(t, "ok", body)
	assert.Equal(t, []string{"key-7", "key-7", "key-7"}, keys)
	for _, d := range deadlines {
		_, err := ParseUnixSeconds(d)
		assert.NoError(t, err, "X-Deadline on every attempt")
	}

	spans := sr.Ended()
	loop := byName(spans, "retry search")
	require.Len(t, loop, 1)
	var clients []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanKind() == trace.SpanKindClient {
			clients = append(clients, s)
		}
	}
	require.Len(t, clients, 3, "one CLIENT span per attempt, otelhttp's")
	for i, s := range clients {
		assert.Equal(t, loop[0].SpanContext().SpanID(), s.Parent().SpanID())
		rc, ok := attr(s, AttrResendCount)
		assert.Equal(t, i > 0, ok)
		if ok {
			assert.Equal(t, int64(i), rc.AsInt64())
		}
		k, _ := attr(s, AttrIdempotencyKey)
		assert.Equal(t, []string{"key-7"}, k.AsStringSlice())
		_, ok = attr(s, AttrDeadline)
		assert.True(t, ok)
	}
	_, ok := attr(loop[0], AttrResendCount)
	assert.False(t, ok, "the loop's span is not an attempt")
}

// A cancellation while otelhttp's attempt is in flight: the CLIENT span and the loop's span
// both say context canceled.
func TestRetryWithOtelhttpCancelledInFlight(t *testing.T) {
	sr, tp := recorder(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	client := &http.Client{Transport: otelhttp.NewTransport(NewTransport(nil), otelhttp.WithTracerProvider(tp))}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	err := Do(ctx, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}, WithTracerProvider(tp))
	var ce *CancelError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, DuringAttempt, ce.Stage)
	for _, s := range sr.Ended() {
		et, ok := attr(s, AttrErrorType)
		require.True(t, ok, "%s has error.type", s.Name())
		assert.Equal(t, "context canceled", et.AsString(), s.Name())
		assert.Equal(t, codes.Error, s.Status().Code, s.Name())
	}
}

// Without the option, AnnotateSpan never writes on the loop's own span or outside a loop.
func TestAnnotateSpanOnlyOtherSpans(t *testing.T) {
	_, tp := recorder(t)
	assert.False(t, AnnotateSpan(context.Background()))
	ctx, span := tp.Tracer("t").Start(context.Background(), "loop")
	defer span.End()
	a := Attempt{Number: 2, Loop: span.SpanContext(), annotate: true}
	assert.False(t, AnnotateSpan(ContextWithAttempt(ctx, a)), "not on the loop's span")
	cctx, child := tp.Tracer("t").Start(ContextWithAttempt(ctx, a), "GET")
	defer child.End()
	assert.True(t, AnnotateSpan(cctx))
	a.annotate = false
	assert.False(t, AnnotateSpan(ContextWithAttempt(cctx, a)), "own attempt spans are annotated by the loop")
}

func TestCheck(t *testing.T) {
	assert.NoError(t, Check(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, Check(ctx), context.Canceled)
	past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	assert.ErrorIs(t, Check(past), context.DeadlineExceeded)
}

// Property: whatever the attempts answer and whenever the caller leaves, the loop never
// dispatches after the caller has gone, counts exactly the attempts it made, and ends in the
// one way the inputs call for.
func TestRetryProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		maxAttempts := rapid.IntRange(1, 8).Draw(rt, "maxAttempts")
		failures := rapid.IntRange(0, 10).Draw(rt, "failures") // attempts that fail before one succeeds
		cancelAt := rapid.IntRange(0, 10).Draw(rt, "cancelAt") // the caller leaves during this attempt (0: never)
		hardAt := rapid.IntRange(0, 10).Draw(rt, "hardAt")     // this attempt fails hard (0: none)
		inBackoff := rapid.Bool().Draw(rt, "cancelInBackoff")  // leave after the attempt returns instead
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		calls, afterGone := 0, 0
		err := Do(ctx, func(context.Context) error {
			if ctx.Err() != nil {
				afterGone++
			}
			calls++
			if calls == cancelAt {
				cancel()
				if !inBackoff {
					return context.Canceled
				}
			}
			switch {
			case calls == hardAt:
				return &StatusError{Code: 400}
			case calls <= failures:
				return &StatusError{Code: 503}
			}
			return nil
		}, WithMaxAttempts(maxAttempts), WithBackOff(&backoff.ZeroBackOff{}), WithTracerProvider(trace.NewNoopTracerProvider()))

		if afterGone != 0 {
			rt.Fatalf("%d attempts dispatched after the caller left", afterGone)
		}
		var ce *CancelError
		var ex *ExhaustedError
		var se *StatusError
		switch {
		case errors.As(err, &ce):
			if ce.Attempts != calls || calls != cancelAt {
				rt.Fatalf("cancel error %+v after %d calls, cancel at %d", ce, calls, cancelAt)
			}
			if !errors.Is(err, context.Canceled) {
				rt.Fatalf("%v does not unwrap to context.Canceled", err)
			}
		case errors.As(err, &ex):
			if ex.Attempts != maxAttempts || calls != maxAttempts || calls > failures {
				rt.Fatalf("exhausted %+v after %d calls (max %d, failures %d)", ex, calls, maxAttempts, failures)
			}
		case errors.As(err, &se):
			if se.Code != 400 || calls != hardAt {
				rt.Fatalf("status error %v after %d calls (hard at %d)", se, calls, hardAt)
			}
		case err == nil:
			if calls != failures+1 || calls > maxAttempts {
				rt.Fatalf("success after %d calls (failures %d, max %d)", calls, failures, maxAttempts)
			}
		default:
			rt.Fatalf("unexpected error %v", err)
		}
	})
}

func TestGRPCOutgoingKeepsEarliestDeadline(t *testing.T) {
	dl := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(context.Background(), dl)
	defer cancel()
	md, _ := metadata.FromOutgoingContext(outgoing(ctx))
	assert.Equal(t, []string{FormatUnixSeconds(dl)}, md.Get(MetadataDeadline))

	earlier := FormatUnixSeconds(dl.Add(-time.Second))
	md, _ = metadata.FromOutgoingContext(outgoing(metadata.AppendToOutgoingContext(ctx, MetadataDeadline, earlier)))
	assert.Equal(t, []string{earlier}, md.Get(MetadataDeadline), "an earlier one stays alone")

	later := FormatUnixSeconds(dl.Add(time.Hour))
	md, _ = metadata.FromOutgoingContext(outgoing(metadata.AppendToOutgoingContext(ctx, MetadataDeadline, later)))
	assert.Equal(t, []string{later, FormatUnixSeconds(dl)}, md.Get(MetadataDeadline), "ours is added next to a later one")
	got, _, _, _ := DeadlineFromHeader(mdGetter(md), time.Now())
	assert.True(t, got.Equal(dl.Truncate(time.Microsecond)))

	actx := ContextWithAttempt(ctx, Attempt{Number: 1, IdempotencyKey: "K"})
	md, _ = metadata.FromOutgoingContext(outgoing(actx))
	assert.Equal(t, []string{"K"}, md.Get("idempotency-key"))
}
