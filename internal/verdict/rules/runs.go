package rules

import (
	"cmp"
	"math"
	"slices"

	"github.com/orphanwatch/orphanwatch/internal/verdict/record"
)

// RunKey identifies the attempts of one logical operation: same parent span, same operation key.
type RunKey struct {
	Parent record.SpanID
	Op     uint64
}

// OpKey is the hashed idempotency key where there is one, else a delivery's message identity,
// otherwise name, kind and target.
func OpKey(s *record.Span) uint64 {
	if s.KeyHash != 0 {
		return s.KeyHash
	}
	if s.Kind == record.KindConsumer && s.MessageHash != 0 {
		return s.MessageHash
	}
	// FNV-1a (TargetHash) over name, {0, kind, 0} and the target's hash, without allocating.
	h := record.NewTargetHash().Add(s.Name).AddByte(0).AddByte(byte(s.Kind)).AddByte(0)
	if t := uint64(s.Target); t != 0 {
		for range 8 {
			h = h.AddByte(byte(t))
			t >>= 8
		}
	}
	return uint64(h) | 1
}

// attemptRef is one attempt span and the key of the run it belongs to.
type attemptRef struct {
	key RunKey
	i   int32
}

// explicitRetry reports whether the span says itself that it repeats an earlier attempt.
func explicitRetry(s *record.Span) bool { return s.ResendCount >= 1 || s.Attempt >= 2 }

// goesOnAcrossTraces: a run whose attempts carry an idempotency key, or deliveries of one
// message, may go on in another trace (a client re-sending because it never got the answer, a
// queue redelivering): neither a success nor its loop's end ends it (DESIGN.md "Run outcomes").
func goesOnAcrossTraces(s *record.Span) bool { return s.KeyHash != 0 || record.IsDelivery(s) }

// runSoFar is what the rules of a run's end read of a run as its attempts are gathered in
// start order (decideRuns), and of a run left open (OpenRun).
type runSoFar struct {
	attempts int   // attempts so far, from the run's first (an open run's earlier ones counted)
	end      int64 // the latest end among them (unix ns)
	ok       bool  // one of them succeeded
	// loopEnd is the end of the attempts' parent span (their loop), 0 when it is not in the
	// decision.
	loopEnd int64
	members []int32      // its attempts in this decision
	prior   *record.Span // the final attempt of the open run it continues, when that is not in the decision
	// followed: a later attempt of the operation began a new run after it (startsNewRun).
	followed bool
	// before: it was decided over in an earlier release (decidedBefore).
	before bool
}

// add counts attempt i in the run.
func (c *Rules) add(r *runSoFar, spans []record.Span, i int32) {
	s := &spans[i]
	r.attempts++
	r.end = max(r.end, s.End)
	r.ok = r.ok || c.Signals.AttemptResult(s) == record.ResultOK
	r.members = append(r.members, i)
}

// attemptsOf lists the attempt spans of the decision with their run keys (sc.attempts). A span
// there only for its context (an incremental decision's ancestor) is marked an attempt, its run
// decided before, and not listed.
func (c *Rules) attemptsOf(sc *scratch, spans []record.Span, nodes []Node, out []record.Verdict) []attemptRef {
	in := sc.input()
	refs := sc.attempts[:0]
	for i := range spans {
		s := &spans[i]
		if !nodes[i].Valid || nodes[i].IsRoot && !record.IsDelivery(s) || !c.Signals.IsAttempt(s) {
			continue // roots are never attempts, but for a delivery that begins a trace
		}
		if in != nil && in.Context != nil && in.Context[i] {
			// Read only for its context (an incremental decision's ancestor): an attempt, its
			// run decided before.
			out[i].Attempt = 1
			continue
		}
		refs = append(refs, attemptRef{RunKey{Parent: s.ParentID, Op: OpKey(s)}, int32(i)})
	}
	sc.attempts = refs
	return refs
}

