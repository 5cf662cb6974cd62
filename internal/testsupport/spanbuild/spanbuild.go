// Package spanbuild appends hand-made spans to a ptrace.Traces: the one span builder of the
// tests that write their traces span by span (the processor's, the observer's, orphanwatch
// analyze's), each on a clock of its own.
package spanbuild

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// At returns t0 + s seconds as a pdata timestamp.
func At(t0 time.Time, s float64) pcommon.Timestamp {
	return pcommon.NewTimestampFromTime(t0.Add(time.Duration(s * float64(time.Second))))
}

// Add appends to td, in a resource of its own for service, a span named name of trace
// {trace, 1} with ID {id, 1}, under {parent, 1} (a root when parent is 0), of kind, from start
// to end seconds after t0.
func Add(td ptrace.Traces, t0 time.Time, service, name string, trace, id, parent byte, kind ptrace.SpanKind, start, end float64) ptrace.Span {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", service)
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{trace, 1})
	sp.SetSpanID(pcommon.SpanID{id, 1})
	if parent != 0 {
		sp.SetParentSpanID(pcommon.SpanID{parent, 1})
	}
	sp.SetName(name)
	sp.SetKind(kind)
	sp.SetStartTimestamp(At(t0, start))
	sp.SetEndTimestamp(At(t0, end))
	return sp
}
