// Package deadlinefmt reads the deadline-as-data formats for the collector's components (the
// span reader, internal/spanread, and the `attributes.deadlines` setting): Parse reads a
// deadline attribute in any of the formats a deadline attribute may be configured with
// (Format). Three of them are the wire formats: the X-Deadline header's absolute unix seconds,
// gRPC's grpc-timeout (gRPC over HTTP/2, PROTOCOL-HTTP2.md "Requests": TimeoutValue
// TimeoutUnit) and Envoy's x-envoy-expected-rq-timeout-ms.
//
// The aware library (aware/deadline, a module of its own) writes and reads the same three
// formats on the wire. The collector's module does not import it (a distribution must not
// fetch the application library), so the readers live in both places and must stay alike: a
// value means the same on the wire and in a trace. Both packages test their readers on the same
// table of cases, testdata/cases.json, and this package's test fails when the two files
// differ: change a format here, in aware/deadline and in both tables at once.
package deadlinefmt

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrBad is wrapped by every parse error of this package.
var ErrBad = errors.New("bad deadline value")

func bad(what, v string) error {
	if len(v) > 64 {
		v = v[:64] + "..."
	}
	return fmt.Errorf("%w: %s %q", ErrBad, what, v)
}

// MaxUnixSeconds keeps a deadline inside time.Time's nanosecond range (year 2262).
const MaxUnixSeconds = math.MaxInt64/int64(time.Second) - 1

