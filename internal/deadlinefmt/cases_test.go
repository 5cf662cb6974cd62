package deadlinefmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"testing"
)

// The table of cases, testdata/cases.json, is the one aware/deadline tests its readers on
// (aware/deadline/testdata/cases.json, the same bytes): TestCasesSameAsAware fails when they
// differ. A case has the format (unix_seconds, grpc_timeout, envoy_ms), the value, and either
// ns (the deadline in unix nanoseconds for unix_seconds, the duration for the others), bad (an
// error wrapping ErrBad) or none (envoy_ms "0": no deadline).
type tableCase struct {
	Format string `json:"format"`
	Value  string `json:"value"`
	NS     int64  `json:"ns"`
	Bad    bool   `json:"bad"`
	None   bool   `json:"none"`
	Note   string `json:"note"`
}

const casesFile = "testdata/cases.json"

// theirCases is the same table on the other side (path from this package's folder).
const theirCases = "../../aware/deadline/testdata/cases.json"

func readCases(t *testing.T) []tableCase {
	t.Helper()
	b, err := os.ReadFile(casesFile)
	if err != nil {
		t.Fatal(err)
	}
	var cs []tableCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestCases(t *testing.T) {
	perFormat := map[string]int{}
	for _, c := range readCases(t) {
		perFormat[c.Format]++
		var got int64
		var none bool
		var err error
		switch c.Format {
		case "unix_seconds":
			at, e := ParseUnixSeconds(c.Value)
			got, err = at.UnixNano(), e
		case "grpc_timeout":
			d, e := ParseGRPCTimeout(c.Value)
			got, err = int64(d), e
		case "envoy_ms":
			d, ok, e := ParseEnvoyTimeoutMs(c.Value)
			got, none, err = int64(d), !ok && e == nil, e
		default:
			t.Errorf("%q: unknown format %q", c.Value, c.Format)
			continue
		}
		switch {
		case c.Bad:
			if !errors.Is(err, ErrBad) {
				t.Errorf("%s %q: got %d, %v; want an error wrapping ErrBad", c.Format, c.Value, got, err)
			}
		case err != nil:
			t.Errorf("%s %q: %v", c.Format, c.Value, err)
		case none != c.None || (!c.None && got != c.NS):
			t.Errorf("%s %q: got %d (no deadline: %v); want %d (no deadline: %v)", c.Format, c.Value, got, none, c.NS, c.None)
		}
	}
	for _, f := range []string{"unix_seconds", "grpc_timeout", "envoy_ms"} {
		if perFormat[f] < 5 {
			t.Errorf("%s: %d cases in %s", f, perFormat[f], casesFile)
		}
	}
}

// The readers here and in aware/deadline must stay alike: both test on the same table.
func TestCasesSameAsAware(t *testing.T) {
	their, err := os.ReadFile(theirCases)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("aware/ is not next to this module (not a clone of the repository)")
	}
	if err != nil {
		t.Fatal(err)
	}
	ours, err := os.ReadFile(casesFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ours, their) {
		t.Errorf("%s and %s differ: the deadline formats must stay alike on both sides (change both)", casesFile, theirCases)
	}
}
