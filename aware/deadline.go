package aware

import (
	"errors"
	"strings"
	"time"

	"github.com/orphanwatch/orphanwatch/aware/deadline"
)

// Header and metadata names this package reads and writes.
const (
	// HeaderDeadline is the deadline as data: an absolute time in unix seconds, with an optional
	// decimal fraction ("1767225602.250000"). It is the header of the article's call_subagent.
	// gRPC metadata keys are lower case: the interceptors use "x-deadline".
	HeaderDeadline = "X-Deadline"
	// HeaderGRPCTimeout is gRPC's own relative timeout, "grpc-timeout", in the format of the gRPC
	// over HTTP/2 protocol spec (PROTOCOL-HTTP2.md): 1 to 8 ASCII digits and a unit, H (hours),
	// M (minutes), S (seconds), m (milliseconds), u (microseconds) or n (nanoseconds).
	HeaderGRPCTimeout = "Grpc-Timeout"
	// HeaderEnvoyTimeout is Envoy's x-envoy-expected-rq-timeout-ms: the time in milliseconds in
	// which the router expects the request to complete (Envoy docs, "HTTP header manipulation" /
	// router filter), set on requests Envoy forwards upstream. A non-negative integer.
	HeaderEnvoyTimeout = "X-Envoy-Expected-Rq-Timeout-Ms"
	// HeaderIdempotencyKey carries the key shared by every attempt of one logical operation
	// (the IETF httpapi "Idempotency-Key" header).
	HeaderIdempotencyKey = "Idempotency-Key"
)

// Span attribute keys written by this package. Header attributes follow the HTTP semantic
// conventions for captured request headers (http.request.header.<lower-case name>, a string
// array), which is where the orphan processor reads idempotency keys and deadlines by default.
const (
	AttrResendCount    = "http.request.resend_count"
	AttrIdempotencyKey = "http.request.header.idempotency-key"
	AttrDeadline       = "http.request.header.x-deadline"
	AttrErrorType      = "error.type"
)

// ErrBadDeadline is wrapped by every parse error of this package's deadline readers.
var ErrBadDeadline = deadline.ErrBad

// maxUnixSeconds keeps a deadline inside time.Time's nanosecond range (year 2262).
const maxUnixSeconds = deadline.MaxUnixSeconds

// ParseUnixSeconds parses an X-Deadline value: unix seconds, a decimal fraction allowed (up to
// nanoseconds; further digits are truncated), surrounding spaces ignored. Zero, signed, NaN,
// infinite and out-of-range values (after 2262) are errors wrapping [ErrBadDeadline].
func ParseUnixSeconds(v string) (time.Time, error) { return deadline.ParseUnixSeconds(v) }

// FormatUnixSeconds writes t as an X-Deadline value: unix seconds with six decimals
// (microseconds, truncated), e.g. "1767225602.250000". Times before 1970 are written as
// "0.000001": a deadline that has passed.
func FormatUnixSeconds(t time.Time) string { return deadline.FormatUnixSeconds(t) }

// ParseGRPCTimeout parses a grpc-timeout value as the gRPC over HTTP/2 protocol spec defines
// it: TimeoutValue TimeoutUnit, a positive integer of at most 8 ASCII digits and one of H, M,
// S, m, u, n ("M" is minutes, "m" milliseconds). "0S" is a timeout that has already expired, as
// in grpc-go. Errors wrap [ErrBadDeadline].
func ParseGRPCTimeout(v string) (time.Duration, error) { return deadline.ParseGRPCTimeout(v) }

// FormatGRPCTimeout writes d in the grpc-timeout format: the finest unit whose value fits in 8
// digits, rounded up so that the receiver never gets more time than the sender had (as
// grpc-go's encoder does). A zero or negative d is written "0n".
func FormatGRPCTimeout(d time.Duration) string { return deadline.FormatGRPCTimeout(d) }

// ParseEnvoyTimeoutMs parses x-envoy-expected-rq-timeout-ms: a non-negative integer of
// milliseconds. ok is false for "0": in Envoy a route timeout of 0 disables the timeout. Errors
// wrap [ErrBadDeadline].
func ParseEnvoyTimeoutMs(v string) (d time.Duration, ok bool, err error) {
	return deadline.ParseEnvoyTimeoutMs(v)
}

// Deadline sources, in the order DeadlineFromHeader reads them.
const (
	SourceXDeadline = "x-deadline"
	SourceGRPC      = "grpc-timeout"
	SourceEnvoy     = "x-envoy-expected-rq-timeout-ms"
)

// HeaderGetter is what DeadlineFromHeader needs of a header map: http.Header fits, and so does a
// small adapter over gRPC metadata.
type HeaderGetter interface {
	Values(key string) []string
}

// DeadlineFromHeader reads the deadline a request carries as data: X-Deadline (absolute unix
// seconds), grpc-timeout and x-envoy-expected-rq-timeout-ms (relative, measured from received,
// the time the request arrived). Every value of every header is read (a header repeated, or a
// comma-separated list); the earliest deadline wins. Values that do not parse are skipped and
// returned, joined, in errs (so a caller may log them); they never make a deadline. ok is false
// when no header gave one.
func DeadlineFromHeader(h HeaderGetter, received time.Time) (deadline time.Time, source string, ok bool, errs error) {
	var bad []error
	take := func(t time.Time, src string) {
		if !ok || t.Before(deadline) {
			deadline, source, ok = t, src, true
		}
	}
	for _, v := range splitValues(h.Values(HeaderDeadline)) {
		t, err := ParseUnixSeconds(v)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		take(t, SourceXDeadline)
	}
	for _, v := range splitValues(h.Values(HeaderGRPCTimeout)) {
		d, err := ParseGRPCTimeout(v)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		take(addCapped(received, d), SourceGRPC)
	}
	for _, v := range splitValues(h.Values(HeaderEnvoyTimeout)) {
		d, has, err := ParseEnvoyTimeoutMs(v)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		if has {
			take(addCapped(received, d), SourceEnvoy)
		}
	}
	return deadline, source, ok, errors.Join(bad...)
}

// splitValues splits comma-separated header values (RFC 9110 list syntax) and trims them. At
// most 16 values are read per header: a deadline is one value, a longer list is an attack.
func splitValues(vs []string) []string {
	var out []string
	for _, v := range vs {
		for p := range strings.SplitSeq(v, ",") {
			if len(out) == 16 {
				return out
			}
			out = append(out, strings.TrimSpace(p))
		}
	}
	return out
}

// addCapped adds d to t without overflowing time.Time's nanosecond range.
func addCapped(t time.Time, d time.Duration) time.Time {
	limit := time.Unix(maxUnixSeconds, 0)
	if d >= limit.Sub(t) {
		return limit
	}
	return t.Add(d)
}