// decideRuns groups the attempts refs into runs and decides each run's outcome (DESIGN.md "Run
// outcomes"; docs/verdicts.md "How attempts group into runs"). runs is the open-run table,
// locked by the caller (runStep), within the time model; unused in a decision of its own.
func (c *Rules) decideRuns(sc *scratch, spans []record.Span, nodes []Node, out []record.Verdict, refs []attemptRef, runs LockedRuns, st *record.Stats) {
	in := sc.input()
	// Group the attempts by run key, each group in start order (startOrder). Groups share no
	// span, so the order in which they are taken does not matter.
	slices.SortFunc(refs, func(a, b attemptRef) int {
		if a.key.Parent != b.key.Parent {
			return cmp.Compare(string(a.key.Parent[:]), string(b.key.Parent[:]))
		}
		if a.key.Op != b.key.Op {
			return cmp.Compare(a.key.Op, b.key.Op)
		}
		return startOrder(spans, a.i, b.i)
	})
	run := sc.run[:0]
	for g := 0; g < len(refs); {
		e := g + 1
		for e < len(refs) && refs[e].key == refs[g].key {
			e++
		}
		run = run[:0]
		loopEnd := loopEndOf(spans, nodes, refs[g].i)
		// The run this group continues, when an earlier decision left one open (memo.go).
		cont := continuedRun(in, runs, spans, refs[g:e])
		split := cont.split // the run began because the one before it was over
		r := runSoFar{attempts: cont.offset, loopEnd: loopEnd, members: sc.members[:0]}
		if p := cont.prior; p != nil && !cont.inDecision {
			r.end, r.ok, r.prior = p.end, p.OK, &p.Last
		}
		for _, ref := range refs[g:e] {
			if (len(run) > 0 || r.prior != nil) && c.startsNewRun(spans, &r, &spans[ref.i]) {
				if len(run) == 0 {
					priorClosed(&sc.out, cont.prior) // the open run was over: its outcome leaves now
				} else {
					r.followed = true // cur began a new run: this one is over
					if ownsPrior(spans, run, cont) {
						c.closeRun(sc, runs, spans, nodes, out, run, split, cont, &r, st)
						cont = continuation{split: true}
					} else {
						// The open run among the decision's spans is a later run of the group:
						// the continuation is that run's.
						c.closeRun(sc, runs, spans, nodes, out, run, split, continuation{split: cont.split}, &r, st)
						cont.split = true
					}
				}
				run = run[:0]
				split = true
				r = runSoFar{loopEnd: loopEnd, members: r.members[:0]}
			}
			run = append(run, ref.i)
			c.add(&r, spans, ref.i)
		}
		c.closeRun(sc, runs, spans, nodes, out, run, split, cont, &r, st)
		sc.members = r.members[:0]
		g = e
	}
	sc.run = run
}

// ownsPrior: the run's attempts hold the final attempt of the open run the group continues
// (when that run's attempts are among the decision's spans), or there is none such.
func ownsPrior(spans []record.Span, run []int32, cont continuation) bool {
	if cont.prior == nil || !cont.inDecision {
		return true
	}
	for _, i := range run {
		if s := &spans[i]; s.SpanID == cont.prior.Last.SpanID && s.Kind == cont.prior.Last.Kind && s.TraceID == cont.prior.Last.TraceID {
			return true
		}
	}
	return false
}

// loopEndOf is the end of attempt i's parent span (the loop around its run's attempts), 0 when
// that span is not in the decision.
func loopEndOf(spans []record.Span, nodes []Node, i int32) int64 {
	if p := nodes[i].Parent; p >= 0 && nodes[p].timed {
		return spans[p].End
	}
	return 0
}

// startsNewRun decides whether attempt cur, the next by start, begins a new run after the run
// r (DESIGN.md "Run outcomes": when a run is over; docs/verdicts.md "How attempts group into
// runs"), one named step per rule, in this order:
//  1. attemptsExhausted: max_attempts is reached;
//  2. noAttemptWithin: cur started more than run_timeout after the run's attempts ended;
//  3. triedInParallel: cur overlaps the run's attempts: it joins when it is a try of the same
//     operation (hedged), else it is parallel work;
//  4. succeeded: an attempt of the run succeeded, and the run does not go on across traces;
//  5. loopEndedBefore: the loop's span (the attempts' parent) ended after the run's attempts
//     ended and before cur started, for a run that does not go on across traces.
//
// Otherwise cur joins: an error, retryable or not, and a recorded cancellation do not end a
// run that another try follows; a keyed re-send and a redelivery join after a success.
func (c *Rules) startsNewRun(spans []record.Span, r *runSoFar, cur *record.Span) bool {
	switch {
	case c.attemptsExhausted(r.attempts): // 1.
		return true
	case c.noAttemptWithin(r, cur): // 2.
		return true
	case cur.Start < r.end: // 3.
		return !c.hedged(spans, r, cur)
	case r.ok && !goesOnAcrossTraces(cur): // 4.
		return true
	case loopEndedBefore(r, cur) && !goesOnAcrossTraces(cur): // 5.
		return true
	}
	return false
}

