package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
)

// TestResolveVersion: -ldflags' version wins, then the main module's version from the build
// info (what `go install ...@v0.2.0` and `go build` in a clone stamp), then Version; the
// leading "v" is dropped.
func TestResolveVersion(t *testing.T) {
	for _, tc := range []struct{ ldflags, module, want string }{
		{"0.2.0", "v0.1.0", "0.2.0"},
		{"v0.2.0", "", "0.2.0"},
		{"", "v0.2.0", "0.2.0"},
		{"", "v0.2.1-0.20261202075810-73105de12345+dirty", "0.2.1-0.20261202075810-73105de12345+dirty"},
		{"", "(devel)", Version},
		{"", "", Version},
	} {
		assert.Equal(t, tc.want, resolveVersion(tc.ldflags, tc.module), "ldflags %q, module %q", tc.ldflags, tc.module)
	}
}

// TestVersionFlag builds the distribution as RELEASING.md does (the version set by -ldflags)
// and as a build without any version (no VCS stamp): `--version` prints each.
func TestVersionFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the collector")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"ldflags", []string{"-ldflags", "-X main.version=v9.8.7-test"}, "9.8.7-test"},
		{"no version", []string{"-buildvcs=false"}, Version},
	} {
		bin := filepath.Join(dir, "otelcol-orphanwatch-"+strings.ReplaceAll(tc.name, " ", "-"))
		args := append([]string{"build"}, tc.flags...)
		cmd := exec.Command("go", append(args, "-o", bin, "./cmd/otelcol-orphanwatch")...)
		cmd.Dir = e2e.RepoRoot()
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go build %s:\n%s", tc.name, out)
		out, err = exec.Command(bin, "--version").CombinedOutput()
		require.NoError(t, err, "%s --version:\n%s", tc.name, out)
		assert.Equal(t, "otelcol-orphanwatch version "+tc.want+"\n", string(out), tc.name)
	}
}
