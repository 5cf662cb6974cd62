package bench

import (
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
)

// BenchmarkObserveMemory measures what an observing orphanmetrics exporter (mode: observe)
// keeps per record while its trace waits for its decision: the whole mix given to it with
// decision_wait 1h, the input dropped batch by batch (the collector frees a batch once the
// exporter returns), so the heap left is the records, their traces' wait, what the sink keeps
// of each span for its labels and the correlator's bookkeeping (roots, keys). It is the figure
// docs/scaling.md sizes a member's memory with. Heap figures are deltas of
// runtime.MemStats.HeapAlloc after full collections.
func BenchmarkObserveMemory(b *testing.B) {
	m := getMix(b)
	var per, perTrace float64
	var records int
	for range b.N {
		cfg := orphanmetrics.NewDefaultSettings()
		cfg.DecisionWait = time.Hour
		cfg.Prices = orphanConfig().Prices
		cfg.Limits.MaxTraces = 2 * mixTraces
		rec, err := orphanmetrics.NewRecorder(cfg)
		if err != nil {
			b.Fatal(err)
		}
		in := Clone(m.Batches)
		before := heapInUse()
		obs, err := orphanmetrics.NewObserving(cfg, rec, zap.NewNop(), nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		for i := range in {
			obs.Consume(in[i])
			in[i] = ptrace.Traces{}
		}
		held := heapInUse()
		var traces int
		records, traces, _, _, _, _ = obs.Observer().Kept()
		if records != m.Spans {
			b.Fatalf("%d records waiting, want the mix's %d spans", records, m.Spans)
		}
		per = (float64(held) - float64(before)) / float64(records)
		perTrace = (float64(held) - float64(before)) / float64(traces)
		obs.Shutdown()
		runtime.KeepAlive(obs)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(per, "B/waiting-record")
	b.ReportMetric(perTrace, "B/waiting-trace")
}
