package aware

import (
	"errors"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestParseUnixSeconds(t *testing.T) {
	for in, want := range map[string]time.Time{
		"1767225602":            time.Unix(1767225602, 0),
		" 1767225602.25 ":       time.Unix(1767225602, 250_000_000),
		"1767225602.":           time.Unix(1767225602, 0),
		".5":                    time.Unix(0, 500_000_000),
		"1767225602.123456789":  time.Unix(1767225602, 123456789),
		"1767225602.1234567899": time.Unix(1767225602, 123456789), // truncated past ns
		"0001767225602":         time.Unix(1767225602, 0),
		"1.767225602e9":         time.Unix(1767225602, 0),
	} {
		got, err := ParseUnixSeconds(in)
		require.NoError(t, err, "%q", in)
		assert.True(t, want.Equal(got), "%q: got %v want %v", in, got, want)
	}
	for _, in := range []string{"", " ", "0", "0.0", "-1", "+5", "abc", "NaN", "Inf", "-Inf", "1e300",
		"99999999999999999999", "1767225602,5", "1.2.3", ".", "0x10", "9300000000"} {
		_, err := ParseUnixSeconds(in)
		assert.ErrorIs(t, err, ErrBadDeadline, "%q", in)
	}
}

func TestFormatUnixSeconds(t *testing.T) {
	assert.Equal(t, "1767225602.250000", FormatUnixSeconds(time.Unix(1767225602, 250_000_999)))
	assert.Equal(t, "1767225602.000001", FormatUnixSeconds(time.Unix(1767225602, 1000)))
	assert.Equal(t, "0.000001", FormatUnixSeconds(time.Unix(-5, 0)))
}

func TestParseGRPCTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"250m":      250 * time.Millisecond,
		"5S":        5 * time.Second,
		"1M":        time.Minute,
		"2H":        2 * time.Hour,
		"100u":      100 * time.Microsecond,
		"7n":        7,
		"0S":        0,
		"99999999n": 99999999,
		"00000001S": time.Second,
		"99999999H": math.MaxInt64, // 11,415 years: capped
	} {
		got, err := ParseGRPCTimeout(in)
		require.NoError(t, err, "%q", in)
		assert.Equal(t, want, got, "%q", in)
	}
	for _, in := range []string{"", "S", "5", "5s", "5h", "5 S", " 5S", "-5S", "+5S", "123456789S", "1.5S", "5SS", "5ms", "5x", "٣S"} {
		_, err := ParseGRPCTimeout(in)
		assert.ErrorIs(t, err, ErrBadDeadline, "%q", in)
	}
}

func TestFormatGRPCTimeout(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                         "0n",
		-time.Second:              "0n",
		time.Nanosecond:           "1n",
		250 * time.Millisecond:    "250000u",
		5 * time.Second:           "5000000u",
		99999999:                  "99999999n",
		100000000:                 "100000u",
		100000001:                 "100001u", // rounded up
		time.Hour * 24 * 365 * 50: "26280000M",
		math.MaxInt64:             "2562048H",
	} {
		assert.Equal(t, want, FormatGRPCTimeout(d), "%v", d)
	}
}

func TestParseEnvoyTimeoutMs(t *testing.T) {
	d, ok, err := ParseEnvoyTimeoutMs(" 15000 ")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, 15*time.Second, d)
	_, ok, err = ParseEnvoyTimeoutMs("0")
	require.NoError(t, err)
	assert.False(t, ok, "0 disables the timeout in Envoy")
	for _, in := range []string{"", "-1", "1.5", "15s", "9999999999999"} {
		_, _, err := ParseEnvoyTimeoutMs(in)
		assert.ErrorIs(t, err, ErrBadDeadline, "%q", in)
	}
}

