package orphanprocessor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
)

// oneSpanBatches splits td into one batch per span, in td's order.
func oneSpanBatches(td ptrace.Traces) []ptrace.Traces {
	var out []ptrace.Traces
	for _, f := range tdwalk.Flatten(td) {
		b := ptrace.NewTraces()
		f.AppendTo(b)
		out = append(out, b)
	}
	return out
}

// runConcurrently feeds the batches to a fresh processor from senders goroutines at once (batch
// i to goroutine i mod senders), as a collector's receivers do, then shuts it down.
func runConcurrently(t *testing.T, batches []ptrace.Traces, senders int) []ptrace.Traces {
	sink := new(consumertest.TracesSink)
	p, err := newOrphanProcessor(nopSettings(), scenarioConfig(), sink)
	require.NoError(t, err)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range senders {
		wg.Go(func() {
			<-start
			for i := g; i < len(batches); i += senders {
				assert.NoError(t, p.ConsumeTraces(context.Background(), batches[i]))
			}
		})
	}
	close(start)
	wg.Wait()
	traces, spans := p.heldCount()
	assert.Equal(t, heldSpans(batches), spans, "every span with a trace ID is held once")
	assert.LessOrEqual(t, traces, p.cfg.Limits.MaxTraces)
	require.NoError(t, p.Shutdown(context.Background()))
	return sink.AllTraces()
}

// heldSpans counts the spans of the batches that have a trace ID (the others leave at once).
func heldSpans(batches []ptrace.Traces) int {
	n := 0
	for _, b := range batches {
		for _, f := range tdwalk.Flatten(b) {
			if !f.Span.TraceID().IsEmpty() {
				n++
			}
		}
	}
	return n
}

// TestConcurrentIntakeEqualsSerial takes every scenario's spans in, one span a batch, from
// several goroutines at once (the shards locked by each in turn, under -race), and checks the
// verdicts, written and carried, equal those of the same batches taken in one after another
// (which equal expected.json).
func TestConcurrentIntakeEqualsSerial(t *testing.T) {
	for _, sc := range loadScenarios(t) {
		t.Run(sc.dir, func(t *testing.T) {
			serial := effective(t, runBatches(t, oneSpanBatches(sc.traces)))
			checkScenario(t, sc, serial)
			want, _ := verdictsOf(serial)
			for round := range 3 {
				got, _ := verdictsOf(effective(t, runConcurrently(t, oneSpanBatches(sc.traces), 4)))
				require.Equal(t, want, got, "round %d", round)
			}
		})
	}
}

// TestReplayTogetherScenarios replays every scenario on its own clock with the default waits,
// the spans that end together handed over at that moment one span a batch, all from a
// goroutine each (Replay.ConsumeTogether): the verdicts are those of expected.json, as when
// the batches come one at a time (TestReplayScenarios).
func TestReplayTogetherScenarios(t *testing.T) {
	for _, sc := range loadScenarios(t) {
		t.Run(sc.dir, func(t *testing.T) {
			cfg := scenarioConfig()
			cfg.DecisionWait = 30 * time.Second
			r, sink := newTestReplay(t, cfg)
			for _, e := range tdwalk.ByEnd(sc.traces) {
				var batches []ptrace.Traces
				for _, f := range e.Spans {
					b := ptrace.NewTraces()
					f.AppendTo(b)
					batches = append(batches, b)
				}
				require.NoError(t, r.ConsumeTogether(context.Background(), e.End.AsTime(), batches))
			}
			drainReplay(t, r)
			checkScenario(t, sc, effective(t, sink.AllTraces()))
		})
	}
}
