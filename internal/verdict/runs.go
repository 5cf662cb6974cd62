package verdict

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// runKey identifies the attempts of one logical operation: same parent span, same operation key.
type runKey struct {
	parent SpanID
	op     uint64
}

// opKey is the hashed idempotency key where there is one, else a delivery's message identity,
// otherwise name, kind and target.
func opKey(s *Span) uint64 {
	if s.KeyHash != 0 {
		return s.KeyHash
	}
	if s.Kind == KindConsumer && s.MessageHash != 0 {
		return s.MessageHash
	}
	// FNV-1a (hash/fnv's New64a) over name, {0, kind, 0} and the target's hash, without allocating.
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for i := 0; i < len(s.Name); i++ {
		h = (h ^ uint64(s.Name[i])) * prime64
	}
	for _, b := range [3]byte{0, byte(s.Kind), 0} {
		h = (h ^ uint64(b)) * prime64
	}
	if t := uint64(s.Target); t != 0 {
		for range 8 {
			h = (h ^ (t & 0xff)) * prime64
			t >>= 8
		}
	}
	return h | 1
}

// attemptRef is one attempt span and the key of the run it belongs to.
type attemptRef struct {
	key runKey
	i   int32
}

// explicitRetry reports whether the span says itself that it repeats an earlier attempt.
func explicitRetry(s *Span) bool { return s.ResendCount >= 1 || s.Attempt >= 2 }