// ParseUnixSeconds parses an X-Deadline value: unix seconds, a decimal fraction allowed (up to
// nanoseconds; further digits are truncated), surrounding spaces ignored. A plain decimal is
// read exactly; other float forms ("1.7e9") are read through float64. Zero, signed, NaN,
// infinite and out-of-range values (after 2262) are errors wrapping [ErrBad].
func ParseUnixSeconds(v string) (time.Time, error) {
	s := strings.TrimSpace(v)
	if s == "" {
		return time.Time{}, bad("unix seconds", v)
	}
	intPart, frac, hasDot := strings.Cut(s, ".")
	if isDigits(intPart) && (!hasDot || frac == "" || isDigits(frac)) && (intPart != "" || frac != "") {
		if len(strings.TrimLeft(intPart, "0")) > 11 {
			return time.Time{}, bad("unix seconds out of range", v)
		}
		sec := int64(0)
		if intPart != "" {
			sec, _ = strconv.ParseInt(intPart, 10, 64)
		}
		if len(frac) > 9 {
			frac = frac[:9]
		}
		ns := int64(0)
		if frac != "" {
			ns, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		}
		if sec > MaxUnixSeconds || (sec == 0 && ns == 0) {
			return time.Time{}, bad("unix seconds out of range", v)
		}
		return time.Unix(sec, ns), nil
	}
	if s[0] == '+' || s[0] == '-' {
		return time.Time{}, bad("unix seconds", v)
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || !(x > 0) || x >= float64(MaxUnixSeconds) {
		return time.Time{}, bad("unix seconds", v)
	}
	sec, f := math.Modf(x)
	return time.Unix(int64(sec), int64(f*1e9)), nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// grpcUnits are the units of grpc-timeout (gRPC PROTOCOL-HTTP2.md, "Requests": TimeoutUnit).
var grpcUnits = [...]struct {
	c byte
	d time.Duration
}{{'n', time.Nanosecond}, {'u', time.Microsecond}, {'m', time.Millisecond}, {'S', time.Second}, {'M', time.Minute}, {'H', time.Hour}}

// ParseGRPCTimeout parses a grpc-timeout value as the gRPC over HTTP/2 protocol spec defines
// it: TimeoutValue TimeoutUnit, where TimeoutValue is a positive integer of at most 8 ASCII
// digits and TimeoutUnit one of H, M, S, m, u, n (case matters: "M" is minutes, "m"
// milliseconds). "0S" is accepted as a timeout that has already expired, as grpc-go does.
// Spaces, signs and more than 8 digits are errors wrapping [ErrBad]. 99999999H is capped at
// the largest time.Duration (about 292 years).
func ParseGRPCTimeout(v string) (time.Duration, error) {
	if len(v) < 2 || len(v) > 9 || !isDigits(v[:len(v)-1]) {
		return 0, bad("grpc-timeout", v)
	}
	n, _ := strconv.ParseInt(v[:len(v)-1], 10, 64)
	for _, u := range grpcUnits {
		if u.c == v[len(v)-1] {
			if n > int64(math.MaxInt64/u.d) {
				return math.MaxInt64, nil
			}
			return time.Duration(n) * u.d, nil
		}
	}
	return 0, bad("grpc-timeout unit", v)
}

// ParseEnvoyTimeoutMs parses x-envoy-expected-rq-timeout-ms: a non-negative integer of
// milliseconds, spaces around it ignored. It returns ok=false for "0": in Envoy a route
// timeout of 0 disables the timeout, so no deadline follows from it. Anything else that is not
// an integer in range is an error wrapping [ErrBad].
func ParseEnvoyTimeoutMs(v string) (d time.Duration, ok bool, err error) {
	s := strings.TrimSpace(v)
	if s == "" || !isDigits(s) || len(strings.TrimLeft(s, "0")) > 12 {
		return 0, false, bad("x-envoy-expected-rq-timeout-ms", v)
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	if n == 0 {
		return 0, false, nil
	}
	return time.Duration(n) * time.Millisecond, true, nil
}

// Format names how a deadline attribute is written.
type Format string

// Deadline formats. Absolute ones give the deadline itself; relative ones give a timeout that is
// measured from the span's start time.
const (
	// FormatUnixSeconds is an absolute deadline in seconds since the Unix epoch, fractions
	// allowed ("1767225602.5").
	FormatUnixSeconds Format = "unix_seconds"
	// FormatUnixMilliseconds is an absolute deadline in milliseconds since the Unix epoch.
	FormatUnixMilliseconds Format = "unix_milliseconds"
	// FormatRFC3339 is an absolute deadline as an RFC 3339 timestamp.
	FormatRFC3339 Format = "rfc3339"
	// FormatGRPCTimeout is a relative timeout in the gRPC over HTTP/2 `grpc-timeout` form: at most
	// 8 digits and a unit H, M, S, m (ms), u (µs) or n (ns), e.g. "250m"
	// (grpc/doc/PROTOCOL-HTTP2.md, "Timeout").
	FormatGRPCTimeout Format = "grpc_timeout"
	// FormatMilliseconds is a relative timeout in milliseconds, as Envoy's
	// x-envoy-expected-rq-timeout-ms header.
	FormatMilliseconds Format = "milliseconds"
	// FormatSeconds is a relative timeout in seconds, fractions allowed.
	FormatSeconds Format = "seconds"
)

// Check reports whether f is a known format. (Not named Validate: the collector's confmap would
// then report a bad format a second time, under its own path.)
func (f Format) Check() error {
	switch f {
	case FormatUnixSeconds, FormatUnixMilliseconds, FormatRFC3339, FormatGRPCTimeout, FormatMilliseconds, FormatSeconds:
		return nil
	}
	return fmt.Errorf("unknown deadline format %q (want one of unix_seconds, unix_milliseconds, rfc3339, grpc_timeout, milliseconds, seconds)", string(f))
}

var errMalformed = errors.New("malformed deadline")

// maxInt64UnixSeconds is the largest unix time, in seconds, representable as int64 nanoseconds
// (year 2262); MaxUnixSeconds, one less, bounds the X-Deadline reader alike with aware's.
const maxInt64UnixSeconds = math.MaxInt64 / 1_000_000_000

// Parse converts a deadline value to absolute unix nanoseconds. start is the span's start
// (unix ns) for relative formats. It returns an error for malformed or out-of-range values, and
// 0 with no error for a value that sets no deadline (Envoy's timeout of 0 disables the timeout).
// unix_seconds, grpc_timeout and Envoy's integer milliseconds are read by ParseUnixSeconds,
// ParseGRPCTimeout and ParseEnvoyTimeoutMs, kept alike with aware/deadline's (above).
func Parse(f Format, v string, start int64) (int64, error) {
	v = strings.TrimSpace(v)
	switch f {
	case FormatUnixSeconds:
		t, err := ParseUnixSeconds(v)
		if err != nil {
			return 0, errMalformed
		}
		return t.UnixNano(), nil
	case FormatUnixMilliseconds:
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x > 0) || x/1e3 >= maxInt64UnixSeconds {
			return 0, errMalformed
		}
		return int64(x * 1e6), nil
	case FormatRFC3339:
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil || t.Unix() <= 0 || t.Unix() >= maxInt64UnixSeconds {
			return 0, errMalformed
		}
		return t.UnixNano(), nil
	case FormatGRPCTimeout:
		d, err := ParseGRPCTimeout(v)
		if err != nil {
			return 0, errMalformed
		}
		return addRelative(start, float64(d))
	case FormatMilliseconds:
		if d, ok, err := ParseEnvoyTimeoutMs(v); err == nil {
			if !ok {
				return 0, nil // 0: the route has no timeout
			}
			return addRelative(start, float64(d))
		}
		x, err := strconv.ParseFloat(v, 64) // a fraction of a millisecond
		if err != nil || !(x > 0) {
			return 0, errMalformed
		}
		return addRelative(start, x*1e6)
	case FormatSeconds:
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x >= 0) {
			return 0, errMalformed
		}
		return addRelative(start, x*1e9)
	}
	return 0, errMalformed
}

func addRelative(start int64, ns float64) (int64, error) {
	if start <= 0 || ns > float64(math.MaxInt64-start) {
		return 0, errMalformed
	}
	return start + int64(ns), nil
}
