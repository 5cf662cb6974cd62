package e2e

import (
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
)

// ShiftTraces moves the times of td (span start and end, event times) so that its earliest span
// start falls on start, keeping every interval. Zero timestamps stay zero, so malformed input
// stays malformed.
func ShiftTraces(td ptrace.Traces, start time.Time) {
	var earliest pcommon.Timestamp
	tdwalk.Spans(td, func(s ptrace.Span) {
		if st := s.StartTimestamp(); st != 0 && (earliest == 0 || st < earliest) {
			earliest = st
		}
	})
	if earliest == 0 {
		return
	}
	delta := int64(start.UnixNano()) - int64(earliest)
	shift := func(ts pcommon.Timestamp) pcommon.Timestamp {
		if ts == 0 {
			return 0
		}
		return pcommon.Timestamp(int64(ts) + delta)
	}
	tdwalk.Spans(td, func(s ptrace.Span) {
		s.SetStartTimestamp(shift(s.StartTimestamp()))
		s.SetEndTimestamp(shift(s.EndTimestamp()))
		for i := 0; i < s.Events().Len(); i++ {
			e := s.Events().At(i)
			e.SetTimestamp(shift(e.Timestamp()))
		}
	})
}

// SplitTraces moves the spans for which take returns true out of td into a new Traces (same
// resources and scopes); td keeps the others.
func SplitTraces(td ptrace.Traces, take func(ptrace.Span) bool) ptrace.Traces {
	out := ptrace.NewTraces()
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		var ors ptrace.ResourceSpans
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			var oss ptrace.ScopeSpans
			ss.Spans().RemoveIf(func(s ptrace.Span) bool {
				if !take(s) {
					return false
				}
				if ors == (ptrace.ResourceSpans{}) {
					ors = out.ResourceSpans().AppendEmpty()
					rs.Resource().CopyTo(ors.Resource())
				}
				if oss == (ptrace.ScopeSpans{}) {
					oss = ors.ScopeSpans().AppendEmpty()
					ss.Scope().CopyTo(oss.Scope())
				}
				s.CopyTo(oss.Spans().AppendEmpty())
				return true
			})
		}
	}
	return out
}

// PostTraces sends td as OTLP/JSON to the collector's OTLP/HTTP receiver and fails the test
// unless it is accepted.
func (c *Collector) PostTraces(t testing.TB, td ptrace.Traces) {
	t.Helper()
	body, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	if code := Post(t, c.OTLPHTTP, "/v1/traces", "application/json", body); code != http.StatusOK {
		t.Fatalf("POST /v1/traces: HTTP %d", code)
	}
}
