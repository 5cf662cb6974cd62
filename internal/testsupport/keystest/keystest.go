// Package keystest builds the orphan_keys extension for the tests of the components that name it
// in `keys` (the orphan processor, the orphanmetrics exporter). It makes the extension through
// its factory from a settings map, as the collector makes it from YAML, and hands it back as the
// keyshare.Keys the components find on the host: their tests import neither the extension's
// package nor its Config type.
package keystest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/orphanwatch/orphanwatch/extension/orphankeysextension"
	"github.com/orphanwatch/orphanwatch/internal/keyshare"
)

// Secret is the extension's secret when settings give none (16 bytes, enough distinct ones).
const Secret = "0123456789abcdef"

// New creates (does not start) an orphan_keys extension from settings, the extension's YAML
// fields (`brokers`, `wait`, `topic: {check_timeout: ...}`, ...) over its defaults; `secret`
// defaults to Secret. The configuration must pass the extension's Validate.
func New(t testing.TB, settings map[string]any) keyshare.Keys {
	t.Helper()
	f := orphankeysextension.NewFactory()
	cfg := f.CreateDefaultConfig()
	all := map[string]any{"secret": Secret}
	for k, v := range settings {
		all[k] = v
	}
	require.NoError(t, confmap.NewFromStringMap(all).Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	k, ok := ext.(keyshare.Keys)
	require.True(t, ok, "the orphan_keys extension implements keyshare.Keys")
	return k
}
