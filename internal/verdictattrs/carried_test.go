package verdictattrs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// TestCarriedFinal: a deferred span takes the first whole verdict carried for it and the
// parts; a span not deferred takes the parts only (a whole verdict for it is left); an event for
// a span that is not read is left; the spans themselves are not changed.
func TestCarriedFinal(t *testing.T) {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	tid := pcommon.TraceID{1}
	span := func(id byte, kind ptrace.SpanKind) ptrace.Span {
		sp := spans.AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetSpanID(pcommon.SpanID{id})
		sp.SetKind(kind)
		return sp
	}
	root := span(1, ptrace.SpanKindServer)
	deferred := span(2, ptrace.SpanKindClient)
	deferred.Attributes().PutBool(verdict.AttrDeferred, true)
	plain := span(3, ptrace.SpanKindClient)
	plain.Attributes().PutStr(verdict.AttrLiveness, "live")
	carrier := span(4, ptrace.SpanKindInternal)
	carrier.Attributes().PutBool(verdict.AttrCarrier, true)
	event := func(on ptrace.Span, id byte, kind string, set func(pcommon.Map)) {
		a := on.Events().AppendEmpty()
		a.SetName(verdict.EventVerdict)
		a.Attributes().PutStr(verdict.AttrEventTraceID, tid.String())
		a.Attributes().PutStr(verdict.AttrEventSpanID, pcommon.SpanID{id}.String())
		a.Attributes().PutStr(verdict.AttrEventSpanKind, kind)
		set(a.Attributes())
	}
	event(root, 2, "client", func(m pcommon.Map) { m.PutStr(verdict.AttrLiveness, "orphaned") })
	event(root, 2, "client", func(m pcommon.Map) { m.PutStr(verdict.AttrLiveness, "live") }) // a second whole one: left
	event(carrier, 2, "client", func(m pcommon.Map) { m.PutStr(verdict.AttrRunOutcome, "delivered_to_nobody") })
	event(root, 3, "client", func(m pcommon.Map) { m.PutStr(verdict.AttrLiveness, "orphaned") }) // not deferred: left
	event(root, 3, "client", func(m pcommon.Map) { m.PutStr(verdict.AttrCallerService, "gateway") })
	event(root, 3, "server", func(m pcommon.Map) { m.PutStr(verdict.AttrCallerService, "x") }) // another kind: left
	event(root, 9, "client", func(m pcommon.Map) { m.PutStr(verdict.AttrLiveness, "live") })   // no such span: left

	cs := CollectCarried([]ptrace.Traces{td})
	assert.True(t, IsCarrier(carrier))
	assert.False(t, IsCarrier(root))

	f := cs.Final(deferred)
	assert.True(t, f.Deferred)
	assert.True(t, f.Whole)
	assert.True(t, f.Carried)
	assert.Equal(t, map[string]any{verdict.AttrLiveness: "orphaned", verdict.AttrRunOutcome: "delivered_to_nobody"}, f.Attrs.AsRaw())
	assert.Equal(t, map[string]any{verdict.AttrDeferred: true}, deferred.Attributes().AsRaw(), "the span is not changed")

	f = cs.Final(plain)
	assert.False(t, f.Deferred)
	assert.False(t, f.Whole)
	assert.True(t, f.Carried)
	assert.Equal(t, map[string]any{verdict.AttrLiveness: "live", verdict.AttrCallerService: "gateway"}, f.Attrs.AsRaw())

	f = cs.Final(root)
	assert.False(t, f.Carried)
	assert.Equal(t, root.Attributes().AsRaw(), f.Attrs.AsRaw())

	want := []string{tid.String() + "/" + pcommon.SpanID{2}.String() + "/client", tid.String() + "/" + pcommon.SpanID{3}.String() + "/client",
		tid.String() + "/" + pcommon.SpanID{3}.String() + "/server", tid.String() + "/" + pcommon.SpanID{9}.String() + "/client"}
	assert.ElementsMatch(t, want, cs.Left())
}
