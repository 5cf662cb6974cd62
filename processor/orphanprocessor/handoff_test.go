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
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

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

// latencies returns the verdict latency histogram's count and sum.
func latencies(t *testing.T, tel *componenttest.Telemetry) (uint64, float64) {
	t.Helper()
	m, err := tel.GetMetric("otelcol_processor_orphan_verdict_latency")
	if err != nil {
		return 0, 0
	}
	var n uint64
	var sum float64
	for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
		n += dp.Count
		sum += dp.Sum
	}
	return n, sum
}

// TestVerdictLatency: the time from a request's root arriving to the last verdict counted for
// it, which shows what waiting for a run costs (runOverAt). A run whose loop (its parent) ended
// after its attempt is counted decision_wait after the loop ended; a loop that outlived its
// parent (its attempt ended after it), and a keyed run, wait for run_timeout after the attempt
// ended, plus decision_wait. Each request is observed once, after nothing more can come for it.
func TestVerdictLatency(t *testing.T) {
	for _, c := range []struct {
		name           string
		keyed          bool
		attemptEnd     float64
		minSec, maxSec float64 // seconds after the root arrived (at 3)
	}{
		{"loop ended after its attempt", false, 0.3, 10, 11},                  // 3.01 + 10 + 0.25
		{"loop outlived its parent", false, 5, 72, 73},                        // 5 + 60 + 10 + 0.25
		{"keyed run: a re-send may come in another trace", true, 0.3, 67, 68}, // 0.3 + 60 + 10 + 0.25
	} {
		t.Run(c.name, func(t *testing.T) {
			tel := componenttest.NewTelemetry()
			defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
			cfg := testConfig(10 * time.Second)
			cfg.DecisionWaitAfterRoot = time.Second
			cfg.RunTimeout = time.Minute
			p, clk := newTestProcessorWith(t, settingsFor(tel, component.NewID(metadata.Type)), cfg, nil)
			ctx := context.Background()
			clk.Advance(at(3).AsTime().Sub(clk.Now()))
			td := ptrace.NewTraces()
			httpStatus(addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3), 499)
			addSpan(td, "researcher", 1, 2, 1, ptrace.SpanKindServer, 0.01, 3.01)
			call := addSpan(td, "researcher", 1, 3, 2, ptrace.SpanKindClient, 0.1, c.attemptEnd)
			if c.keyed {
				call.Attributes().PutStr("http.request.header.idempotency-key", "search-1")
			}
			call.Attributes().PutInt("http.response.status_code", 503)
			arrived := clk.Now()
			require.NoError(t, p.ConsumeTraces(ctx, td))
			// The release loop's work, second by second, for three minutes.
			for range 180 {
				clk.Advance(time.Second)
				now := clk.Now()
				require.NoError(t, p.release(ctx, p.due(now)))
				require.NoError(t, p.releaseRoots(ctx, p.dueRoots(now, -1)))
				p.sweep(ctx, now)
			}
			n, sum := latencies(t, tel)
			require.Equal(t, uint64(1), n, "one request, observed once")
			assert.GreaterOrEqual(t, sum, c.minSec, "after %s", clk.Now().Sub(arrived))
			assert.LessOrEqual(t, sum, c.maxSec)
			require.NoError(t, p.Shutdown(ctx))
			n, _ = latencies(t, tel)
			assert.Equal(t, uint64(1), n, "not observed again at shutdown")
		})
	}
}
