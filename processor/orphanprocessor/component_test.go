package orphanprocessor

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
)

// TestComponent runs the checks mdatagen generates for a traces processor
// (internal/testsupport/componentcheck), its next consumer a no-op one.
func TestComponent(t *testing.T) {
	componentcheck.Check(t, NewFactory(), "orphan", componentcheck.Lifecycle{
		Traces: func() ptrace.Traces {
			td := ptrace.NewTraces()
			addSpan(td, "svc", 1, 1, 0, ptrace.SpanKindServer, 0, 1)
			return td
		},
	})
}
