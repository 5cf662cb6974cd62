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
