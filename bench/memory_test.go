package bench

import (
	"context"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor"
)

// inFlight is how many traces the memory benchmarks hold (100,000 with -short).
func inFlight() int {
	if testing.Short() {
		return 100_000
	}
	return 1_000_000
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// feedTraces sends n one-span traces (root spans or leaf CLIENT spans, as the first span of a
// trace to arrive usually is) to consume, 1,000 a batch, building each batch just before it is
// sent, so that no input outlives its batch.
func feedTraces(tb testing.TB, n int, root bool, consume func(ptrace.Traces) error) {
	const per = 1000
	for first := 0; first < n; first += per {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "researcher")
		decorateResources(td)
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		spans.EnsureCapacity(per)
		for t := first; t < min(first+per, n); t++ {
			sp := spans.AppendEmpty()
			sp.SetTraceID(TraceID(t, 0xffff))
			sp.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(t) * time.Microsecond)
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(200 * time.Millisecond)))
			a := sp.Attributes()
			a.PutStr("http.request.method", "GET")
			if root {
				sp.SetName("POST /ask")
				sp.SetKind(ptrace.SpanKindServer)
				a.PutStr("http.route", "/ask")
				a.PutInt("http.response.status_code", 200)
				continue
			}
			sp.SetName("GET")
			sp.SetKind(ptrace.SpanKindClient)
			sp.SetParentSpanID(pcommon.SpanID{8, 7, 6, 5, 4, 3, 2, 1})
			a.PutStr("url.full", "http://search-tool:8080/search?q=agents")
			a.PutStr("server.address", "search-tool")
			a.PutInt("server.port", 8080)
			a.PutInt("http.response.status_code", 200)
		}
		if err := consume(td); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkMemory measures the processor's heap with 1,000,000 traces in flight: per tracked
// trace (held, waiting for its decision: its first span, its resource, the processor's
// bookkeeping) and per retained root record (what is kept of a root request after its trace
// left, so that late spans and key-bound traces can be judged). Heap figures are deltas of
// runtime.MemStats.HeapAlloc after full collections.
func BenchmarkMemory(b *testing.B) {
	n := inFlight()
	b.Run("tracked-traces", func(b *testing.B) {
		orphanHeap(b, n, "tracked-trace", func() (*orphanprocessor.Config, func(*orphan)) {
			cfg := orphanConfig()
			cfg.DecisionWait = time.Hour
			cfg.Limits.MaxTraces = 2 * n
			cfg.Limits.MaxRootRecords = 2 * n
			return cfg, func(o *orphan) { feedOrphan(b, o, n, false) }
		})
	})
	b.Run("root-records", func(b *testing.B) {
		orphanHeap(b, n, "root-record", func() (*orphanprocessor.Config, func(*orphan)) {
			cfg := orphanConfig() // decision_wait 0: each trace leaves at once, its record stays
			cfg.Limits.MaxRootRecords = 2 * n
			return cfg, func(o *orphan) { feedOrphan(b, o, n, true) }
		})
	})
	b.Run("held-mix", func(b *testing.B) {
		// The whole mix held at once (decision_wait 1h): heap per held span of realistic traces,
		// the spans themselves included.
		m := getMix(b)
		orphanHeap(b, m.Spans, "held-span-beyond-input", func() (*orphanprocessor.Config, func(*orphan)) {
			cfg := orphanConfig()
			cfg.DecisionWait = time.Hour
			in := Clone(m.Batches)
			return cfg, func(o *orphan) {
				for i := range in {
					if err := o.p.ConsumeTraces(context.Background(), in[i]); err != nil {
						b.Fatal(err)
					}
					in[i] = ptrace.Traces{}
				}
			}
		})
	})
	b.Run("observe-held-mix", func(b *testing.B) {
		// The whole mix observed with its records waiting (the clock stands still: no trace's
		// decision_wait_after_root passes): heap per held span in observe mode, which keeps a
		// record of each span (verdict.Span, with what the exporter keeps of its attributes)
		// and nothing of its pdata. Each batch is unmarshalled from OTLP just before it is
		// consumed, as a receiver does, and dropped after: what the records point into (span
		// names, strings) is counted, the pdata it came from is not.
		m := getMix(b)
		wire := marshalBatches(b, m.Batches)
		at := newHeldOrphan(m).start
		var per float64
		for range b.N {
			heldObserving = nil
			rec, err := orphanmetrics.NewRecorder(nil)
			if err != nil {
				b.Fatal(err)
			}
			before := heapInUse()
			o, err := orphanmetrics.NewObserving(observeConfig(), rec, zap.NewNop(), nil, func() time.Time { return at })
			if err != nil {
				b.Fatal(err)
			}
			var u ptrace.ProtoUnmarshaler
			for _, buf := range wire {
				td, err := u.UnmarshalTraces(buf)
				if err != nil {
					b.Fatal(err)
				}
				o.Consume(td)
			}
			held := heapInUse()
			if waiting, _, _, _, _, _ := o.Observer().Kept(); waiting != m.Spans {
				b.Fatalf("%d records waiting, want every span of the mix (%d)", waiting, m.Spans)
			}
			per = (float64(held) - float64(before)) / float64(m.Spans)
			// Kept alive until the next iteration (and, for the last one, to the end of the
			// run): a -memprofile's inuse_space then shows what the records hold.
			heldObserving = o
		}
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(per, "B/held-span")
	})
}

// orphanHeap measures, b.N times, the heap an orphan processor holds once fed, per one of count
// things, and reports it as B/unit. prepare, called before the heap is first read, returns the
// processor's config and what feeds it; the processor is shut down (deciding and passing on
// whatever it holds) after the heap is read again.
func orphanHeap(b *testing.B, count int, unit string, prepare func() (*orphanprocessor.Config, func(*orphan))) {
	var per float64
	for range b.N {
		cfg, feed := prepare()
		before := heapInUse()
		o := newOrphan(b, cfg, consumertest.NewNop())
		feed(o)
		held := heapInUse()
		per = (float64(held) - float64(before)) / float64(count)
		o.close(b)
		runtime.KeepAlive(o)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(per, "B/"+unit)
}

// feedOrphan feeds n one-span traces (feedTraces) to o.
func feedOrphan(tb testing.TB, o *orphan, n int, root bool) {
	feedTraces(tb, n, root, func(td ptrace.Traces) error { return o.p.ConsumeTraces(context.Background(), td) })
}

// heldObserving is the last observer of BenchmarkMemory/observe-held-mix, with the whole mix
// waiting in it, so that a heap profile taken at the end of the run shows it.
var heldObserving *orphanmetrics.Observing

// marshalBatches is batches as OTLP protobuf, as they arrive at a receiver.
func marshalBatches(tb testing.TB, batches []ptrace.Traces) [][]byte {
	var mr ptrace.ProtoMarshaler
	out := make([][]byte, len(batches))
	for i, td := range batches {
		buf, err := mr.MarshalTraces(td)
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = buf
	}
	return out
}
