// Package keytier holds what the key-sharing tests of the observing recorder (internal/orphanmetrics)
// and the orphanmetrics exporter share: an orphan_keys extension whose brokers are down, a host
// that offers it to a component, and S7's queue job alone, whose key binds nowhere.
package keytier

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/keystest"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
)

// Host is a component.Host with the given extensions.
type Host map[component.ID]component.Component

// GetExtensions returns the extensions of h.
func (h Host) GetExtensions() map[component.ID]component.Component { return h }

// Down starts an orphan_keys extension whose brokers are unreachable (127.0.0.1:1), with the
// given wait; it is shut down when the test ends.
func Down(t *testing.T, wait time.Duration) extension.Extension {
	t.Helper()
	ext := keystest.New(t, map[string]any{
		"brokers": []any{"127.0.0.1:1"}, "wait": wait.String(), "dial_timeout": "100ms",
		"topic": map[string]any{"check_timeout": "200ms"},
	})
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()), "brokers down: start-up goes on")
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return ext
}

// S7JobAlone is S7's trace B alone (the queue consumer whose model calls carry key K); the
// request's trace A never comes.
func S7JobAlone() ptrace.Traces {
	td, _ := scenarios.S7()
	var idA pcommon.TraceID
	tdwalk.RemoveSpans(td, func(sp ptrace.Span) bool {
		if idA.IsEmpty() {
			idA = sp.TraceID()
		}
		return sp.TraceID() == idA
	})
	return td
}
