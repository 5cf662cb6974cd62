package orphanmetrics

import (
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/recordertest"
)

// benchBatch is a batch of 50 copies of the scenario (500 spans, 350 with verdicts) plus 500
// spans without any, as most spans of a pipeline are.
func benchBatch(b *testing.B) ptrace.Traces {
	var res []testResource
	for i := range 50 {
		s := recordertest.FanOut()
		for j := range s {
			s[j].Service = s[j].Service.(string) + "-" + strconv.Itoa(i%5)
		}
		res = append(res, s...)
	}
	plain := testResource{Service: "plain"}
	for i := range 500 {
		plain.Spans = append(plain.Spans, testSpan{Name: "GET /" + strconv.Itoa(i%10), TraceID: traceB, End: time.Second, Attrs: map[string]any{
			"http.request.method": "GET", "http.route": "/x", "http.response.status_code": 200, "server.address": "example.com",
		}})
	}
	return recordertest.Build(b, append(res, plain)...)
}

// BenchmarkRecord records one batch per op (ns/op and ns/span: per span of the batch).
func BenchmarkRecord(b *testing.B) {
	td := benchBatch(b)
	benchRecord(b, newTestRecorder(b, nil), td)
}

// BenchmarkRecordCarried records the same batch with every verdict carried as an event on a
// carrier span (time model v2's worst case: no span is counted where it is).
func BenchmarkRecordCarried(b *testing.B) {
	td, _ := carryVerdicts(b, benchBatch(b), true)
	benchRecord(b, newTestRecorder(b, nil), td)
}

// benchRecord records td with r once (warming the series caches), then b.N times, reporting
// the time per span (ns/span).
func benchRecord(b *testing.B, r *Recorder, td ptrace.Traces) {
	r.Record(td)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.Record(td)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*td.SpanCount()), "ns/span")
}
