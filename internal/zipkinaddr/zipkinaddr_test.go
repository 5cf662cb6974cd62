package zipkinaddr

import "testing"

func TestCanonicalIPv4(t *testing.T) {
	for in, want := range map[string]string{
		"52.0.0.04":   "52.0.0.4",
		"010.000.0.1": "10.0.0.1",
		"10.0.0.1":    "10.0.0.1",
		"::1":         "::1",
		"not.an.ip":   "not.an.ip",
	} {
		if got := CanonicalIPv4(in); got != want {
			t.Errorf("CanonicalIPv4(%q) = %q, want %q", in, got, want)
		}
	}
}
