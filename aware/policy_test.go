package aware

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	backoff "github.com/cenkalti/backoff/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRetryableHTTPStatusPerDesign(t *testing.T) {
	// DESIGN.md "Run outcomes": HTTP 408/425/429/5xx but 501 are retryable.
	for code := 100; code <= 599; code++ {
		want := code == 408 || code == 425 || code == 429 || (code >= 500 && code != 501)
		assert.Equal(t, want, RetryableHTTPStatus(code), "status %d", code)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{" 120 ", 120 * time.Second, true},
		{"Tue, 01 Dec 2026 20:00:30 GMT", 30 * time.Second, true},   // IMF-fixdate
		{"Tuesday, 01-Dec-26 20:01:00 GMT", time.Minute, true},      // obsolete RFC 850
		{"Tue Dec  1 20:00:05 2026", 5 * time.Second, true},         // obsolete asctime
		{"Tue, 01 Dec 2026 19:59:00 GMT", 0, true},                  // passed: retry now
		{"99999999999999999999999", time.Duration(1<<63 - 1), true}, // too large: forever
		{"", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"2026-12-01T20:00:30Z", 0, false},
	} {
		got, ok := ParseRetryAfter(c.in, now)
		assert.Equal(t, c.ok, ok, "%q", c.in)
		assert.Equal(t, c.want, got, "%q", c.in)
	}
}

func TestHTTPPolicyCheck(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	resp := func(code int, retryAfter string) (*http.Response, *closeCount) {
		body := &closeCount{Reader: strings.NewReader(strings.Repeat("x", 10<<10))}
		r := &http.Response{StatusCode: code, Header: http.Header{}, Body: body}
		if retryAfter != "" {
			r.Header.Set("Retry-After", retryAfter)
		}
		return r, body
	}
	p := HTTPPolicy{now: func() time.Time { return now }}

	r, body := resp(200, "")
	got, err := p.Check(r, nil)
	require.NoError(t, err)
	assert.Same(t, r, got, "a success is the caller's, body open")
	assert.Zero(t, body.closed)

	for _, code := range []int{400, 404, 501} {
		r, _ := resp(code, "")
		got, err := p.Check(r, nil)
		require.NoError(t, err, "%d is returned, as net/http does", code)
		assert.Equal(t, code, got.StatusCode)
	}

	r, body = resp(503, "")
	got, err = p.Check(r, nil)
	assert.Nil(t, got)
	var se *StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 503, se.Code)
	assert.False(t, se.HasRetryAfter)
	assert.True(t, Retryable(err))
	assert.Equal(t, 1, body.closed, "the body of a retried answer is closed")
	assert.Equal(t, 10<<10-4<<10, body.Len(), "and drained up to 4 KiB")

	r, _ = resp(429, "7")
	_, err = p.Check(r, nil)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 7*time.Second, se.RetryAfter)
	assert.True(t, se.HasRetryAfter)

	r, _ = resp(503, "Tue, 01 Dec 2026 20:00:12 GMT")
	_, err = p.Check(r, nil)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 12*time.Second, se.RetryAfter, "HTTP-date form")

	r, _ = resp(503, "3600")
	_, err = p.Check(r, nil)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, DefaultMaxRetryAfter, se.RetryAfter, "capped by default")

	capped := HTTPPolicy{MaxRetryAfter: 2 * time.Second, now: p.now}
	r, _ = resp(503, "3600")
	_, err = capped.Check(r, nil)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 2*time.Second, se.RetryAfter, "the user's cap")

	ignore := HTTPPolicy{MaxRetryAfter: -1}
	r, _ = resp(503, "3600")
	_, err = ignore.Check(r, nil)
	require.ErrorAs(t, err, &se)
	assert.False(t, se.HasRetryAfter, "negative cap: Retry-After ignored")

	only404 := HTTPPolicy{RetryableStatus: func(code int) bool { return code == 404 }}
	r, _ = resp(503, "")
	got, err = only404.Check(r, nil)
	require.NoError(t, err)
	assert.Equal(t, 503, got.StatusCode)

	_, err = p.Check(nil, nil)
	require.Error(t, err)
	assert.False(t, Retryable(err), "a nil response is a bug, not worth retrying")

	boom := errors.New("connection reset")
	got, err = p.Check(nil, boom)
	assert.Nil(t, got)
	assert.Same(t, boom, err)
}

type closeCount struct {
	*strings.Reader
	closed int
}

func (c *closeCount) Close() error { c.closed++; return nil }

// The loop honours the server's Retry-After (in seconds here; over a constant 10 s backoff it
// would take 20 s), and the cap the user set bounds it.
func TestRetryHonoursRetryAfterOnLoopback(t *testing.T) {
	srv, _ := hitServer(t, func(w http.ResponseWriter, _ *http.Request, hit int32) {
		switch hit {
		case 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.Header().Set("Retry-After", "3600") // capped to 50 ms below
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			_, _ = io.WriteString(w, "ok")
		}
	})
	policy := HTTPPolicy{MaxRetryAfter: 50 * time.Millisecond}
	var waits []time.Duration
	start := time.Now()
	resp, err := Retry(context.Background(), func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		return policy.Check(http.DefaultClient.Do(req))
	}, WithBackOff(backoff.NewConstantBackOff(10*time.Second)),
		WithOnRetry(func(_ int, _ error, wait time.Duration) { waits = append(waits, wait) }))
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "ok", string(b))
	assert.Equal(t, []time.Duration{0, 50 * time.Millisecond}, waits)
	assert.Less(t, time.Since(start), 5*time.Second)
}

// The default cap of 5 attempts, then an ExhaustedError wrapping the last status.
func TestRetryDefaultCapIsFive(t *testing.T) {
	srv, hits := hitServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
		w.WriteHeader(http.StatusBadGateway)
	})
	_, err := Retry(context.Background(), func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		return CheckResponse(http.DefaultClient.Do(req))
	}, WithBackOff(backoff.NewConstantBackOff(time.Millisecond)))
	var ex *ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, DefaultMaxAttempts, ex.Attempts)
	assert.Equal(t, int32(5), hits.Load())
	var se *StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 502, se.Code)
}
