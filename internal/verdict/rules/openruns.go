package rules

import (
	"sync"

	"github.com/orphanwatch/orphanwatch/internal/bounded"
	"github.com/orphanwatch/orphanwatch/internal/verdict/record"
)

// Open runs (memo.go's package comment): a run that is not over by the release's time stays
// open instead of taking an outcome (runOverAt, runOver); later attempts, released later or in
// another trace with the same idempotency key, continue it. Open runs are kept by RunID within MaxOpenRuns, the oldest
// closed first (its outcome carried, counted), and closed by Sweep once no attempt can join
// them any more (the moment runOverAt gave, OpenRun.overAt).

// RunID identifies an open run: within a trace, parent span and operation key; across traces,
// an attempt that carries an idempotency key joins the runs of its key, service and operation.
type RunID struct {
	t      record.TraceID
	parent record.SpanID
	op     uint64
	kind   uint64 // for keyed runs: hash of service, kind and name
}

// OpenRun is a run left open by a release.
type OpenRun struct {
	Trace    record.TraceID
	Last     record.Span // its final attempt so far
	Attempts int         // attempts so far
	base     int         // attempts before the first one of trace's own part of the run
	split    bool        // it began because the run before it was over
	Outcome  record.Outcome
	OK       bool  // an attempt succeeded (its final attempt is the first that did)
	end      int64 // the latest end among its attempts (unix ns)
	// OverAt: the collector's time (unix ns) after which the run is over while nothing of it
	// changes (runOverAt); Sweep closes it then.
	OverAt int64
}

// continuation is the open run an attempt group continues.
type continuation struct {
	prior      *OpenRun
	inDecision bool // the open run's attempts are among the decision's spans (the memo)
	offset     int  // attempts counted before the group's first
	split      bool
}

// RunIDOf is the open run of attempt s of trace t: by parent and operation within one trace;
// across traces for a keyed run or a delivery, by operation, service, name and kind.
func RunIDOf(t record.TraceID, s *record.Span) RunID {
	if s.KeyHash == 0 && !record.IsDelivery(s) {
		return RunID{t: t, parent: s.ParentID, op: OpKey(s)}
	}
	// FNV-1a (TargetHash) over service, 0xff, name, 0xff and the kind.
	h := record.NewTargetHash().Add(s.Service).AddByte(0xff).Add(s.Name).AddByte(0xff).AddByte(byte(s.Kind))
	return RunID{op: OpKey(s), kind: uint64(h)}
}

// runStep is step 9: the attempts are gathered (attemptsOf), then grouped into runs and each
// run decided (decideRuns). Within the time model, open runs bind traces (a key's attempts in
// several): the open-run table is locked (lockRuns) for the whole step, so that releases of two
// traces in different memo shards continue a run in turn; the run rules get it as a parameter
// and take no lock.
func (c *Rules) runStep(sc *scratch, state State, spans []record.Span, out []record.Verdict, st *record.Stats) {
	refs := c.attemptsOf(sc, spans, sc.nodes, out)
	if !sc.hasIn || len(refs) == 0 {
		c.decideRuns(sc, spans, sc.nodes, out, refs, LockedRuns{}, st)
		return
	}
	runs := state.LockRuns()
	defer runs.unlock()
	c.decideRuns(sc, spans, sc.nodes, out, refs, runs, st)
}

// LockedRuns is the open-run table with its lock (the correlator's relMu) held: the only way the
// run rules reach it (continuedRun, runStaysOpen, runClosed take one), so that the lock is taken
// by the time model around the run step (runStep), never by a rule. Got from lockRuns, given
// back with unlock; the zero value, in a decision of its own, is never used.
type LockedRuns struct {
	Open *bounded.Table[RunID, *OpenRun]
	Mu   *sync.Mutex
}

// unlock gives the open-run table back.
func (l LockedRuns) unlock() { l.Mu.Unlock() }

// get is the open run id, nil when none.
func (l LockedRuns) get(id RunID) *OpenRun {
	r, _ := l.Open.Get(id)
	return r
}

// drop forgets the open run id: it is continued, or closed, by the decision.
func (l LockedRuns) drop(id RunID) { l.Open.Delete(id) }

// keep makes o the open run id: the oldest open run is closed (carried) when MaxOpenRuns are
// kept (New).
func (l LockedRuns) keep(id RunID, o *OpenRun) { l.Open.Put(id, o) }