// noAttemptWithin: rule 2, cur started more than run_timeout (0: never) after the run's
// attempts ended.
func (c *Rules) noAttemptWithin(r *runSoFar, cur *record.Span) bool {
	return c.cfg.RunTimeout > 0 && cur.Start-r.end > int64(c.cfg.RunTimeout)
}

// loopEndedBefore: rule 5, the run was over when its loop's span ended, after every attempt of
// the run ended (loopEndedAfter), and cur started after that: a new run under the same parent.
// A try that started while the loop's span was still open joins (the loop outlives its parent).
func loopEndedBefore(r *runSoFar, cur *record.Span) bool {
	return loopEndedAfter(r) && cur.Start >= r.loopEnd
}

// loopEndedAfter: the attempts' parent span is in the decision and ended after every attempt of
// the run so far ended (DESIGN.md "Run outcomes": the loop ended after the final attempt).
func loopEndedAfter(r *runSoFar) bool {
	return r.loopEnd != 0 && r.loopEnd >= r.end
}

// hedged: rule 3, cur, overlapping the run's attempts, is a try of the same operation (DESIGN.md
// "Words": attempt; "Run outcomes": tries of one operation that overlap in time are one run): it
// says it repeats an attempt (resend count, attempt attribute, gRPC's
// grpc-previous-rpc-attempts, Envoy's x-envoy-attempt-count), it carries the run's idempotency
// key or is a redelivery of its message, or it raced an attempt of the run as a hedge
// (hedgedPair). Other overlapping same-name siblings are parallel work.
func (c *Rules) hedged(spans []record.Span, r *runSoFar, cur *record.Span) bool {
	if explicitRetry(cur) || goesOnAcrossTraces(cur) {
		return true
	}
	overlaps := func(a *record.Span) bool { return a.Start < cur.End && cur.Start < a.End }
	if r.prior != nil && overlaps(r.prior) && c.hedgedPair(r.prior, cur) {
		return true
	}
	for _, m := range r.members {
		if a := &spans[m]; overlaps(a) && c.hedgedPair(a, cur) {
			return true
		}
	}
	return false
}

// hedgedPair reports whether two overlapping tries of one operation (same parent, name and
// target, or key) raced as hedges: one succeeded and its own client cancelled the other, before
// that success or within cancellation.grace after it, whichever ended first (DESIGN.md "Words":
// attempt). Without that cancellation, overlapping siblings are genuinely parallel work.
func (c *Rules) hedgedPair(a, b *record.Span) bool {
	won := func(w, l *record.Span) bool {
		return c.Signals.AttemptResult(w) == record.ResultOK && c.Signals.CancelSignal(l) && l.End-w.End <= int64(c.cfg.CancellationGrace)
	}
	return won(a, b) || won(b, a)
}

// finalAttempt is the attempt whose ending is the run's (DESIGN.md "Words": run; "Run
// outcomes": decided from the run's final attempt): the first that succeeded (the earliest to
// end among those that succeeded), else the last to end (of two that ended together, the later
// to start). Hedged tries that lost, and keyed re-sends after a success, are never final.
func (c *Rules) finalAttempt(spans []record.Span, run []int32) int32 {
	winner, latest := int32(-1), run[0]
	for _, i := range run {
		s := &spans[i]
		if c.Signals.AttemptResult(s) == record.ResultOK && (winner < 0 || s.End < spans[winner].End) {
			winner = i
		}
		if s.End >= spans[latest].End {
			latest = i
		}
	}
	if winner >= 0 {
		return winner
	}
	return latest
}

