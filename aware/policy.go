package aware

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	backoff "github.com/cenkalti/backoff/v5"
)

var errNilResponse = errors.New("aware: CheckResponse got neither a response nor an error")

// DefaultMaxRetryAfter is the longest wait a Retry-After header can ask of [CheckResponse]
// (HTTPPolicy without MaxRetryAfter): 30 s, go-retryablehttp's default longest wait.
const DefaultMaxRetryAfter = 30 * time.Second

// HTTPPolicy turns an HTTP attempt's outcome, the *http.Response and error of client.Do, into
// the result of a [Retry] attempt, as go-retryablehttp's CheckRetry does for its client:
//
//   - a transport error is returned as is: retried, unless the caller's context ended (then
//     the loop stops with a [*CancelError]);
//   - a retryable status (RetryableStatus, default [RetryableHTTPStatus]: 408, 425, 429 and
//     every 5xx but 501, the classification of orphanwatch's processor, DESIGN.md "Run
//     outcomes") becomes a [*StatusError]: the body is drained (up to 4 KiB, so that the
//     connection is reused) and closed, and a Retry-After header, in either form of RFC 9110
//     §10.2.3 (delay-seconds, or an HTTP-date, measured against the local clock), sets the wait
//     before the next attempt, capped at MaxRetryAfter;
//   - any other response (2xx, 3xx, a 4xx that retrying cannot fix, 501) is returned with a nil
//     error, as net/http does: the caller reads its status, and owns its body.
//
// The number of attempts is bounded by the loop ([WithMaxAttempts], default
// [DefaultMaxAttempts]), not by the policy.
type HTTPPolicy struct {
	// MaxRetryAfter caps the wait a Retry-After header asks for: a longer one waits
	// MaxRetryAfter (0: [DefaultMaxRetryAfter]; negative: Retry-After is ignored and the
	// loop's backoff decides every wait).
	MaxRetryAfter time.Duration
	// RetryableStatus reports whether a status code is worth another attempt (nil:
	// [RetryableHTTPStatus]).
	RetryableStatus func(code int) bool

	now func() time.Time
}

// CheckResponse is [HTTPPolicy.Check] with the defaults: retryable statuses per
// [RetryableHTTPStatus], Retry-After honoured up to [DefaultMaxRetryAfter].
//
//	resp, err := aware.Retry(ctx, func(ctx context.Context) (*http.Response, error) {
//		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
//		if err != nil {
//			return nil, backoff.Permanent(err)
//		}
//		return aware.CheckResponse(client.Do(req))
//	})
func CheckResponse(resp *http.Response, err error) (*http.Response, error) {
	return HTTPPolicy{}.Check(resp, err)
}

// Check decides on one attempt's outcome; see [HTTPPolicy].
func (p HTTPPolicy) Check(resp *http.Response, err error) (*http.Response, error) {
	if err != nil {
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		return nil, err
	}
	if resp == nil {
		return nil, backoff.Permanent(errNilResponse)
	}
	retryable := p.RetryableStatus
	if retryable == nil {
		retryable = RetryableHTTPStatus
	}
	if !retryable(resp.StatusCode) {
		return resp, nil
	}
	serr := &StatusError{Code: resp.StatusCode}
	if p.MaxRetryAfter >= 0 {
		now := time.Now
		if p.now != nil {
			now = p.now
		}
		if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), now()); ok {
			limit := p.MaxRetryAfter
			if limit == 0 {
				limit = DefaultMaxRetryAfter
			}
			serr.RetryAfter, serr.HasRetryAfter = min(d, limit), true
		}
	}
	if resp.Body != nil {
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		_ = resp.Body.Close()
	}
	return nil, serr
}

// ParseRetryAfter reads a Retry-After value (RFC 9110 §10.2.3): delay-seconds (a non-negative
// integer) or an HTTP-date (the three formats http.ParseTime accepts), which is turned into a
// wait from now (0 when it has passed). ok is false for an empty or malformed value.
func ParseRetryAfter(v string, now time.Time) (wait time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			if len(v) > 12 && isAllDigits(v) { // absurdly large: as long as time allows
				return time.Duration(1<<63 - 1), true
			}
			return 0, false
		}
		if n > uint64((1<<63-1)/int64(time.Second)) {
			return time.Duration(1<<63 - 1), true
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

func isAllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
