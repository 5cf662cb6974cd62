package deadlinefmt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParse: every format of a deadline attribute, relative ones from the span's start; the
// wire formats' own cases are in testdata/cases.json (cases_test.go).
func TestParse(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for _, c := range []struct {
		f    Format
		v    string
		want int64
		bad  bool
	}{
		{FormatUnixSeconds, "1767225602", start + 2e9, false},
		{FormatUnixSeconds, "1767225602.5", start + 2.5e9, false},
		{FormatUnixMilliseconds, "1767225602500", start + 2.5e9, false},
		{FormatRFC3339, "2026-01-01T00:00:02.5Z", start + 2.5e9, false},
		{FormatGRPCTimeout, "250m", start + 250e6, false},
		{FormatGRPCTimeout, "3S", start + 3e9, false},
		{FormatGRPCTimeout, "1H", start + int64(time.Hour), false},
		{FormatGRPCTimeout, "100u", start + 100e3, false},
		{FormatMilliseconds, "1500", start + 1.5e9, false},
		{FormatSeconds, "0.25", start + 250e6, false},
		{FormatGRPCTimeout, "250x", 0, true},
		{FormatGRPCTimeout, "123456789m", 0, true}, // more than 8 digits
		{FormatUnixSeconds, "soon", 0, true},
		{FormatUnixSeconds, "-5", 0, true},
		{FormatUnixSeconds, "1e300", 0, true},
		{FormatRFC3339, "yesterday", 0, true},
		{FormatMilliseconds, "NaN", 0, true},
		{FormatMilliseconds, "0", 0, false}, // Envoy: a route timeout of 0 disables the timeout
		{FormatMilliseconds, "2.5", start + 2.5e6, false},
		{FormatGRPCTimeout, "+5S", 0, true},            // the spec allows digits only
		{FormatGRPCTimeout, " 5S", start + 5e9, false}, // surrounding spaces are trimmed
	} {
		got, err := Parse(c.f, c.v, start)
		if c.bad {
			assert.Error(t, err, "%s %q", c.f, c.v)
			continue
		}
		require.NoError(t, err, "%s %q", c.f, c.v)
		assert.Equal(t, c.want, got, "%s %q", c.f, c.v)
	}
	assert.Error(t, Format("unix_minutes").Check())
	assert.NoError(t, FormatGRPCTimeout.Check())
}
