// Package judged passes batches through the orphan processor as the pipeline tests do: every
// batch within decision_wait, Shutdown releasing them, the scenarios' prices. It is apart from
// package scenarios, which the processor's own tests import.
package judged

import (
	"context"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/prices"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor"
)

// Traces passes batches through an orphan processor with decision_wait an hour (decision_wait
// 0 is not used: all batches arrive within the wait and Shutdown releases them) and returns
// what it sends on. t is a test's, or a property's (*rapid.T).
func Traces(t require.TestingT, batches ...ptrace.Traces) []ptrace.Traces {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	f := orphanprocessor.NewFactory()
	cfg := f.CreateDefaultConfig().(*orphanprocessor.Config)
	cfg.DecisionWait = time.Hour
	cfg.Prices = prices.Scenarios()
	sink := new(consumertest.TracesSink)
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), cfg, sink)
	require.NoError(t, err)
	componentcheck.Feed(t, p, batches...)
	return sink.AllTraces()
}
