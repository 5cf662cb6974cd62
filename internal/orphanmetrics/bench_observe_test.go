package orphanmetrics

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// observeBatch is every scenario's spans (no verdicts written: observe mode decides them) plus
// 500 spans of a plain HTTP service that feed no metric, as most spans of a pipeline.
func observeBatch(b *testing.B) ptrace.Traces {
	td := ptrace.NewTraces()
	for _, sc := range scenarios.All() {
		s, _ := sc.Build()
		s.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	}
	plain := testResource{service: "plain"}
	for i := range 500 {
		plain.spans = append(plain.spans, testSpan{name: "GET /" + strconv.Itoa(i%10), traceID: traceB, end: time.Second, attrs: map[string]any{
			"http.request.method": "GET", "http.route": "/x", "http.response.status_code": 200, "server.address": "example.com",
		}})
	}
	buildTraces(b, plain).ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	return td
}

// benchObserve consumes td once per op in observe mode, each batch decided at once
// (decision_wait 0): ns/op and allocs/op of a whole batch, ns/span per span of it.
func benchObserve(b *testing.B, td ptrace.Traces, mutate func(*Settings)) {
	cfg := NewDefaultSettings()
	cfg.DecisionWait = 0
	if mutate != nil {
		mutate(cfg)
	}
	rec, err := NewRecorder(cfg)
	require.NoError(b, err)
	obs, err := NewObserving(cfg, rec, zap.NewNop(), nil, nil)
	require.NoError(b, err)
	b.Cleanup(obs.Shutdown)
	var spans []ptrace.Span
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				spans = append(spans, sp)
			}
		}
	}
	// Each op's traces are new ones (their IDs' last four bytes the op's number): the observer
	// keeps what it knows of a trace, and the same traces again would be duplicates.
	renumber := func(n uint32) {
		for _, sp := range spans {
			id := sp.TraceID()
			id[12], id[13], id[14], id[15] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
			sp.SetTraceID(id)
		}
	}
	renumber(0)
	obs.Consume(td) // warm the series caches
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		renumber(uint32(i + 1))
		b.StartTimer()
		obs.Consume(td)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*td.SpanCount()), "ns/span")
}

// BenchmarkObserve observes the batch without dimensions.
func BenchmarkObserve(b *testing.B) { benchObserve(b, observeBatch(b), nil) }