// priorStaysFinal: the final attempt of the open run the attempts continue (prior, in another
// trace or an earlier release whose memo is gone) stays the run's final attempt against cand,
// the final attempt among the attempts of this decision: it succeeded, or neither did and it
// ended later.
func (c *Rules) priorStaysFinal(prior *OpenRun, spans []record.Span, cand int32) bool {
	if prior.OK {
		return true
	}
	return c.Signals.AttemptResult(&spans[cand]) != record.ResultOK && prior.Last.End > spans[cand].End
}

// closeRun numbers the attempts of one run and, when the run is over, writes its outcome on the
// final attempt. Attempts are numbered by what they say (resend_count + 1, the attempt
// attribute), so that a run whose first attempts were not seen keeps their numbers; a run that
// began because the one before it was over (split) numbers its attempts from 1, its own; a run
// continued from an earlier decision (cont) goes on from that decision's count. What the time
// model needs (runs left open, outcomes carried) goes to the decision's return (sc.out) and to
// the open-run table runs (locked by runStep).
func (c *Rules) closeRun(sc *scratch, runs LockedRuns, spans []record.Span, nodes []Node, out []record.Verdict, run []int32, split bool, cont continuation, r *runSoFar, st *record.Stats) {
	in := sc.input()
	for pos, i := range run {
		s := &spans[i]
		switch {
		case split || cont.offset > 0:
			out[i].Attempt = cont.offset + pos + 1
		case s.ResendCount >= 0:
			out[i].Attempt = s.ResendCount + 1
		case s.Attempt > 0:
			out[i].Attempt = s.Attempt
		default:
			out[i].Attempt = pos + 1
		}
	}
	last := c.finalAttempt(spans, run)
	total := cont.offset + len(run)
	r.before = decidedBefore(in, run, cont)
	if p := cont.prior; p != nil && !cont.inDecision && c.priorStaysFinal(p, spans, last) {
		// The final attempt left before, in another trace or release: it keeps its outcome,
		// carried when the run is over.
		at := c.runOverAt(in, &p.Last, total, r)
		if !runOver(in, at) {
			sc.out.Opened = append(sc.out.Opened, OpenedRun{Pos: run[len(run)-1], Until: at})
			runStaysOpen(in, runs, &p.Last, -1, total, cont, split || cont.split, p.Outcome, p.OK, r, at)
			return
		}
		carryRun(&sc.out, &p.Last, p.Outcome, total, p.OK)
		return
	}
	at := c.runOverAt(in, &spans[last], total, r)
	outcome := c.runOutcome(spans, nodes, out, last, r.end)
	ok := c.Signals.AttemptResult(&spans[last]) == record.ResultOK
	if !runOver(in, at) {
		// Until when it stays open while its attempts and the spans above them stay as they are:
		// the moment runOverAt gives, which the incremental path reads (OpenedRun.until).
		sc.out.Opened = append(sc.out.Opened, OpenedRun{Pos: last, Until: at})
		runStaysOpen(in, runs, &spans[last], last, total, cont, split || cont.split, outcome, ok, r, at)
		return
	}
	v := &out[last]
	v.RunAttempts = total
	v.Outcome = outcome
	v.RunOK = ok
	if v.Outcome == record.OutcomeUnknownRoot {
		st.UnknownRootRuns++
	}
	runClosed(in, runs, &sc.out, spans, out, run, last)
}

// Moments of runOverAt beyond any time.
const (
	overNow   = math.MinInt64 // over whatever the time
	OverNever = math.MaxInt64 // over by no time: only a later attempt, or the final decision, ends it
)

// runOver reports whether a run that runOverAt says is over after at is over in the decision
// in: at once in a decision of its own (in nil), else when the decision's time (the collector's
// clock, unix ns) is past at.
func runOver(in *DecisionIn, at int64) bool {
	return in == nil || at == overNow || at != OverNever && in.Now > at
}

