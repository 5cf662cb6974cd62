package verdict

import (
	"hash/fnv"
)

// runKey identifies the attempts of one logical operation: same parent span, same operation key.
type runKey struct {
	parent SpanID
	op     uint64
}

// opKey is the hashed idempotency key where there is one, otherwise name, kind and target.
func opKey(s *Span) uint64 {
	if s.KeyHash != 0 {
		return s.KeyHash
	}
	h := fnv.New64a()
	h.Write([]byte(s.Name))
	h.Write([]byte{0, byte(s.Kind), 0})
	h.Write([]byte(s.Target))
	return h.Sum64() | 1
}

// explicitRetry reports whether the span says itself that it repeats an earlier attempt.
func explicitRetry(s *Span) bool { return s.ResendCount >= 1 || s.Attempt >= 2 }

// decideRuns groups attempt spans into runs and decides each run's outcome (DESIGN.md "Run
// outcomes"; docs/verdicts.md "How attempts group into runs").
func (c *Correlator) decideRuns(spans []Span, nodes []node, out []Verdict, root int32, st *Stats) {
	groups := map[runKey][]int32{}
	var order []runKey
	for i := range spans {
		s := &spans[i]
		if !nodes[i].valid || int32(i) == root || !c.rules.isAttempt(s) {
			continue
		}
		k := runKey{parent: s.ParentID, op: opKey(s)}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], int32(i))
	}
	for _, k := range order {
		idx := groups[k]
		sortByStart(spans, idx)
		var run []int32
		flush := func() {
			if len(run) > 0 {
				c.closeRun(spans, nodes, out, run, st)
			}
			run = run[:0]
		}
		for _, i := range idx {
			if len(run) > 0 && c.startsNewRun(spans, run, i) {
				flush()
			}
			run = append(run, i)
		}
		flush()
	}
}

// startsNewRun decides whether attempt i begins a new run after the attempts in run.
func (c *Correlator) startsNewRun(spans []Span, run []int32, i int32) bool {
	prev, cur := &spans[run[len(run)-1]], &spans[i]
	if explicitRetry(cur) {
		return c.cfg.MaxAttempts > 0 && len(run) >= c.cfg.MaxAttempts
	}
	switch {
	case cur.Start < prev.End:
		return true // overlapping same-name siblings are parallel work, not retries
	case c.rules.attemptResult(prev) != resultRetryable:
		return true // after a success, a hard failure or a cancellation nothing is retried
	case c.cfg.MaxAttempts > 0 && len(run) >= c.cfg.MaxAttempts:
		return true
	case c.cfg.RunTimeout > 0 && cur.Start-prev.End > int64(c.cfg.RunTimeout):
		return true
	}
	return false
}

// closeRun numbers the attempts of one run and writes its outcome on the final attempt.
func (c *Correlator) closeRun(spans []Span, nodes []node, out []Verdict, run []int32, st *Stats) {
	for pos, i := range run {
		s := &spans[i]
		switch {
		case s.ResendCount >= 0:
			out[i].Attempt = s.ResendCount + 1
		case s.Attempt > 0:
			out[i].Attempt = s.Attempt
		default:
			out[i].Attempt = pos + 1
		}
	}
	last := run[len(run)-1]
	v := &out[last]
	v.RunAttempts = len(run)
	v.Outcome = c.runOutcome(spans, nodes, out, last)
	v.RunOK = c.rules.attemptResult(&spans[last]) == resultOK
	if v.Outcome == OutcomeUnknownRoot {
		st.UnknownRootRuns++
	}
}

// runOutcome is where a run's outcome is decided, from its final attempt and the liveness of
// the root when the run ended.
func (c *Correlator) runOutcome(spans []Span, nodes []node, out []Verdict, last int32) Outcome {
	s, v := &spans[last], &out[last]
	res := c.rules.attemptResult(s)
	if v.Liveness == LivenessUnknown && !nodes[last].hasRoot && nodes[last].deadline == 0 {
		return OutcomeUnknownRoot
	}
	// The run noticed the cancellation: its final attempt says so, or the loop around it (the
	// parent span) recorded a cancellation or a passed deadline when the last try had failed.
	if res == resultCancelled {
		return OutcomeCancelled
	}
	if p := nodes[last].parent; res != resultOK && p >= 0 && (c.rules.cancelSignal(&spans[p]) || c.rules.deadlineSignal(&spans[p])) {
		return OutcomeCancelled
	}
	if v.Liveness == LivenessOrphaned {
		return OutcomeDeliveredToNobody
	}
	switch res {
	case resultOK:
		return OutcomeSuccess
	case resultRetryable:
		return OutcomeRetryableFailure
	}
	return OutcomeHardFailure
}
