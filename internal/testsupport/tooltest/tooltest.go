// Package tooltest runs the command-line checkers some tests call (promtool, amtool): the tool
// is found with e2e.RequireTool (the test is skipped when it is not installed, and fails under
// CI=true), must succeed, and its output is returned for the test to read.
package tooltest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
)

// Run runs the tool name with args and returns its combined output; the test fails, with the
// output, when the tool does not exit 0.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	bin := e2e.RequireTool(t, name)
	out, err := exec.Command(bin, args...).CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return string(out)
}