// runOverAt is the one source of "until when a run stays open" (DESIGN.md "Run outcomes": when
// a run is over; docs/verdicts.md "When a run is over"): the moment on the collector's clock
// after which the run r, whose final attempt so far is s and which has total attempts, is over
// while nothing of it changes (overNow: already; OverNever: by no time). Releases and sweeps
// compare their time with it (runOver, Sweep) and the incremental path keeps it (OpenedRun.until),
// so a rule added here holds on every path. One named step per rule, in this order:
//  1. the decision is whole (in nil: all of a trace's spans at once): every run is over;
//  2. followed: a later attempt of the operation began a new run after it (startsNewRun); or
//     decidedBefore: an earlier release decided it over (its outcome left then);
//  3. the decision is final (a trace given up, shutdown): every run but a keyed run's or a
//     delivery's, which another trace given up with it may continue (Finish closes it);
//  4. attemptsExhausted: max_attempts is reached;
//  5. goesOnAcrossTraces: a keyed run or a delivery's is over only when no attempt came within
//     run_timeout (noAttemptAfter), whatever its attempts did;
//  6. succeeded: an attempt succeeded (a hedge that lost to it and ended later is one run with
//     it when it comes with it or before the loop's span: the attempts wait for their parent,
//     Verdict.Provisional);
//  7. loopEndedAfter: the loop's span ended after every attempt of the run ended: over once a
//     try started before the loop's span ended could have come (loopSettled);
//  8. noAttemptAfter: run_timeout has passed since its attempts ended.
//
// Each waiting rule adds what a span that ended in time may still take to be released
// (settled: decision_wait, the longest the processor holds a span, and the clock-skew
// tolerance, the attempts' ends being on their own service's clock). A loop that outlives its
// parent (an attempt ended after the loop's span) waits for step 8.
func (c *Rules) runOverAt(in *DecisionIn, s *record.Span, total int, r *runSoFar) int64 {
	switch {
	case in == nil: // 1.
		return overNow
	case r.followed || r.before: // 2.
		return overNow
	case in.Mode == ModeFinal: // 3.
		if goesOnAcrossTraces(s) {
			return OverNever
		}
		return overNow
	case c.attemptsExhausted(total): // 4.
		return overNow
	case goesOnAcrossTraces(s): // 5.
		return c.noAttemptAfter(r.end)
	case r.ok: // 6.
		return overNow
	case loopEndedAfter(r): // 7.
		return min(c.loopSettled(r.loopEnd), c.noAttemptAfter(r.end))
	}
	return c.noAttemptAfter(r.end) // 8.
}

// decidedBefore: every attempt of the run left with its verdict in an earlier release of the
// trace and no open run continues it: the run was over then (its outcome written or carried,
// or a sweep closed it), and deciding it again (a whole decision of the trace) must not open it
// again.
func decidedBefore(in *DecisionIn, run []int32, cont continuation) bool {
	if in == nil || cont.prior != nil {
		return false
	}
	for _, i := range run {
		if int(i) >= in.NOld || !in.Emitted[i] {
			return false
		}
	}
	return true
}

// attemptsExhausted: a run of total attempts has reached max_attempts (0: no limit).
func (c *Rules) attemptsExhausted(total int) bool {
	return c.cfg.MaxAttempts > 0 && total >= c.cfg.MaxAttempts
}

// settled is when every span that ended by t (on its service's clock) has been released: t plus
// decision_wait (ReleaseWait: the longest a component holds a span after it arrived) and the
// clock-skew tolerance.
func (c *Rules) settled(t int64) int64 {
	return t + int64(c.cfg.ReleaseWait+c.cfg.ClockSkew)
}

// noAttemptAfter: step 8, when no further attempt can come any more: run_timeout (0: never)
// after the run's attempts ended at end, settled.
func (c *Rules) noAttemptAfter(end int64) int64 {
	if c.cfg.RunTimeout <= 0 {
		return OverNever
	}
	return c.settled(end + int64(c.cfg.RunTimeout))
}

// loopSettled: step 7, when a try that started before the loop's span ended (at loopEnd) and
// ended soon after it has come: loopEnd, settled.
func (c *Rules) loopSettled(loopEnd int64) int64 {
	return c.settled(loopEnd)
}

