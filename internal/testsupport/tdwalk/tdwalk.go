// Package tdwalk walks the spans of a ptrace.Traces, through its resource spans and scope
// spans, for the tests, benchmarks and harnesses that read or stamp every span.
package tdwalk

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Spans calls f with every span of td, in order.
func Spans(td ptrace.Traces, f func(ptrace.Span)) {
	SpansWithResource(td, func(_ pcommon.Resource, sp ptrace.Span) { f(sp) })
}

// SpansWithResource calls f with every span of td and its resource, in order.
func SpansWithResource(td ptrace.Traces, f func(pcommon.Resource, ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				f(rs.Resource(), spans.At(k))
			}
		}
	}
}
