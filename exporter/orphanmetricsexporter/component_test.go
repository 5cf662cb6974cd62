package orphanmetricsexporter

import (
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
)

// TestComponent runs the checks mdatagen generates for a traces exporter
// (internal/testsupport/componentcheck). The endpoint is moved to a free port, so that the test
// does not need localhost:9464.
func TestComponent(t *testing.T) {
	componentcheck.Check(t, NewFactory(), "orphanmetrics", componentcheck.Lifecycle{
		Configure: func(cfg component.Config) { cfg.(*Config).NetAddr.Endpoint = "localhost:0" },
		Traces: func() ptrace.Traces {
			td := ptrace.NewTraces()
			sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			sp.Attributes().PutStr("orphanwatch.liveness", "live")
			return td
		},
	})
}
