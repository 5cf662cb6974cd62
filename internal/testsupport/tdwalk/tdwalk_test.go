package tdwalk

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestSpans: every span of every scope of every resource, in order, with its resource.
func TestSpans(t *testing.T) {
	td := ptrace.NewTraces()
	for _, svc := range []string{"a", "b"} {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", svc)
		for s := range 2 {
			spans := rs.ScopeSpans().AppendEmpty().Spans()
			for n := range 2 {
				spans.AppendEmpty().SetName(fmt.Sprintf("%s%d%d", svc, s, n))
			}
		}
	}
	td.ResourceSpans().AppendEmpty() // no scopes
	var names, services []string
	Spans(td, func(sp ptrace.Span) { names = append(names, sp.Name()) })
	SpansWithResource(td, func(r pcommon.Resource, _ ptrace.Span) {
		v, _ := r.Attributes().Get("service.name")
		services = append(services, v.Str())
	})
	assert.Equal(t, []string{"a00", "a01", "a10", "a11", "b00", "b01", "b10", "b11"}, names)
	assert.Equal(t, []string{"a", "a", "a", "a", "b", "b", "b", "b"}, services)
}

// TestByEnd: spans grouped by end time, earliest first and no end time before all, each group
// in the Traces' order, and each span sent with its own resource and scope.
func TestByEnd(t *testing.T) {
	td := ptrace.NewTraces()
	for i, svc := range []string{"a", "b"} {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", svc)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("scope-" + svc)
		for n, end := range []pcommon.Timestamp{30, 10, 0, 30} {
			sp := ss.Spans().AppendEmpty()
			sp.SetName(fmt.Sprintf("%s%d", svc, n))
			sp.SetEndTimestamp(end + pcommon.Timestamp(i)*10)
		}
	}
	var ends []pcommon.Timestamp
	var names [][]string
	for _, e := range ByEnd(td) {
		ends = append(ends, e.End)
		var group []string
		for _, f := range Flatten(e.Traces()) {
			svc, _ := f.RS.Resource().Attributes().Get("service.name")
			assert.Equal(t, "scope-"+svc.Str(), f.SS.Scope().Name())
			group = append(group, f.Span.Name())
		}
		names = append(names, group)
	}
	assert.Equal(t, []pcommon.Timestamp{0, 10, 20, 30, 40}, ends)
	assert.Equal(t, [][]string{{"a2"}, {"a1", "b2"}, {"b1"}, {"a0", "a3"}, {"b0", "b3"}}, names)
}

// TestRemoveSpans: the spans dropped go, and so do the scopes and resources left empty; the
// others stay as they are, changed by drop where it changed them.
func TestRemoveSpans(t *testing.T) {
	td := ptrace.NewTraces()
	for _, svc := range []string{"a", "b"} {
		rs := td.ResourceSpans().AppendEmpty()
		for s := range 2 {
			spans := rs.ScopeSpans().AppendEmpty().Spans()
			for n := range 2 {
				spans.AppendEmpty().SetName(fmt.Sprintf("%s%d%d", svc, s, n))
			}
		}
	}
	RemoveSpans(td, func(sp ptrace.Span) bool {
		sp.Attributes().PutBool("seen", true)
		return sp.Name()[0] == 'b' || sp.Name()[1] == '1'
	})
	var names []string
	Spans(td, func(sp ptrace.Span) {
		names = append(names, sp.Name())
		_, seen := sp.Attributes().Get("seen")
		assert.True(t, seen, sp.Name())
	})
	assert.Equal(t, []string{"a00", "a01"}, names)
	assert.Equal(t, 1, td.ResourceSpans().Len())
	assert.Equal(t, 1, td.ResourceSpans().At(0).ScopeSpans().Len())
}
