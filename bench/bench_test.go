package bench

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"golang.org/x/sys/unix"
)

// The benchmark mix: 10,000 agent fan-out traces of about 40 spans, 25 whole traces a batch.
const (
	mixTraces      = 10_000
	tracesPerBatch = 25
	mixSeed        = 6
)

var (
	mixOnce sync.Once
	theMix  *Mix
	// annotated is the mix as the orphan processor passes it on (verdicts written), for the
	// orphanmetrics exporter.
	annotated []ptrace.Traces
)

func getMix(tb testing.TB) *Mix {
	mixOnce.Do(func() {
		theMix = BuildMix(mixTraces, tracesPerBatch, mixSeed)
		annotated = annotate(tb, theMix.Batches)
	})
	return theMix
}

// TestMain runs everything on one core (GOMAXPROCS=1, unless -test.cpu says otherwise): the
// figures are per span on one core, and components that work in goroutines of their own
// (groupbytrace) cannot hide work on the second core.
func TestMain(m *testing.M) {
	flag.Parse()
	runtime.GOMAXPROCS(1)
	os.Exit(m.Run())
}

// processCPU is the CPU time the process has used, in nanoseconds.
func processCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// cost is what one pass of a component over the mix took.
type cost struct {
	ns, bytes, allocs float64
	// cpuNs is the process's CPU time (CLOCK_PROCESS_CPUTIME_ID): on a shared machine it does
	// not grow with the time other processes take the core, as wall time does.
	cpuNs float64
	spans int
}

func (c *cost) add(o cost) {
	c.ns += o.ns
	c.cpuNs += o.cpuNs
	c.bytes += o.bytes
	c.allocs += o.allocs
	c.spans += o.spans
}

func (c cost) perSpan() (ns, bytes, allocs float64) {
	n := float64(c.spans)
	return c.ns / n, c.bytes / n, c.allocs / n
}

// contender names a component, how to make it, and whether it may change the batches it is
// given (then each pass gets a fresh copy, made outside the measurement).
type contender struct {
	name      string
	make      func(tb testing.TB) component
	input     func() []ptrace.Traces
	mutates   bool
	restamped bool // give each pass fresh trace IDs
}

func contenders(tb testing.TB) []contender {
	m := getMix(tb)
	mix := func() []ptrace.Traces { return m.Batches }
	return []contender{
		{name: "floor", make: func(testing.TB) component { return &floor{} }, input: mix, restamped: true},
		{name: "orphan", make: func(tb testing.TB) component { return newOrphan(tb, orphanConfig(), consumertest.NewNop()) }, input: mix, mutates: true, restamped: true},
		{name: "orphanmetrics", make: func(tb testing.TB) component { return newMetrics(tb) }, input: func() []ptrace.Traces { return annotated }},
		{name: "observe", make: func(tb testing.TB) component { return newObserving(tb, m) }, input: mix, restamped: true},
		{name: "groupbytrace", make: func(tb testing.TB) component { return newGroupByTrace(tb) }, input: mix, restamped: true},
		{name: "spanmetrics", make: func(tb testing.TB) component { return newSpanMetrics(tb) }, input: mix, restamped: true},
	}
}

var round uint32

// pass feeds the whole mix once through c and measures it. Preparing the input (a fresh copy
// for components that may change it, fresh trace IDs) is not measured.
func pass(tb testing.TB, b *testing.B, k contender, c component) cost {
	if b != nil {
		b.StopTimer()
	}
	in := k.input()
	if k.restamped {
		round++
		Restamp(in, round)
	}
	if k.mutates {
		in = Clone(in)
	}
	spans := 0
	for _, td := range in {
		spans += td.SpanCount()
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if b != nil {
		b.StartTimer()
	}
	cpu0 := processCPU()
	t0 := time.Now()
	c.consume(tb, in)
	el := time.Since(t0)
	cpu := processCPU() - cpu0
	if b != nil {
		b.StopTimer()
	}
	runtime.ReadMemStats(&m1)
	if b != nil {
		b.StartTimer()
	}
	return cost{
		ns:     float64(el.Nanoseconds()),
		cpuNs:  float64(cpu),
		bytes:  float64(m1.TotalAlloc - m0.TotalAlloc),
		allocs: float64(m1.Mallocs - m0.Mallocs),
		spans:  spans,
	}
}

// cpuPerSpan is the process CPU time per span of c.
func cpuPerSpan(c *cost) float64 { return c.cpuNs / float64(c.spans) }

func report(b *testing.B, c cost) {
	ns, bytes, allocs := c.perSpan()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ns, "ns/span")
	b.ReportMetric(c.cpuNs/float64(c.spans), "cpu-ns/span")
	b.ReportMetric(bytes, "B/span")
	b.ReportMetric(allocs, "allocs/span")
	b.ReportMetric(1e3/ns, "Mspans/s")
}

