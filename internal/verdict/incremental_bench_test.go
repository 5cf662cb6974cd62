package verdict_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// BenchmarkReleaseK measures the correlator alone deciding traces released in k parts (issue
// 18, item 3; the processor's figure is bench's BenchmarkKRelease): 400 traces made from the
// larger scenarios (s01, s02, s03, s19: 21 to 28 spans), each trace's spans its root first and
// then in the order they end, cut into k parts released 3 s apart (with a Sweep between), on the
// incremental path and with every release decided whole. Flat ns/span over k is the aim; it
// reports the span records decided per span (Correlator.SpansDecided), the share of spans that
// leave provisional (their verdicts carried later) and the share of releases decided
// incrementally (Correlator.DecisionPaths).
func BenchmarkReleaseK(b *testing.B) {
	var traces [][]verdict.Span
	for _, name := range []string{"s01_happy_fanout", "s02_caller_leaves", "s03_loop_checks", "s19_languages_tool_calls"} {
		spans := scenarioSpans(b, filepath.Join("../../testdata/scenarios", name, "trace.json"))
		for _, g := range byTrace(spans, indexes(len(spans))) {
			tr := make([]verdict.Span, len(g))
			for k, i := range g {
				tr[k] = spans[i]
			}
			slices.SortStableFunc(tr, func(x, y verdict.Span) int { return endOrder(&x, &y, true) })
			traces = append(traces, tr)
		}
	}
	const copies = 400
	all := make([][]verdict.Span, copies)
	spans := 0
	for n := range all {
		src := traces[n%len(traces)]
		tr := slices.Clone(src)
		for i := range tr {
			tr[i].TraceID = verdict.TraceID{0xbe, byte(n >> 8), byte(n)}
		}
		all[n] = tr
		spans += len(tr)
	}
	for _, k := range []int{1, 4, 16} {
		for _, inc := range []bool{true, false} {
			name := fmt.Sprintf("k=%d/incremental", k)
			if !inc {
				name = fmt.Sprintf("k=%d/whole", k)
			}
			b.Run(name, func(b *testing.B) {
				var dst []verdict.Verdict
				decided, provisional := uint64(0), 0
				incremental, releases := uint64(0), uint64(0)
				for range b.N {
					c := newCorrelator(b)
					verdict.SetIncremental(c, inc)
					now := int64(1767225700) * int64(time.Second)
					for p := range k {
						for _, tr := range all {
							from, to := p*len(tr)/k, (p+1)*len(tr)/k
							if from == to {
								continue
							}
							c.Observe(tr[from:to])
							d := c.Release(dst, tr[from:to], now, nil)
							for i := range d.Verdicts {
								if d.Verdicts[i].Provisional {
									provisional++
								}
							}
							dst = d.Verdicts[:0]
						}
						now += int64(3 * time.Second)
						c.Sweep(now)
					}
					c.Finish(now)
					decided += c.SpansDecided()
					n, whole := c.DecisionPaths()
					incremental += n
					for _, w := range whole {
						releases += w
					}
					releases += n
				}
				b.ReportMetric(float64(decided)/float64(b.N*spans), "decided/span")
				b.ReportMetric(float64(provisional)/float64(b.N*spans), "provisional/span")
				b.ReportMetric(float64(incremental)/float64(releases), "incremental/release")
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
			})
		}
	}
}
