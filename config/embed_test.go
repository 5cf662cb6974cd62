package config

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/listenhost"
)

// TestDefaultConfigBindsLocalhost walks the embedded collector config: every listener
// (`endpoint`, and the telemetry reader's `host`) has its host from LISTEN_HOST, and is on
// localhost when the environment sets nothing.
func TestDefaultConfigBindsLocalhost(t *testing.T) {
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(Collector), &m))
	found := listenhost.Check(t, "", m, nil)
	assert.GreaterOrEqual(t, found, 6, "otlp grpc+http, zipkin, orphanmetrics, health_check, telemetry")
}

// pricesOf returns the price table of a config: the prices setting of whichever component has
// it (the orphan processor, or an orphanmetrics exporter or connector deciding verdicts), and
// fails if none has it or two have different ones.
func pricesOf(t *testing.T, src []byte) map[string]any {
	t.Helper()
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(src, &cfg))
	var found map[string]any
	for _, kind := range []string{"processors", "connectors", "exporters"} {
		comps, _ := cfg[kind].(map[string]any)
		for name, c := range comps {
			m, _ := c.(map[string]any)
			p, ok := m["prices"].(map[string]any)
			if !ok {
				continue
			}
			if found != nil {
				require.Equal(t, found, p, "%s::%s::prices differs from another component's", kind, name)
			}
			found = p
		}
	}
	require.NotNil(t, found, "no component has prices")
	return found
}

// TestPushConfigsCarryTheDefaultPrices: config/push/* price every model the default config
// prices, at the same prices (issue 29: a push config that priced only gpt-4o billed
// gpt-4o-mini at gpt-4o's rate by prefix; one without prices had no cost at all).
func TestPushConfigsCarryTheDefaultPrices(t *testing.T) {
	want := pricesOf(t, []byte(Collector))
	require.Contains(t, want, "gpt-4o-mini")
	for _, f := range []string{"push/otlp_http.yaml", "push/prometheusremotewrite.yaml"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.Equal(t, want, pricesOf(t, b), f)
	}
}
