package analyze

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/observe"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/internal/verdictattrs"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor"
)

// annotator is the observer's sink here: it writes each verdict onto the span it is for, in
// the analysed output, as the orphan processor writes it on the spans it passes on (a carried
// part of a verdict, a run's outcome or an edge, added to the span's own). The analysis keeps
// every span anyway (it reports on them); the collector's observing exporter keeps none.
type annotator struct {
	// spans are the spans of each trace ID, span ID and kind, in arrival order (duplicates
	// share a key), and how many of them have had their whole verdict.
	spans map[spanKey]*sameID
}

// sameID is the spans sharing one key.
type sameID struct {
	spans []ptrace.Span
	whole int
}

// spanKey names a span as a carried verdict does.
type spanKey struct {
	trace verdict.TraceID
	span  verdict.SpanID
	kind  verdict.Kind
}

func newAnnotator() *annotator { return &annotator{spans: map[spanKey]*sameID{}} }

// index makes td's spans findable by the verdicts decided after they were handed over.
func (a *annotator) index(td ptrace.Traces) {
	forEachSpan(td, func(_ pcommon.Resource, sp ptrace.Span) {
		k := spanKey{verdict.TraceID(sp.TraceID()), verdict.SpanID(sp.SpanID()), verdict.Kind(sp.Kind())}
		s := a.spans[k]
		if s == nil {
			s = &sameID{}
			a.spans[k] = s
		}
		s.spans = append(s.spans, sp)
	})
}

// Resource: nothing.
func (a *annotator) Resource(pcommon.Resource) any { return nil }

// Keep: nothing, the span stays in the output.
func (a *annotator) Keep(any, ptrace.Span) any { return nil }

// Decided writes v on sp.
func (a *annotator) Decided(_ any, sp ptrace.Span, _ *verdict.Span, v *verdict.Verdict) {
	verdictattrs.Write(sp.Attributes(), v)
}

// Later writes a verdict decided after its span was handed over onto that span.
func (a *annotator) Later(cv *verdict.Carried) {
	kind := cv.Span.Kind
	if kind > verdict.KindConsumer {
		kind = verdict.KindUnspecified
	}
	same := a.spans[spanKey{cv.Span.TraceID, cv.Span.SpanID, kind}]
	if same == nil {
		return
	}
	// A whole verdict goes to the next span of the key that has none (duplicates are decided
	// in arrival order); a part of a verdict to the first.
	sp := same.spans[0]
	if cv.Part == verdict.PartAll {
		if same.whole >= len(same.spans) {
			return
		}
		sp = same.spans[same.whole]
		same.whole++
	}
	verdictattrs.WritePart(sp.Attributes(), cv.Part, &cv.Verdict)
}

// replayClock is the file's clock: it moves as the spans' end times do.
type replayClock struct{ now time.Time }

func (c *replayClock) Now() time.Time { return c.now }

// advance moves the clock to at, ticking the observer at every moment something falls due on
// the way (a trace's wait, a held root) before at. What falls due at at itself is decided by
// the next Tick, after the spans arriving at at joined their traces (as the processor's replay
// takes a batch in before it fires the timers of that moment).
func (c *replayClock) advance(o *observe.Observer, at time.Time) {
	for {
		d := o.NextDue()
		if d.IsZero() || !d.Before(at) {
			break
		}
		if d.After(c.now) {
			c.now = d
		}
		o.Tick()
	}
	if at.After(c.now) {
		c.now = at
	}
}

// drain lets time run on, a second at a time (or to the next due moment), until the observer
// owes nothing: every run closed, every trace decided. It is bounded by the longest the time
// model keeps anything (the longest of decision_wait, chain_wait and abandoned_root_hold, plus
// max_request_duration + run_timeout + the clock-skew tolerance, and two sweeps: the
// processor's replay's bound), after which Shutdown decides what is left.
func (c *replayClock) drain(o *observe.Observer, cfg *orphanprocessor.Config) {
	limit := c.now.Add(cfg.LongestWait() + cfg.MaxRequestDuration + cfg.RunTimeout + cfg.ClockSkewTolerance + 2*observe.SweepInterval)
	for o.Owed() && c.now.Before(limit) {
		next := c.now.Add(time.Second)
		if d := o.NextDue(); !d.IsZero() && d.After(c.now) && d.Before(next) {
			next = d
		}
		c.advance(o, next)
		o.Tick()
	}
}