// decideRuns groups attempt spans into runs and decides each run's outcome (DESIGN.md "Run
// outcomes"; docs/verdicts.md "How attempts group into runs").
func (c *Correlator) decideRuns(sc *scratch, spans []Span, nodes []node, out []Verdict, st *Stats) {
	refs := sc.attempts[:0]
	for i := range spans {
		s := &spans[i]
		if !nodes[i].valid || nodes[i].isRoot && !isDelivery(s) || !c.rules.isAttempt(s) {
			continue // roots are never attempts, but for a delivery that begins a trace
		}
		if sc.rel != nil && sc.rel.context != nil && sc.rel.context[i] {
			// Read only for its context (an incremental decision's ancestor): an attempt, its
			// run decided before.
			out[i].Attempt = 1
			continue
		}
		refs = append(refs, attemptRef{runKey{parent: s.ParentID, op: opKey(s)}, int32(i)})
	}
	sc.attempts = refs
	if sc.rel != nil && len(refs) > 0 {
		// Open runs bind traces (a key's attempts in several): kept under relMu, for the whole
		// step, so that releases of two traces in different memo shards continue a run in turn.
		c.relMu.Lock()
		defer c.relMu.Unlock()
	}
	// Group the attempts by run key, each group in start order (startOrder). Groups share no
	// span, so the order in which they are taken does not matter.
	slices.SortFunc(refs, func(a, b attemptRef) int {
		if a.key.parent != b.key.parent {
			return cmp.Compare(string(a.key.parent[:]), string(b.key.parent[:]))
		}
		if a.key.op != b.key.op {
			return cmp.Compare(a.key.op, b.key.op)
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
		// The run this group continues, when an earlier decision left one open (memo.go).
		cont := c.continuedRun(sc.rel, spans, refs[g:e])
		split := cont.split // the run began because the one before it was over (max_attempts, run_timeout)
		for _, r := range refs[g:e] {
			switch {
			case len(run) == 0 && cont.prior != nil && !cont.inDecision:
				if c.startsNewRun(&cont.prior.last, cont.prior.attempts, &spans[r.i]) {
					c.priorClosed(sc.rel, cont.prior) // the open run was over: its outcome leaves now
					cont = continuation{split: true}
					split = true
				}
			case len(run) > 0 && c.startsNewRun(&spans[run[len(run)-1]], cont.offset+len(run), &spans[r.i]):
				c.closeRun(sc, spans, nodes, out, run, split, cont, st)
				run = run[:0]
				split = true
				cont = continuation{split: true}
			}
			run = append(run, r.i)
		}
		c.closeRun(sc, spans, nodes, out, run, split, cont, st)
		g = e
	}
	sc.run = run
}

// startsNewRun decides whether attempt cur begins a new run after a run of runLen attempts whose
// latest attempt so far (by start) is prev. A run is
// over (DESIGN.md "Run outcomes") when max_attempts is reached or the next attempt starts more
// than run_timeout after the previous one ended, even if that attempt says it is a retry;
// otherwise a span that says it retries joins the run (a hedged try says so too: gRPC's
// grpc-previous-rpc-attempts, Envoy's x-envoy-attempt-count), and so does a try that raced
// prev as a hedge (hedgedPair); another overlapping sibling (parallel work) and an attempt
// after a success, a hard failure or a cancellation begin a new one.
func (c *Correlator) startsNewRun(prev *Span, runLen int, cur *Span) bool {
	switch {
	case c.cfg.MaxAttempts > 0 && runLen >= c.cfg.MaxAttempts:
		return true
	case c.cfg.RunTimeout > 0 && cur.Start-prev.End > int64(c.cfg.RunTimeout):
		return true
	case explicitRetry(cur):
		return false
	case isDelivery(cur):
		// Another delivery of the same message (opKey: its identity or key): redelivered,
		// whatever the earlier delivery did.
		return false
	case cur.Start < prev.End:
		// Overlapping same-name siblings are parallel work, not retries, unless they raced as
		// hedges of one call.
		return !c.hedgedPair(prev, cur)
	case c.rules.attemptResult(prev) != resultRetryable:
		return true // after a success, a hard failure or a cancellation nothing is retried
	}
	return false
}

// hedgedPair reports whether two overlapping tries of one operation (same parent, name and
// target, or key) raced as hedges: one succeeded and its own client cancelled the other within
// cancellation.grace of that success (DESIGN.md "Words": attempt). Without that cancellation,
// overlapping siblings are genuinely parallel work.
func (c *Correlator) hedgedPair(a, b *Span) bool {
	won := func(w, l *Span) bool {
		if c.rules.attemptResult(w) != resultOK || !c.rules.cancelSignal(l) {
			return false
		}
		d := l.End - w.End
		return d >= -int64(c.cfg.CancellationGrace) && d <= int64(c.cfg.CancellationGrace)
	}
	return won(a, b) || won(b, a)
}

// finalAttempt is the attempt whose ending is the run's (DESIGN.md "Run outcomes": decided from
// the run's final attempt): the latest to start, unless tries of the run raced each other
// (hedged: one started before another ended); then the winner, the try that succeeded first,
// else the try that ended last. The others were cancelled by their own client, or lost.
func (c *Correlator) finalAttempt(spans []Span, run []int32) int32 {
	last := run[len(run)-1]
	raced := false
	end := spans[run[0]].End
	for _, i := range run[1:] {
		if spans[i].Start < end {
			raced = true
		}
		end = max(end, spans[i].End)
	}
	if !raced {
		return last
	}
	winner, latest := int32(-1), last
	for _, i := range run {
		s := &spans[i]
		if c.rules.attemptResult(s) == resultOK && (winner < 0 || s.End < spans[winner].End) {
			winner = i
		}
		if s.End > spans[latest].End {
			latest = i
		}
	}
	if winner >= 0 {
		return winner
	}
	return latest
}

// closeRun numbers the attempts of one run and, when the run is over, writes its outcome on the
// final attempt. Attempts are numbered by what they say (resend_count + 1, the attempt
// attribute), so that a run whose first attempts were not seen keeps their numbers; a run that
// began because the one before it was over (split) numbers its attempts from 1, its own; a run
// continued from an earlier decision (cont) goes on from that decision's count.
func (c *Correlator) closeRun(sc *scratch, spans []Span, nodes []node, out []Verdict, run []int32, split bool, cont continuation, st *Stats) {
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
	if !c.runOver(sc.rel, spans, nodes, last, total) {
		// Until when it stays open while its attempts and the spans above them stay as they are
		// (runOver's rules that the release's time decides): incremental.go.
		stopsAt := c.loopStopsAt(spans, nodes, last)
		until := int64(math.MaxInt64)
		if stopsAt != 0 {
			until = stopsAt
		}
		if c.cfg.RunTimeout > 0 {
			until = min(until, spans[last].End+int64(c.cfg.RunTimeout))
		}
		sc.rel.opened = append(sc.rel.opened, openedRun{pos: last, until: until})
		c.runStaysOpen(sc.rel, spans, last, total, cont, split || cont.split, c.runOutcome(spans, nodes, out, last), c.rules.attemptResult(&spans[last]) == resultOK, stopsAt)
		return
	}
	v := &out[last]
	v.RunAttempts = total
	v.Outcome = c.runOutcome(spans, nodes, out, last)
	v.RunOK = c.rules.attemptResult(&spans[last]) == resultOK
	if v.Outcome == OutcomeUnknownRoot {
		st.UnknownRootRuns++
	}
	c.runClosed(sc.rel, spans, out, last)
}

// runOver reports whether a run whose final attempt so far is last, with total attempts, is
// over (DESIGN.md "Run outcomes"; docs/verdicts.md "When a run is over"), one named step per
// rule, in this order:
//  1. the decision is whole (rel nil: all of a trace's spans at once): every run is over;
//  2. the decision is final (a trace given up, shutdown): every run but a delivery's;
//  3. loopStopped: its loop recorded the cancellation and no attempt followed;
//  4. isDelivery: a delivery of a message is over only when attemptsExhausted or runTimedOut;
//  5. finalAttemptTerminal: success, a non-retryable error, a cancellation;
//  6. attemptsExhausted: max_attempts is reached;
//  7. loopArrived: the loop around its attempts (their parent span) has arrived, for attempts
//     without an idempotency key;
//  8. runTimedOut: run_timeout has passed since its final attempt ended.
//
// Otherwise it stays open (openruns.go): a later attempt, in a later decision or (through the
// idempotency key) another trace, continues it.
func (c *Correlator) runOver(rel *release, spans []Span, nodes []node, last int32, total int) bool {
	s := &spans[last]
	switch {
	case rel == nil: // 1.
		return true
	case rel.mode == modeFinal: // 2.
		// Every run is over, but a delivery's, which another trace given up with it may
		// continue (Finish closes it).
		return !isDelivery(s)
	case c.loopStopped(rel, spans, nodes, last): // 3.
		return true
	case isDelivery(s): // 4.
		// A message may be delivered again (its ack or commit lost) in another trace, whatever
		// this delivery did: the run waits for run_timeout or max_attempts.
		return c.attemptsExhausted(total) || c.runTimedOut(s.End, rel.now, 0)
	case c.finalAttemptTerminal(s): // 5.
		return true
	case c.attemptsExhausted(total): // 6.
		return true
	case loopArrived(nodes, last, s): // 7.
		return true
	case c.runTimedOut(s.End, rel.now, 0): // 8.
		return true
	}
	return false
}

// finalAttemptTerminal: the run's final attempt so far ended it: it succeeded, failed with a
// non-retryable error, or recorded a cancellation (attemptResult).
func (c *Correlator) finalAttemptTerminal(s *Span) bool {
	return c.rules.attemptResult(s) != resultRetryable
}

// attemptsExhausted: a run of total attempts has reached max_attempts (0: no limit).
func (c *Correlator) attemptsExhausted(total int) bool {
	return c.cfg.MaxAttempts > 0 && total >= c.cfg.MaxAttempts
}

// loopArrived: the loop around the attempts (the final attempt's parent span) ended and is
// here, so no attempt starts after it. Attempts that carry an idempotency key may be re-sent in
// another trace, by another loop: for them the loop's arrival ends nothing.
func loopArrived(nodes []node, last int32, s *Span) bool {
	return nodes[last].parent >= 0 && s.KeyHash == 0
}

// runTimedOut: run_timeout (0: never) has passed, at now on the collector's clock (unix ns),
// since a run's final attempt ended at end, with slack added to the timeout: none within a
// release; the clock-skew tolerance when the sweep closes a run left open (Sweep), as its final
// attempt's end is on its own service's clock.
func (c *Correlator) runTimedOut(end, now int64, slack time.Duration) bool {
	return c.cfg.RunTimeout > 0 && now-end > int64(c.cfg.RunTimeout+slack)
}

// loopStopped reports whether, by the release's time, the run's loop recorded the cancellation
// and no attempt followed within decision_wait (loopStopsAt).
func (c *Correlator) loopStopped(rel *release, spans []Span, nodes []node, last int32) bool {
	at := c.loopStopsAt(spans, nodes, last)
	return at != 0 && rel.now > at
}

// loopStopsAt is when a run whose final attempt so far is last is over because its loop
// recorded the cancellation and stopped (DESIGN.md "Run outcomes": a keyed run is over "at once
// when its loop recorded the cancellation"), 0 when that rule does not apply: the final
// attempt's parent span is present and recorded the cancellation or a passed deadline, and the
// final attempt began while that span was still open. The run is over when no further attempt
// came within ChainWait (decision_wait) of the parent's end: the wait tells a loop that stopped
// from a parent that recorded the cancellation while its attempts went on (S14), whose next
// attempts come seconds later; run_timeout (minutes) stays for runs whose loop said nothing.
func (c *Correlator) loopStopsAt(spans []Span, nodes []node, last int32) int64 {
	pi := nodes[last].parent
	if pi < 0 {
		return 0
	}
	p, s := &spans[pi], &spans[last]
	tol := int64(0)
	if p.Service != s.Service {
		tol = int64(c.cfg.ClockSkew)
	}
	if !c.rules.noticeSignal(p) || s.Start > p.End+tol {
		return 0
	}
	return p.End + int64(c.cfg.ChainWait)
}

// runOutcome is where a run's outcome is decided (DESIGN.md "Run outcomes"; docs/verdicts.md
// "How a run's outcome is decided"), from its final attempt and the liveness of the root when
// the run ended. One named step per rule, in the order of docs/verdicts.md.
func (c *Correlator) runOutcome(spans []Span, nodes []node, out []Verdict, last int32) Outcome {
	s, n, v := &spans[last], &nodes[last], &out[last]
	res := c.rules.attemptResult(s)
	switch {
	case rootUnknown(n, v): // 1.
		return OutcomeUnknownRoot
	case c.finalAttemptNoticed(s, n): // 2.
		return OutcomeCancelled
	case c.loopNoticed(spans, n, res, s.End): // 3.
		return OutcomeCancelled
	case v.Liveness == LivenessOrphaned: // 4.
		return OutcomeDeliveredToNobody
	}
	return resultOutcome(res) // 5.
}

// resultOutcome: rule 5, the outcome the final attempt's own result gives a run whose root was
// live when it ended: success, a retryable failure (a cancellation or timeout far from the gone
// time is the attempt's own timeout), else a hard failure.
func resultOutcome(res result) Outcome {
	switch res {
	case resultOK:
		return OutcomeSuccess
	case resultRetryable, resultCancelled:
		return OutcomeRetryableFailure
	}
	return OutcomeHardFailure
}

// rootUnknown: rule 1, the run's root was never seen (and no deadline lets it be judged).
func rootUnknown(n *node, v *Verdict) bool {
	return v.Liveness == LivenessUnknown && !n.hasRoot && n.deadline == 0
}

// finalAttemptNoticed: rule 2, the final attempt itself recorded the cancellation or a passed
// deadline at about the gone time (within cancellation.grace of it).
func (c *Correlator) finalAttemptNoticed(s *Span, n *node) bool {
	return c.rules.noticeSignal(s) && c.nearGone(n, s.End)
}

// loopNoticed: rule 3, the loop around the attempts (the final attempt's parent span) recorded
// the cancellation at about the gone time, and the run stopped there: its final attempt did not
// succeed and ended no later than cancellation.grace after the gone time. A loop whose parent
// recorded the cancellation while its attempts went on long after (an LLM gateway's upstream
// retries, a Python retry decorator around a cancelled coroutine) did not notice: rule 4.
func (c *Correlator) loopNoticed(spans []Span, n *node, res result, lastEnd int64) bool {
	if res == resultOK || n.parent < 0 {
		return false
	}
	p := &spans[n.parent]
	if !c.rules.noticeSignal(p) || !c.nearGone(n, p.End) {
		return false
	}
	gone, known := c.goneOf(n)
	return !known || lastEnd <= gone+int64(c.cfg.CancellationGrace)
}

// nearGone reports whether t is within cancellation.grace of the span's gone time ("at about
// the gone time"); true when no gone time is known.
func (c *Correlator) nearGone(n *node, t int64) bool {
	gone, known := c.goneOf(n)
	if !known {
		return true
	}
	d := t - gone
	return d <= int64(c.cfg.CancellationGrace) && -d <= int64(c.cfg.CancellationGrace)
}
