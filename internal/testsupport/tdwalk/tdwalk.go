// Package tdwalk walks the spans of a ptrace.Traces, through its resource spans and scope
// spans, for the tests, benchmarks and harnesses that read or stamp every span.
package tdwalk

import (
	"sort"

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

// Flat is one span with its resource spans and scope spans, so that it can be sent alone or in
// a batch of the test's choosing.
type Flat struct {
	RS   ptrace.ResourceSpans
	SS   ptrace.ScopeSpans
	Span ptrace.Span
}

// Flatten lists the spans of td with their resource and scope, in order.
func Flatten(td ptrace.Traces) []Flat {
	var out []Flat
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				out = append(out, Flat{rss.At(i), sss.At(j), spans.At(k)})
			}
		}
	}
	return out
}

// AppendTo appends a copy of the span, with its resource and scope, to td.
func (f Flat) AppendTo(td ptrace.Traces) {
	rs := td.ResourceSpans().AppendEmpty()
	f.RS.Resource().CopyTo(rs.Resource())
	ss := rs.ScopeSpans().AppendEmpty()
	f.SS.Scope().CopyTo(ss.Scope())
	f.Span.CopyTo(ss.Spans().AppendEmpty())
}

// Ending is the spans of a Traces that end at one time, in the Traces' order.
type Ending struct {
	End   pcommon.Timestamp
	Spans []Flat
}

// Traces returns the spans of e as one Traces, each with its resource and scope.
func (e Ending) Traces() ptrace.Traces {
	td := ptrace.NewTraces()
	for _, f := range e.Spans {
		f.AppendTo(td)
	}
	return td
}

// ByEnd groups the spans of td by their end time, earliest first (spans without an end time
// first of all): what a collector receives when every span is exported as it ends.
func ByEnd(td ptrace.Traces) []Ending {
	spans := Flatten(td)
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].Span.EndTimestamp() < spans[j].Span.EndTimestamp() })
	var out []Ending
	for _, f := range spans {
		if end := f.Span.EndTimestamp(); len(out) == 0 || out[len(out)-1].End != end {
			out = append(out, Ending{End: end})
		}
		out[len(out)-1].Spans = append(out[len(out)-1].Spans, f)
	}
	return out
}

// RemoveSpans removes from td, in place, the spans for which drop returns true (drop may
// change the others), and the scopes and resources left without spans.
func RemoveSpans(td ptrace.Traces, drop func(ptrace.Span) bool) {
	td.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(drop)
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
}

// SortByEnd sorts order (indexes into spans) by the spans' end times, earliest first, keeping
// the order of ties.
func SortByEnd(spans []Flat, order []int) {
	sort.SliceStable(order, func(a, b int) bool {
		return spans[order[a]].Span.EndTimestamp() < spans[order[b]].Span.EndTimestamp()
	})
}

// Batches is the spans at order (indexes into spans) as batches in that order, a new batch
// starting at each position of order that cuts holds.
func Batches(spans []Flat, order []int, cuts map[int]bool) []ptrace.Traces {
	var batches []ptrace.Traces
	cur := ptrace.NewTraces()
	for i, pi := range order {
		if cuts[i] {
			batches = append(batches, cur)
			cur = ptrace.NewTraces()
		}
		spans[pi].AppendTo(cur)
	}
	return append(batches, cur)
}
