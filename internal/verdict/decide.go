package verdict

import "github.com/orphanwatch/orphanwatch/internal/verdict/rules"

// Decide computes the verdict of every span of one trace, in the order given. spans should be
// all the spans of the trace that are held (a late span may come alone: it is judged against
// the retained root record). Decide changes nothing of spans but what they cache of their records
// (Span's classified records, written by the first rule that asks): two goroutines may not decide one slice
// of spans at once. Call Observe for the spans first.
func (c *Correlator) Decide(spans []Span) ([]Verdict, Stats) {
	return c.DecideInto(nil, spans)
}

// DecideInto is Decide writing the verdicts into dst's memory when it is large enough (then the
// result shares it; pass dst[:0] of a buffer reused across calls to save an allocation).
func (c *Correlator) DecideInto(dst []Verdict, spans []Span) ([]Verdict, Stats) {
	v, st, _ := c.rules.Decide(dst, spans, nil, rules.DecisionOut{}, c.ruleState())
	return v, st
}

// DecideAt is DecideInto for spans that come at now (unix ns, the caller's clock): a span
// ending beyond now plus FutureTolerance is malformed (InvalidEndInFuture). It marks such
// spans (Span.Future) in spans.
func (c *Correlator) DecideAt(dst []Verdict, spans []Span, now int64) ([]Verdict, Stats) {
	c.rules.MarkFuture(spans, now)
	v, st, _ := c.rules.Decide(dst, spans, nil, rules.DecisionOut{}, c.ruleState())
	return v, st
}