// BenchmarkMix feeds the same pre-built batches (10,000 traces, ~400,000 spans) through each
// component; one op is one pass over the whole mix.
func BenchmarkMix(b *testing.B) {
	for _, k := range contenders(b) {
		b.Run(k.name, func(b *testing.B) {
			c := k.make(b)
			defer c.close(b)
			pass(b, nil, k, c) // warm-up, not measured (see BenchmarkRatios)
			var total cost
			for range b.N {
				total.add(pass(b, b, k, c))
			}
			report(b, total)
		})
	}
}

// BenchmarkRatios passes the mix through all six components in turn in every op, so that each
// ratio pairs figures taken moments apart on the same (noisy) machine. observe/floor is the
// orphanmetrics exporter observing (issue 26: it decides the verdicts itself, on the production
// time model, every span decided and counted within the op; see observing) against the floor;
// orphan/floor the processor deciding each batch at once (decision_wait 0) without counting.
func BenchmarkRatios(b *testing.B) {
	ks := contenders(b)
	cs := make([]component, len(ks))
	for i, k := range ks {
		cs[i] = k.make(b)
		defer cs[i].close(b)
	}
	// One pass each first, not measured: every op then meets warm components (grown maps and
	// pools), as BenchmarkMix's later ops do.
	for i, k := range ks {
		pass(b, nil, k, cs[i])
	}
	totals := make(map[string]*cost, len(ks))
	for _, k := range ks {
		totals[k.name] = &cost{}
	}
	for range b.N {
		for i, k := range ks {
			totals[k.name].add(pass(b, b, k, cs[i]))
		}
	}
	per := func(name string) (float64, float64, float64) { return totals[name].perSpan() }
	fNs, _, _ := per("floor")
	oNs, oB, oA := per("orphan")
	gNs, gB, gA := per("groupbytrace")
	sNs, sB, sA := per("spanmetrics")
	mNs, mB, mA := per("orphanmetrics")
	vNs, vB, vA := per("observe")
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(oNs/fNs, "orphan/floor")
	// The same ratio in CPU time (CLOCK_PROCESS_CPUTIME_ID): steadier than wall time on a
	// machine whose cores other processes take.
	b.ReportMetric(cpuPerSpan(totals["orphan"])/cpuPerSpan(totals["floor"]), "orphan/floor-cpu")
	b.ReportMetric(vNs/fNs, "observe/floor")
	b.ReportMetric(cpuPerSpan(totals["observe"])/cpuPerSpan(totals["floor"]), "observe/floor-cpu")
	// Observing decides and counts; the processor with the exporter after it decides, writes
	// and counts: (orphan + orphanmetrics) is annotate's work on the same mix.
	b.ReportMetric(vNs/(oNs+mNs), "observe/annotate")
	b.ReportMetric(vNs, "observe-ns/span")
	b.ReportMetric(vB, "observe-B/span")
	b.ReportMetric(vA, "observe-allocs/span")
	b.ReportMetric(cpuPerSpan(totals["groupbytrace"])/cpuPerSpan(totals["orphan"]), "groupbytrace/orphan-cpu")
	b.ReportMetric(gNs/oNs, "groupbytrace/orphan")
	b.ReportMetric(sNs/oNs, "spanmetrics/orphan")
	b.ReportMetric(mNs/fNs, "orphanmetrics/floor")
	b.ReportMetric(gB/oB, "groupbytrace/orphan-B")
	b.ReportMetric(gA/oA, "groupbytrace/orphan-allocs")
	b.ReportMetric(sB/oB, "spanmetrics/orphan-B")
	b.ReportMetric(sA/oA, "spanmetrics/orphan-allocs")
	b.ReportMetric(1e3/oNs, "orphan-Mspans/s")
	b.ReportMetric(mNs, "orphanmetrics-ns/span")
	b.ReportMetric(sNs, "spanmetrics-ns/span")
	b.ReportMetric(mB, "orphanmetrics-B/span")
	b.ReportMetric(sB, "spanmetrics-B/span")
	b.ReportMetric(mA, "orphanmetrics-allocs/span")
	b.ReportMetric(sA, "spanmetrics-allocs/span")
	b.ReportMetric(mNs/sNs, "orphanmetrics/spanmetrics")
	b.ReportMetric(totals["orphanmetrics"].cpuNs/totals["spanmetrics"].cpuNs*float64(totals["spanmetrics"].spans)/float64(totals["orphanmetrics"].spans), "orphanmetrics/spanmetrics-cpu")
	b.ReportMetric(mB/sB, "orphanmetrics/spanmetrics-B")
	b.ReportMetric(mA/sA, "orphanmetrics/spanmetrics-allocs")
}

