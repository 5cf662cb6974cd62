// Package listenhost checks the listeners of a collector config the way README "Security"
// promises them: every `endpoint` and `host` setting takes its host from LISTEN_HOST, and is on
// localhost when the environment sets nothing.
package listenhost

import (
	"regexp"
	"strings"
	"testing"
)

// envDefault is the collector's `${env:NAME:-default}` form.
var envDefault = regexp.MustCompile(`\$\{env:([A-Z_]+):-([^}]*)\}`)

// Check walks cfg, a collector config parsed from YAML, and reports as an error of t each
// listener whose host is not LISTEN_HOST's or whose default binds beyond localhost, named by
// name and its path. A listener is an `endpoint` or `host` setting whose parent's path
// (".receivers.otlp.protocols.grpc") keep accepts; keep nil accepts every one. Check returns
// the number of listeners it checked.
func Check(t testing.TB, name string, cfg map[string]any, keep func(path string) bool) int {
	t.Helper()
	n := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if (k == "endpoint" || k == "host") && (keep == nil || keep(path)) {
					n++
					s, _ := c.(string)
					if !strings.HasPrefix(s, "${env:LISTEN_HOST:-localhost}") {
						t.Errorf("%s%s.%s = %q: its host is not LISTEN_HOST's", name, path, k, s)
					}
					s = envDefault.ReplaceAllString(s, "$2")
					if !strings.HasPrefix(s, "localhost") && !strings.HasPrefix(s, "127.0.0.1") {
						t.Errorf("%s%s.%s = %q binds beyond localhost", name, path, k, s)
					}
				}
				walk(path+"."+k, c)
			}
		case []any:
			for _, c := range x {
				walk(path+"[]", c)
			}
		}
	}
	walk("", cfg)
	return n
}
