package verdict

import (
	"cmp"
	"slices"
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
	// FNV-1a (hash/fnv's New64a) over name, {0, kind, 0} and target, without allocating.
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for i := 0; i < len(s.Name); i++ {
		h = (h ^ uint64(s.Name[i])) * prime64
	}
	for _, b := range [3]byte{0, byte(s.Kind), 0} {
		h = (h ^ uint64(b)) * prime64
	}
	for i := 0; i < len(s.Target); i++ {
		h = (h ^ uint64(s.Target[i])) * prime64
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
func (c *Correlator) decideRuns(sc *scratch, spans []Span, nodes []node, out []Verdict, root int32, st *Stats) {
	refs := sc.attempts[:0]
	for i := range spans {
		s := &spans[i]
		if !nodes[i].valid || int32(i) == root || !c.rules.isAttempt(s) {
			continue
		}
		refs = append(refs, attemptRef{runKey{parent: s.ParentID, op: opKey(s)}, int32(i)})
	}
	sc.attempts = refs
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
		for _, r := range refs[g:e] {
			if len(run) > 0 && c.startsNewRun(spans, run, r.i) {
				c.closeRun(spans, nodes, out, run, st)
				run = run[:0]
			}
			run = append(run, r.i)
		}
		c.closeRun(spans, nodes, out, run, st)
		g = e
	}
	sc.run = run
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
	// parent span) recorded a cancellation or a passed deadline when the last try had failed,
	// at about the gone time (within cancellation_grace of it). A cancellation or timeout far
	// from the gone time is not the caller leaving: the attempt's own timeout, counted as a
	// retryable failure.
	gone, known := c.goneOf(&nodes[last])
	noticedInTime := func(end int64) bool {
		if !known {
			return true
		}
		d := end - gone
		return d <= int64(c.cfg.CancellationGrace) && -d <= int64(c.cfg.CancellationGrace)
	}
	if res == resultCancelled {
		if noticedInTime(s.End) {
			return OutcomeCancelled
		}
		res = resultRetryable
	}
	if p := nodes[last].parent; res != resultOK && p >= 0 && (c.rules.cancelSignal(&spans[p]) || c.rules.deadlineSignal(&spans[p])) && noticedInTime(spans[p].End) {
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
