package orphanprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// The checks mdatagen generates for a traces processor (internal/testsupport/componentcheck).

func TestComponentFactory(t *testing.T) {
	componentcheck.Factory(t, NewFactory(), "orphan")
}

func TestComponentLifecycle(t *testing.T) {
	factory := NewFactory()
	cfg := componentcheck.Config(t, factory, "orphan")
	componentcheck.Lifecycle{
		Create: func() (component.Component, error) {
			return factory.CreateTraces(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
		},
		Use: func(t *testing.T, c component.Component) {
			require.NotPanics(t, func() {
				td := ptrace.NewTraces()
				addSpan(td, "svc", 1, 1, 0, ptrace.SpanKindServer, 0, 1)
				_ = c.(processor.Traces).ConsumeTraces(context.Background(), td)
			})
		},
	}.Run(t)
}
