package orphanprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// gatedSink is a next consumer that, while its gate is shut, tells that it was called and
// waits until the gate opens: the moment verdicts are in the next consumer's hands.
type gatedSink struct {
	consumertest.TracesSink
	entered chan struct{}
	open    chan struct{}
}

func newGatedSink() *gatedSink {
	return &gatedSink{entered: make(chan struct{}, 1), open: make(chan struct{})}
}

func (g *gatedSink) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.open
	return g.TracesSink.ConsumeTraces(ctx, td)
}

var _ consumer.Traces = (*gatedSink)(nil)

func gauge(t *testing.T, tel *componenttest.Telemetry, name string) int64 {
	t.Helper()
	var sum int64
	for _, v := range points(t, tel, name) {
		sum += v
	}
	return sum
}

// TestOwedUntilHandedOn is issue 19 item 9: a reader of the processor's telemetry waits until
// it holds and owes nothing (spans_held, pending_spans, open_runs all 0) and then reads the
// exporter's metrics. Under load, it read them while the last verdicts were still on their way
// out: the held gauges dropped when a trace was taken for its decision, and open_runs when a
// sweep closed a run, before the verdicts were handed on. Now a trace counts as held until its
// spans are handed on, and a collection of the gauges waits for a sweep's hand-off: whenever
// open_runs reads 0, the carrier span with the run's outcome has been passed on.
func TestOwedUntilHandedOn(t *testing.T) {
	tel := testTelemetry(t)
	cfg := testConfig(time.Minute)
	cfg.DecisionWaitAfterRoot = time.Second
	cfg.RunTimeout = time.Minute
	next := newGatedSink()
	p, clk := newTestProcessorWith(t, settingsFor(tel, component.NewID(metadata.Type)), cfg, next)
	ctx := context.Background()
	clk.Advance(at(3).AsTime().Sub(clk.Now()))

	// A root and a keyed attempt that failed retryably: the run stays open for run_timeout.
	td := ptrace.NewTraces()
	openKeyedRun(td)
	require.NoError(t, p.ConsumeTraces(ctx, td))
	require.Equal(t, int64(2), gauge(t, tel, "otelcol_processor_orphan_spans_held"))

	// The release: while the decided spans are in the next consumer's hands, they are held.
	clk.Advance(2 * time.Second)
	released := make(chan error, 1)
	go func() { released <- p.release(ctx, p.due(clk.Now())) }()
	<-next.entered
	assert.Equal(t, int64(2), gauge(t, tel, "otelcol_processor_orphan_spans_held"), "spans being handed on are still held")
	assert.Equal(t, int64(1), gauge(t, tel, "otelcol_processor_orphan_traces_held"))
	close(next.open)
	require.NoError(t, <-released)
	assert.Zero(t, gauge(t, tel, "otelcol_processor_orphan_spans_held"))
	assert.Zero(t, gauge(t, tel, "otelcol_processor_orphan_traces_held"))
	assert.Equal(t, int64(1), gauge(t, tel, "otelcol_processor_orphan_open_runs"))
	require.Equal(t, 2, next.SpanCount())

	// The sweep that closes the run: a collection while the carrier is being handed on reads
	// open_runs 0 only once the carrier was passed on.
	next.open = make(chan struct{})
	clk.Advance(2 * time.Minute)
	swept := make(chan struct{})
	go func() { defer close(swept); p.sweep(ctx, clk.Now()) }()
	<-next.entered
	type reading struct {
		open, carriers int64
		passed         int
	}
	read := make(chan reading, 1)
	go func() {
		open := gauge(t, tel, "otelcol_processor_orphan_open_runs")
		read <- reading{open, gauge(t, tel, "otelcol_processor_orphan_carrier_spans"), next.SpanCount()}
	}()
	var r reading
	select {
	case r = <-read: // not held back: it must not say the run is over yet
	case <-time.After(300 * time.Millisecond):
		close(next.open)
		r = <-read
	}
	if r.open == 0 {
		assert.Equal(t, 3, r.passed, "open_runs read 0 while the run's outcome was still in the processor")
		assert.Equal(t, int64(1), r.carriers)
	}
	select {
	case <-next.open:
	default:
		close(next.open)
	}
	<-swept
	assert.Zero(t, gauge(t, tel, "otelcol_processor_orphan_open_runs"))
	assert.Equal(t, 3, next.SpanCount(), "a carrier span")
}
