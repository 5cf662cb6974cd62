package orphanmetrics

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// withBenchDimensions gives every resource of td deployment.environment.name and every span
// team, both dimensions of benchDimensions.
func withBenchDimensions(td ptrace.Traces) ptrace.Traces {
	for i, rs := range td.ResourceSpans().All() {
		rs.Resource().Attributes().PutStr("deployment.environment.name", []string{"prod", "staging"}[i%2])
		for _, ss := range rs.ScopeSpans().All() {
			for j, sp := range ss.Spans().All() {
				sp.Attributes().PutStr("team", []string{"a", "b", "c"}[j%3])
			}
		}
	}
	return td
}

func benchDimensions(cfg *Settings) {
	cfg.Dimensions = []DimensionConfig{{Name: "deployment.environment.name", Default: "unknown"}, {Name: "team"}}
}

// BenchmarkObserveDimensions observes the batch with two dimensions, one from the resources,
// one from the spans.
func BenchmarkObserveDimensions(b *testing.B) {
	benchObserve(b, withBenchDimensions(observeBatch(b)), benchDimensions)
}

// BenchmarkRecordDimensions is BenchmarkRecord with the two dimensions (annotate mode).
func BenchmarkRecordDimensions(b *testing.B) {
	td := withBenchDimensions(benchBatch(b))
	r := newTestRecorder(b, benchDimensions)
	r.Record(td)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.Record(td)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*td.SpanCount()), "ns/span")
}