func TestDeadlineFromHeaderEarliestWins(t *testing.T) {
	now := time.Unix(1767225600, 0)
	h := http.Header{}
	_, _, ok, errs := DeadlineFromHeader(h, now)
	assert.False(t, ok)
	assert.NoError(t, errs)

	h.Set("X-Deadline", "1767225610")
	h.Set("grpc-timeout", "5S")
	h.Set("x-envoy-expected-rq-timeout-ms", "7000")
	dl, src, ok, _ := DeadlineFromHeader(h, now)
	require.True(t, ok)
	assert.Equal(t, SourceGRPC, src)
	assert.True(t, dl.Equal(now.Add(5*time.Second)))

	h.Set("x-envoy-expected-rq-timeout-ms", "3000")
	dl, src, _, _ = DeadlineFromHeader(h, now)
	assert.Equal(t, SourceEnvoy, src)
	assert.True(t, dl.Equal(now.Add(3*time.Second)))

	// Several values, a list, and junk: the earliest valid one, the junk reported.
	h = http.Header{}
	h.Add("X-Deadline", "garbage, 1767225609.5")
	h.Add("X-Deadline", "1767225601")
	h.Add("Grpc-Timeout", "5 S")
	dl, src, ok, errs = DeadlineFromHeader(h, now)
	require.True(t, ok)
	assert.Equal(t, SourceXDeadline, src)
	assert.True(t, dl.Equal(time.Unix(1767225601, 0)))
	assert.ErrorIs(t, errs, ErrBadDeadline)
	assert.Equal(t, 2, len(errs.(interface{ Unwrap() []error }).Unwrap()))

	// Only junk: no deadline.
	h = http.Header{"X-Deadline": {"soon"}}
	_, _, ok, errs = DeadlineFromHeader(h, now)
	assert.False(t, ok)
	assert.Error(t, errs)

	// A huge relative timeout is capped rather than overflowing into the past.
	h = http.Header{"Grpc-Timeout": {"99999999H"}}
	dl, _, ok, _ = DeadlineFromHeader(h, now)
	require.True(t, ok)
	assert.True(t, dl.After(now))
}

// Properties: what FormatGRPCTimeout writes parses back to at least the duration, and less than
// one unit more; what FormatUnixSeconds writes parses back to the time truncated to µs.
func TestDeadlineRoundTripProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := time.Duration(rapid.Int64Range(1, math.MaxInt64/2).Draw(t, "d"))
		s := FormatGRPCTimeout(d)
		got, err := ParseGRPCTimeout(s)
		if err != nil {
			t.Fatalf("%v -> %q: %v", d, s, err)
		}
		if got < d {
			t.Fatalf("%v -> %q -> %v: the receiver got less time", d, s, got)
		}
		if len(s) > 9 {
			t.Fatalf("%q longer than 8 digits and a unit", s)
		}
	})
	rapid.Check(t, func(t *rapid.T) {
		ns := rapid.Int64Range(1_000, int64(maxUnixSeconds)*1e9-1).Draw(t, "ns")
		tm := time.Unix(0, ns)
		got, err := ParseUnixSeconds(FormatUnixSeconds(tm))
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(tm.Truncate(time.Microsecond)) {
			t.Fatalf("%v -> %q -> %v", tm, FormatUnixSeconds(tm), got)
		}
	})
}

// FuzzDeadlineFromHeader: any header values: no panic, a deadline only from a value that
// parses, never before the earliest relative one could give, errors always ErrBadDeadline.
func FuzzDeadlineFromHeader(f *testing.F) {
	for _, s := range [][3]string{
		{"1767225602.25", "250m", "15000"}, {"", "5S", ""}, {"-1", "99999999H", "0"},
		{"1e9", "0n", "x"}, {"NaN, 1", "5S,6S", " 7 "}, {"\x00", "٣S", "9999999999999"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	now := time.Unix(1767225600, 0)
	f.Fuzz(func(t *testing.T, xd, gt, env string) {
		h := http.Header{}
		if xd != "" {
			h.Set(HeaderDeadline, xd)
		}
		if gt != "" {
			h.Set(HeaderGRPCTimeout, gt)
		}
		if env != "" {
			h.Set(HeaderEnvoyTimeout, env)
		}
		dl, src, ok, errs := DeadlineFromHeader(h, now)
		if errs != nil && !errors.Is(errs, ErrBadDeadline) {
			t.Fatalf("error not ErrBadDeadline: %v", errs)
		}
		if !ok {
			if src != "" || !dl.IsZero() {
				t.Fatalf("no deadline but %v from %q", dl, src)
			}
			return
		}
		switch src {
		case SourceGRPC, SourceEnvoy:
			if dl.Before(now) {
				t.Fatalf("relative deadline %v before arrival", dl)
			}
		case SourceXDeadline:
			if !dl.After(time.Unix(0, 0)) {
				t.Fatalf("absolute deadline %v not after 1970", dl)
			}
		default:
			t.Fatalf("source %q", src)
		}
		if dl.UnixNano() < 0 || dl.After(time.Unix(maxUnixSeconds, 0)) {
			t.Fatalf("deadline %v out of range", dl)
		}
	})
}
