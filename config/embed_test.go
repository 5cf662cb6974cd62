package config

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// envDefault is the collector's `${env:NAME:-default}` form.
var envDefault = regexp.MustCompile(`\$\{env:([A-Z_]+):-([^}]*)\}`)

// TestDefaultConfigBindsLocalhost walks the embedded collector config: every listener
// (`endpoint`, and the telemetry reader's `host`) has its host from LISTEN_HOST, and is on
// localhost when the environment sets nothing.
func TestDefaultConfigBindsLocalhost(t *testing.T) {
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(Collector), &m))
	found := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if k == "endpoint" || k == "host" {
					s, _ := c.(string)
					found++
					assert.True(t, strings.HasPrefix(s, "${env:LISTEN_HOST:-localhost}"), "%s.%s = %q: its host is not LISTEN_HOST's", path, k, s)
					s = envDefault.ReplaceAllString(s, "$2")
					assert.True(t, strings.HasPrefix(s, "localhost") || strings.HasPrefix(s, "127.0.0.1"), "%s.%s = %q binds beyond localhost", path, k, s)
				}
				walk(path+"."+k, c)
			}
		case []any:
			for _, c := range x {
				walk(path+"[]", c)
			}
		}
	}
	walk("", m)
	assert.GreaterOrEqual(t, found, 6, "otlp grpc+http, zipkin, orphanmetrics, health_check, telemetry")
}
