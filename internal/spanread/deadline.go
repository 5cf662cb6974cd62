package spanread

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/orphanwatch/orphanwatch/internal/deadlinefmt"
)

// DeadlineFormat names how a deadline attribute is written.
type DeadlineFormat string

// Deadline formats. Absolute ones give the deadline itself; relative ones give a timeout that is
// measured from the span's start time.
const (
	// FormatUnixSeconds is an absolute deadline in seconds since the Unix epoch, fractions
	// allowed ("1767225602.5").
	FormatUnixSeconds DeadlineFormat = "unix_seconds"
	// FormatUnixMilliseconds is an absolute deadline in milliseconds since the Unix epoch.
	FormatUnixMilliseconds DeadlineFormat = "unix_milliseconds"
	// FormatRFC3339 is an absolute deadline as an RFC 3339 timestamp.
	FormatRFC3339 DeadlineFormat = "rfc3339"
	// FormatGRPCTimeout is a relative timeout in the gRPC over HTTP/2 `grpc-timeout` form: at most
	// 8 digits and a unit H, M, S, m (ms), u (µs) or n (ns), e.g. "250m"
	// (grpc/doc/PROTOCOL-HTTP2.md, "Timeout").
	FormatGRPCTimeout DeadlineFormat = "grpc_timeout"
	// FormatMilliseconds is a relative timeout in milliseconds, as Envoy's
	// x-envoy-expected-rq-timeout-ms header.
	FormatMilliseconds DeadlineFormat = "milliseconds"
	// FormatSeconds is a relative timeout in seconds, fractions allowed.
	FormatSeconds DeadlineFormat = "seconds"
)

// Check reports whether f is a known format. (Not named Validate: the collector's confmap would
// then report a bad format a second time, under its own path.)
func (f DeadlineFormat) Check() error {
	switch f {
	case FormatUnixSeconds, FormatUnixMilliseconds, FormatRFC3339, FormatGRPCTimeout, FormatMilliseconds, FormatSeconds:
		return nil
	}
	return fmt.Errorf("unknown deadline format %q (want one of unix_seconds, unix_milliseconds, rfc3339, grpc_timeout, milliseconds, seconds)", string(f))
}

var errBadDeadline = errors.New("malformed deadline")

// maxUnixSeconds is the largest unix time representable as int64 nanoseconds (year 2262).
const maxUnixSeconds = math.MaxInt64 / 1_000_000_000

// ParseDeadline converts a deadline value to absolute unix nanoseconds. start is the span's start
// (unix ns) for relative formats. It returns an error for malformed or out-of-range values, and
// 0 with no error for a value that sets no deadline (Envoy's timeout of 0 disables the timeout).
// unix_seconds, grpc_timeout and Envoy's integer milliseconds are read by internal/deadlinefmt,
// whose readers are kept alike with aware/deadline's, which the aware package uses on the wire
// (both test on the same table of cases).
func ParseDeadline(f DeadlineFormat, v string, start int64) (int64, error) {
	v = strings.TrimSpace(v)
	switch f {
	case FormatUnixSeconds:
		t, err := deadlinefmt.ParseUnixSeconds(v)
		if err != nil {
			return 0, errBadDeadline
		}
		return t.UnixNano(), nil
	case FormatUnixMilliseconds:
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x > 0) || x/1e3 >= maxUnixSeconds {
			return 0, errBadDeadline
		}
		return int64(x * 1e6), nil
	case FormatRFC3339:
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil || t.Unix() <= 0 || t.Unix() >= maxUnixSeconds {
			return 0, errBadDeadline
		}
		return t.UnixNano(), nil
	case FormatGRPCTimeout:
		d, err := deadlinefmt.ParseGRPCTimeout(v)
		if err != nil {
			return 0, errBadDeadline
		}
		return addRelative(start, float64(d))
	case FormatMilliseconds:
		if d, ok, err := deadlinefmt.ParseEnvoyTimeoutMs(v); err == nil {
			if !ok {
				return 0, nil // 0: the route has no timeout
			}
			return addRelative(start, float64(d))
		}
		x, err := strconv.ParseFloat(v, 64) // a fraction of a millisecond
		if err != nil || !(x > 0) {
			return 0, errBadDeadline
		}
		return addRelative(start, x*1e6)
	case FormatSeconds:
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x >= 0) {
			return 0, errBadDeadline
		}
		return addRelative(start, x*1e9)
	}
	return 0, errBadDeadline
}

func addRelative(start int64, ns float64) (int64, error) {
	if start <= 0 || ns > float64(math.MaxInt64-start) {
		return 0, errBadDeadline
	}
	return start + int64(ns), nil
}
