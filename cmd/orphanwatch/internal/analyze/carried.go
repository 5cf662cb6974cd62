package analyze

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/internal/verdictattrs"
)

// Carried verdicts (docs/verdicts.md "When verdicts are decided"): a span that left the
// processor before its verdict was final carries orphanwatch.verdict.deferred = true and no
// other verdict; its verdict comes later as an orphanwatch.verdict event on another span of its
// trace (its root, or a carrier span made for the purpose). A span whose run stayed open left
// without its run's outcome, and a span whose caller arrived after it without its edge: those
// parts come later the same way. The report reads each span's final verdict: the whole
// carried verdict on a deferred span, the parts added to the span they name. The
// orphanmetrics exporter counts the same events as the spans they are for (carried.go there),
// so the report and --metrics agree.

// carriedSet holds the orphanwatch.verdict events of an output, by the span they are for.
type carriedSet map[carriedKey][]carriedVerdict

// carriedKey names a span as an event does: trace ID, span ID (lowercase hex) and kind (a
// client and a server half of one Zipkin RPC share a span ID).
type carriedKey struct{ trace, span, kind string }

type carriedVerdict struct {
	attrs pcommon.Map
	part  bool // a run's outcome or an edge alone, not a whole verdict
}

// eventKind is k as the processor names it in orphanwatch.span.kind.
func eventKind(k ptrace.SpanKind) string {
	if int(k) >= 0 && int(k) < len(verdictattrs.KindNames) {
		return verdictattrs.KindNames[k]
	}
	return "unspecified"
}

// carriedVerdicts collects the orphanwatch.verdict events of out.
func carriedVerdicts(out []ptrace.Traces) carriedSet {
	cs := carriedSet{}
	for _, td := range out {
		forEachSpan(td, func(_ pcommon.Resource, sp ptrace.Span) {
			evs := sp.Events()
			for i := range evs.Len() {
				ev := evs.At(i)
				if ev.Name() != verdict.EventVerdict {
					continue
				}
				a := ev.Attributes()
				k := carriedKey{str(a, verdict.AttrEventTraceID), str(a, verdict.AttrEventSpanID), str(a, verdict.AttrEventSpanKind)}
				// A whole verdict has a liveness or is detached; a part has neither.
				_, live := a.Get(verdict.AttrLiveness)
				_, detached := a.Get(verdict.AttrDetached)
				cs[k] = append(cs[k], carriedVerdict{attrs: a, part: !live && !detached})
			}
		})
	}
	return cs
}

func str(a pcommon.Map, k string) string {
	if v, ok := a.Get(k); ok {
		return v.AsString()
	}
	return ""
}

// isCarrier tells a carrier span (orphanwatch.carrier = true), which is not a span of the input.
func isCarrier(sp ptrace.Span) bool {
	v, ok := sp.Attributes().Get(verdict.AttrCarrier)
	return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
}

// final returns sp's final verdict attributes and whether anything of them was carried: sp's
// own attributes when nothing was carried for it, else a copy with the carried verdict (for a
// deferred span: one whole verdict, the first left) and parts (each taken by the first span
// with the IDs they name) written in and the deferred mark removed. The output is not changed:
// it is what the exporter counts.
func (cs carriedSet) final(sp ptrace.Span) (pcommon.Map, bool) {
	attrs := sp.Attributes()
	deferred := false
	if v, ok := attrs.Get(verdict.AttrDeferred); ok && v.Type() == pcommon.ValueTypeBool && v.Bool() {
		deferred = true
	}
	if len(cs) == 0 {
		return attrs, false
	}
	k := carriedKey{sp.TraceID().String(), sp.SpanID().String(), eventKind(sp.Kind())}
	list, ok := cs[k]
	if !ok {
		return attrs, false
	}
	var (
		m      pcommon.Map
		rest   []carriedVerdict
		took   bool
		copied bool
	)
	for _, c := range list {
		if !c.part && (!deferred || took) {
			rest = append(rest, c)
			continue
		}
		if !copied {
			m = pcommon.NewMap()
			attrs.CopyTo(m)
			m.Remove(verdict.AttrDeferred)
			copied = true
		}
		took = took || !c.part
		c.attrs.Range(func(key string, v pcommon.Value) bool {
			if strings.HasPrefix(key, "orphanwatch.") && !strings.HasPrefix(key, "orphanwatch.span.") {
				v.CopyTo(m.PutEmpty(key))
			}
			return true
		})
	}
	if len(rest) > 0 {
		cs[k] = rest
	} else {
		delete(cs, k)
	}
	if !copied {
		return attrs, false
	}
	return m, true
}
