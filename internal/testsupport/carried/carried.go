// Package carried reads the verdicts the orphan processor carries as orphanwatch.verdict events
// the way docs/verdicts.md says they are to be read: a deferred span takes the whole verdict an
// event carries for it (trace, span ID and kind), a part (a run's outcome, an edge) is added to
// the span it names.
package carried

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/internal/verdictattrs"
)

// Verdict is one carried verdict: the attributes of its event, and whether it is whole (it has
// a liveness or is detached) or a part (neither).
type Verdict struct {
	Attrs pcommon.Map
	Whole bool
}

// Verdicts are the carried verdicts not yet taken, by the key of the span they are for
// ([SpanKey]).
type Verdicts map[string][]Verdict

// Collect returns the verdicts the orphanwatch.verdict events of out carry.
func Collect(out []ptrace.Traces) Verdicts {
	v := Verdicts{}
	for _, td := range out {
		tdwalk.Spans(td, func(sp ptrace.Span) { v.add(sp.Events()) })
	}
	return v
}

func (v Verdicts) add(evs ptrace.SpanEventSlice) {
	for _, ev := range evs.All() {
		if ev.Name() != verdict.EventVerdict {
			continue
		}
		a := ev.Attributes()
		get := func(k string) string { val, _ := a.Get(k); return val.AsString() }
		_, hasLiveness := a.Get(verdict.AttrLiveness)
		_, hasDetached := a.Get(verdict.AttrDetached)
		key := get(verdict.AttrEventTraceID) + "/" + get(verdict.AttrEventSpanID) + "/" + get(verdict.AttrEventSpanKind)
		v[key] = append(v[key], Verdict{a, hasLiveness || hasDetached})
	}
}

// SpanKey is the key of sp's carried verdicts: trace ID, span ID and kind, as the events name
// them.
func SpanKey(sp ptrace.Span) string {
	return sp.TraceID().String() + "/" + sp.SpanID().String() + "/" + verdictattrs.KindNames[sp.Kind()]
}

// Take passes put the orphanwatch.* attributes (but orphanwatch.span.*) of the verdicts carried
// for the span of key that it takes: every part, and one whole verdict when the span is
// deferred (the first of exact duplicates). It reports whether it took a whole verdict; what it
// takes is no longer in v.
func (v Verdicts) Take(key string, deferred bool, put func(name string, val pcommon.Value)) (tookWhole bool) {
	var rest []Verdict
	for _, c := range v[key] {
		if c.Whole && (!deferred || tookWhole) {
			rest = append(rest, c)
			continue
		}
		tookWhole = tookWhole || c.Whole
		c.Attrs.Range(func(name string, val pcommon.Value) bool {
			if strings.HasPrefix(name, "orphanwatch.") && !strings.HasPrefix(name, "orphanwatch.span.") {
				put(name, val)
			}
			return true
		})
	}
	if len(rest) > 0 {
		v[key] = rest
	} else {
		delete(v, key)
	}
	return tookWhole
}