// runOutcome is where a run's outcome is decided (DESIGN.md "Run outcomes"; docs/verdicts.md
// "How a run's outcome is decided"), from its final attempt and the liveness of the root when
// the run ended. One named step per rule, in the order of docs/verdicts.md.
func (c *Rules) runOutcome(spans []record.Span, nodes []Node, out []record.Verdict, last int32, runEnd int64) record.Outcome {
	s, n, v := &spans[last], &nodes[last], &out[last]
	res := c.Signals.AttemptResult(s)
	switch {
	case rootUnknown(n, v): // 1.
		return record.OutcomeUnknownRoot
	case c.finalAttemptNoticed(s, n) && c.nothingWentOn(n, runEnd): // 2.
		return record.OutcomeCancelled
	case c.loopNoticed(spans, n, res, runEnd): // 3.
		return record.OutcomeCancelled
	case finalAttemptOrphaned(v): // 4.
		return record.OutcomeDeliveredToNobody
	}
	return resultOutcome(res) // 5.
}

// resultOutcome: rule 5, the outcome the final attempt's own result gives a run whose root was
// live when it ended: success, a retryable failure (a cancellation or timeout far from the gone
// time is the attempt's own timeout), else a hard failure.
func resultOutcome(res record.Result) record.Outcome {
	switch res {
	case record.ResultOK:
		return record.OutcomeSuccess
	case record.ResultRetryable, record.ResultCancelled:
		return record.OutcomeRetryableFailure
	}
	return record.OutcomeHardFailure
}

// rootUnknown: rule 1, the run's root was never seen (and no deadline lets it be judged).
func rootUnknown(n *Node, v *record.Verdict) bool {
	return v.Liveness == record.LivenessUnknown && !n.hasRoot && n.deadline == 0
}

// finalAttemptOrphaned: rule 4, the final attempt (its verdict v) is orphaned: it ended after
// the gone time, beyond the clock-skew tolerance where the services differ (judgeLiveness), and
// did not notice: the run delivered its result to nobody, whatever its result and whatever the
// loop recorded.
func finalAttemptOrphaned(v *record.Verdict) bool { return v.Liveness == record.LivenessOrphaned }

// finalAttemptNoticed: rule 2, the final attempt itself recorded the cancellation or a passed
// deadline at about the gone time (within cancellation.grace of it).
func (c *Rules) finalAttemptNoticed(s *record.Span, n *Node) bool {
	return c.Signals.NoticeSignal(s) && c.nearGone(n, s.End)
}

// loopNoticed: rule 3, the loop around the attempts (the final attempt's parent span) recorded
// the cancellation at about the gone time, and the run stopped there: its final attempt did not
// succeed and ended no later than cancellation.grace after the gone time. A loop whose parent
// recorded the cancellation while its attempts went on long after (an LLM gateway's upstream
// retries, a Python retry decorator around a cancelled coroutine) did not notice: rule 4.
func (c *Rules) loopNoticed(spans []record.Span, n *Node, res record.Result, lastEnd int64) bool {
	if res == record.ResultOK || n.Parent < 0 {
		return false
	}
	p := &spans[n.Parent]
	if !c.Signals.NoticeSignal(p) || !c.nearGone(n, p.End) {
		return false
	}
	return c.nothingWentOn(n, lastEnd)
}

// nothingWentOn: no attempt of the run ended later than cancellation.grace after the gone time
// (runEnd: the latest end among its attempts): a run whose attempts went on past the grace is
// delivered_to_nobody, whoever recorded the cancellation (DESIGN.md "Run outcomes": cancelled).
func (c *Rules) nothingWentOn(n *Node, runEnd int64) bool {
	gone, known := c.goneOf(n)
	return !known || runEnd <= gone+int64(c.cfg.CancellationGrace)
}

// nearGone reports whether t is within cancellation.grace of the span's gone time ("at about
// the gone time"); true when no gone time is known.
func (c *Rules) nearGone(n *Node, t int64) bool {
	gone, known := c.goneOf(n)
	if !known {
		return true
	}
	d := t - gone
	return d <= int64(c.cfg.CancellationGrace) && -d <= int64(c.cfg.CancellationGrace)
}