// continuedRun finds the open run the attempt group refs continues (nil in: none).
func continuedRun(in *DecisionIn, runs LockedRuns, spans []record.Span, refs []attemptRef) continuation {
	if in == nil {
		return continuation{}
	}
	first := &spans[refs[0].i]
	id := RunIDOf(in.Trace, first)
	prior := runs.get(id)
	if prior == nil {
		return continuation{}
	}
	own := false // the trace's own attempts of the run, released before, are in the decision again
	if prior.Trace == in.Trace {
		for _, r := range refs {
			if int(r.i) >= in.NOld {
				continue
			}
			if s := &spans[r.i]; s.SpanID == prior.Last.SpanID && s.Kind == prior.Last.Kind && s.TraceID == prior.Last.TraceID {
				return continuation{prior: prior, inDecision: true, offset: prior.base, split: prior.split}
			}
			own = true
		}
	}
	// Its final attempt left with an earlier release whose memo is gone, or came in another
	// trace: the group goes on from its count (from the attempts before the trace's own, when
	// those are in the decision again: a keyed run whose final attempt, the first that
	// succeeded, is another trace's), or begins a new run (decideRuns).
	runs.drop(id)
	if own {
		return continuation{prior: prior, offset: prior.base, split: prior.split}
	}
	return continuation{prior: prior, offset: prior.Attempts, split: prior.split}
}

// priorClosed: the open run prior is over, a new run began after it; its outcome leaves now
// (out: the decision's return).
func priorClosed(out *DecisionOut, prior *OpenRun) {
	carryRun(out, &prior.Last, prior.Outcome, prior.Attempts, prior.OK)
}

// carryRun carries the outcome of a run over whose final attempt s left before (PartRun), in
// the decision's return out.
func carryRun(out *DecisionOut, s *record.Span, outcome record.Outcome, attempts int, ok bool) {
	out.Carried = append(out.Carried, record.Carried{Span: record.CarriedOf(s), Part: record.PartRun,
		Verdict: record.Verdict{Outcome: outcome, RunAttempts: attempts, RunOK: ok}})
	if outcome == record.OutcomeUnknownRoot {
		out.Unknown++
	}
}

// runStaysOpen records the run whose final attempt so far is s as open: spans[last] of the
// decision, or (last -1) the final attempt of the open run it continues; r is the run so far,
// overAt when it is over (runOverAt).
func runStaysOpen(in *DecisionIn, runs LockedRuns, s *record.Span, last int32, total int, cont continuation, split bool, outcome record.Outcome, ok bool, r *runSoFar, overAt int64) {
	id := RunIDOf(in.Trace, s)
	o := runs.get(id)
	if o == nil {
		o = &OpenRun{}
		runs.keep(id, o) // the oldest open run is closed (carried) when MaxOpenRuns are kept
	}
	keep := o.Last.Extra
	sameLast := o.Last.SpanID == s.SpanID && o.Last.Kind == s.Kind && o.Last.TraceID == s.TraceID
	o.Trace, o.Last, o.Attempts, o.base, o.split, o.Outcome, o.OK, o.end, o.OverAt = in.Trace, *s, total, cont.offset, split, outcome, ok, r.end, overAt
	switch {
	case o.Last.Extra != nil:
	case sameLast:
		o.Last.Extra = keep
	case last >= 0 && int(last) >= in.NOld && in.Extra != nil:
		o.Last.Extra = in.Extra(int(last) - in.NOld)
	}
}

// runClosed: the run whose final attempt is spans[last] is over in this decision. When that
// attempt left earlier with the run open, the outcome is carried now (dout: the decision's
// return).
func runClosed(in *DecisionIn, runs LockedRuns, dout *DecisionOut, spans []record.Span, out []record.Verdict, run []int32, last int32) {
	if in == nil {
		return
	}
	s := &spans[last]
	id := RunIDOf(in.Trace, s)
	prior := runs.get(id)
	if prior == nil || prior.Trace != in.Trace {
		return
	}
	if !ownsPrior(spans, run, continuation{prior: prior, inDecision: true}) && inDecision(in, spans, prior) {
		return // the open run is a later run of the operation among the decision's spans, not this one
	}
	runs.drop(id)
	if int(last) < in.NOld && in.Emitted[last] && prior.Last.SpanID == s.SpanID && prior.Last.Kind == s.Kind && prior.Last.TraceID == s.TraceID {
		v := &out[last]
		// The open run's record of the attempt keeps the reader's Extra (the memo's keeps it
		// only for spans that left without a verdict).
		dout.Carried = append(dout.Carried, record.Carried{Span: record.CarriedOf(&prior.Last), Part: record.PartRun,
			Verdict: record.Verdict{Outcome: v.Outcome, RunAttempts: v.RunAttempts, RunOK: v.RunOK}})
	}
}

// inDecision: the open run's final attempt is among the decision's spans released before.
func inDecision(in *DecisionIn, spans []record.Span, prior *OpenRun) bool {
	for i := range in.NOld {
		if s := &spans[i]; s.SpanID == prior.Last.SpanID && s.Kind == prior.Last.Kind && s.TraceID == prior.Last.TraceID {
			return true
		}
	}
	return false
}