// spreadParts is how many batches each trace of the spread mix arrives over (Spread).
const spreadParts = 4

var (
	spreadOnce sync.Once
	theSpread  []ptrace.Traces
)

func getSpread(tb testing.TB) []ptrace.Traces {
	m := getMix(tb)
	spreadOnce.Do(func() { theSpread = Spread(m, spreadParts) })
	return theSpread
}

// BenchmarkRatiosHeld is BenchmarkRatios on the production path: the orphan processor with its
// default time model (decision_wait 30 s, decision_wait_after_root 2 s) fed the spread mix, each
// trace's spans over spreadParts batches 100 ms apart, its root last (heldOrphan), so that
// holding, the release loop's work, releasing batches that leave in part, and what the time
// model keeps are measured, not only the decide-at-once path. Every op passes the same spans
// through the floor (the spread batches), the processor deciding whole batches at once
// (BenchmarkRatios' orphan, the mix's batches) and the held processor, moments apart. The held
// processor is fed GOMAXPROCS batches at a time, together (heldOrphan.together), so that
// -cpu 1,2 shows what a second core adds to the intake; the release loop's work stays between
// the moments, in the replay's goroutine.
func BenchmarkRatiosHeld(b *testing.B) {
	m := getMix(b)
	spread := func() []ptrace.Traces { return getSpread(b) }
	ks := []contender{
		{name: "floor", make: func(testing.TB) component { return &floor{} }, input: spread, restamped: true},
		{name: "orphan", make: func(tb testing.TB) component { return newOrphan(tb, orphanConfig(), consumertest.NewNop()) }, input: func() []ptrace.Traces { return m.Batches }, mutates: true, restamped: true},
		{name: "held", make: func(testing.TB) component { o := newHeldOrphan(m); o.together = true; return o }, input: spread, mutates: true, restamped: true},
	}
	cs := make([]component, len(ks))
	for i, k := range ks {
		cs[i] = k.make(b)
		defer cs[i].close(b)
		pass(b, nil, k, cs[i]) // warm-up, not measured
	}
	totals := make([]cost, len(ks))
	for range b.N {
		for i, k := range ks {
			totals[i].add(pass(b, b, k, cs[i]))
		}
	}
	fNs, _, _ := totals[0].perSpan()
	oNs, _, _ := totals[1].perSpan()
	hNs, hB, hA := totals[2].perSpan()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(hNs/fNs, "held/floor")
	b.ReportMetric(cpuPerSpan(&totals[2])/cpuPerSpan(&totals[0]), "held/floor-cpu")
	b.ReportMetric(cpuPerSpan(&totals[2])/cpuPerSpan(&totals[1]), "held/orphan-cpu")
	b.ReportMetric(oNs/fNs, "orphan/floor")
	b.ReportMetric(hNs/oNs, "held/orphan")
	b.ReportMetric(hNs, "held-ns/span")
	b.ReportMetric(hB, "held-B/span")
	b.ReportMetric(hA, "held-allocs/span")
	b.ReportMetric(1e3/hNs, "held-Mspans/s")
}

// BenchmarkKRelease measures what a trace released in k parts costs per span (issue 18, item 3):
// the mix re-packed so that each trace's spans, its root first, arrive in k batches further
// apart than decision_wait_after_root (SpreadReleases), through the held processor
// (heldOrphan), for k = 1, 4 and 16. Incremental decisions would keep ns/span flat; a decision
// that re-reads the trace's earlier spans at every release grows with k.
func BenchmarkKRelease(b *testing.B) {
	m := getMix(b)
	for _, k := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			batches := SpreadReleases(m, k)
			o := newHeldOrphan(m)
			o.interval = 3 * time.Second // > decision_wait_after_root (2 s): one release per part
			kc := contender{name: "held", input: func() []ptrace.Traces { return batches }, mutates: true, restamped: true}
			var total cost
			for range b.N {
				total.add(pass(b, b, kc, o))
			}
			report(b, total)
		})
	}
}
