package orphanmetrics

import (
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// benchBatch is a batch of 50 copies of the scenario (500 spans, 350 with verdicts) plus 500
// spans without any, as most spans of a pipeline are.
func benchBatch(b *testing.B) ptrace.Traces {
	var res []testResource
	for i := range 50 {
		s := scenario(b)
		for j := range s {
			s[j].service = s[j].service.(string) + "-" + strconv.Itoa(i%5)
		}
		res = append(res, s...)
	}
	plain := testResource{service: "plain"}
	for i := range 500 {
		plain.spans = append(plain.spans, testSpan{name: "GET /" + strconv.Itoa(i%10), traceID: traceB, end: time.Second, attrs: map[string]any{
			"http.request.method": "GET", "http.route": "/x", "http.response.status_code": 200, "server.address": "example.com",
		}})
	}
	return buildTraces(b, append(res, plain)...)
}

// BenchmarkRecord records one batch per op (ns/op and ns/span: per span of the batch).
func BenchmarkRecord(b *testing.B) {
	td := benchBatch(b)
	r := newTestRecorder(b, nil)
	r.Record(td) // warm the series caches
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.Record(td)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*td.SpanCount()), "ns/span")
}

// BenchmarkRecordCarried records the same batch with every verdict carried as an event on a
// carrier span (time model v2's worst case: no span is counted where it is).
func BenchmarkRecordCarried(b *testing.B) {
	td, _ := carryVerdicts(b, benchBatch(b), true)
	r := newTestRecorder(b, nil)
	r.Record(td)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.Record(td)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*td.SpanCount()), "ns/span")
}
