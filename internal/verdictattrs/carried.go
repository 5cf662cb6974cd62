package verdictattrs

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Carried verdicts (docs/verdicts.md "When verdicts are decided"): a span that left the
// processor before its verdict was final carries orphanwatch.verdict.deferred = true and no
// other verdict; its verdict comes later as an orphanwatch.verdict event on another span of its
// trace (its root, or a carrier span made for the purpose). A span whose run stayed open left
// without its run's outcome, and a span whose caller arrived after it without its edge: those
// parts come later the same way. CarriedSet reads them back onto the spans they are for, as
// `orphanwatch analyze` reports them and the tests compare them; the orphanmetrics exporter
// counts the same events as the spans they are for (internal/orphanmetrics, carried.go).

// CarriedSet holds the orphanwatch.verdict events of an output, by the span they are for, until
// Final takes them.
type CarriedSet map[carriedKey][]carriedVerdict

// carriedKey names a span as an event does: trace ID, span ID (lowercase hex) and kind (a
// client and a server half of one Zipkin RPC share a span ID).
type carriedKey struct{ trace, span, kind string }

type carriedVerdict struct {
	attrs pcommon.Map
	part  bool // a run's outcome or an edge alone, not a whole verdict
}

// CollectCarried collects the orphanwatch.verdict events of out. The attribute maps it keeps
// are out's: out must not change while the set is read.
func CollectCarried(out []ptrace.Traces) CarriedSet {
	cs := CarriedSet{}
	for _, td := range out {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					cs.collect(sp)
				}
			}
		}
	}
	return cs
}

func (cs CarriedSet) collect(sp ptrace.Span) {
	for _, ev := range sp.Events().All() {
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
}

func str(a pcommon.Map, k string) string {
	if v, ok := a.Get(k); ok {
		return v.AsString()
	}
	return ""
}

// IsCarrier tells a carrier span (orphanwatch.carrier = true), which the processor made to
// carry verdicts: not a span of its input.
func IsCarrier(sp ptrace.Span) bool {
	v, ok := sp.Attributes().Get(verdict.AttrCarrier)
	return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
}

// Final is a span's final verdict, read by CarriedSet.Final.
type Final struct {
	// Attrs are the span's own attributes when nothing was carried for it, else a copy with
	// what was carried written in and the deferred mark removed.
	Attrs pcommon.Map
	// Carried tells whether anything was carried for the span (Attrs is then a copy).
	Carried bool
	// Deferred tells the span left marked orphanwatch.verdict.deferred; Whole, that a whole
	// carried verdict was taken for it. A correct output has the one exactly when the other.
	Deferred, Whole bool
}

// Final returns sp's final verdict: for a deferred span the first whole verdict carried for it
// that is left, and the parts carried for it (each taken by the first span with the IDs they
// name). What it takes is gone from cs. sp is not changed.
func (cs CarriedSet) Final(sp ptrace.Span) Final {
	attrs := sp.Attributes()
	f := Final{Attrs: attrs}
	if v, ok := attrs.Get(verdict.AttrDeferred); ok && v.Type() == pcommon.ValueTypeBool && v.Bool() {
		f.Deferred = true
	}
	if len(cs) == 0 {
		return f
	}
	k := carriedKey{sp.TraceID().String(), sp.SpanID().String(), kindName(sp.Kind())}
	list, ok := cs[k]
	if !ok {
		return f
	}
	var rest []carriedVerdict
	for _, c := range list {
		if !c.part && (!f.Deferred || f.Whole) {
			rest = append(rest, c)
			continue
		}
		if !f.Carried {
			f.Attrs = pcommon.NewMap()
			attrs.CopyTo(f.Attrs)
			f.Attrs.Remove(verdict.AttrDeferred)
			f.Carried = true
		}
		f.Whole = f.Whole || !c.part
		c.attrs.Range(func(key string, v pcommon.Value) bool {
			if strings.HasPrefix(key, "orphanwatch.") && !strings.HasPrefix(key, "orphanwatch.span.") {
				v.CopyTo(f.Attrs.PutEmpty(key))
			}
			return true
		})
	}
	if len(rest) > 0 {
		cs[k] = rest
	} else {
		delete(cs, k)
	}
	return f
}

// Left returns the spans (trace/span/kind) that verdicts were carried for and that no Final
// took: none in a correct output, once Final has read all its spans.
func (cs CarriedSet) Left() []string {
	var out []string
	for k := range cs {
		out = append(out, k.trace+"/"+k.span+"/"+k.kind)
	}
	return out
}

// kindName is k as the processor names it in orphanwatch.span.kind.
func kindName(k ptrace.SpanKind) string {
	if int(k) >= 0 && int(k) < len(KindNames) {
		return KindNames[k]
	}
	return "unspecified"
}
