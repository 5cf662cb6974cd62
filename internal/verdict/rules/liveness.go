package rules

import "github.com/orphanwatch/orphanwatch/internal/verdict/record"

// The rules of detached work and of liveness (DESIGN.md "Words": detached work, liveness of a
// span; docs/verdicts.md "Detached work", "Liveness").

// bindDetached binds detached work at s to a root again where DESIGN.md says it is the
// request's own ("detached work": never orphaned unless an idempotency key or a propagated
// deadline binds it to a root): by an idempotency key that the request's own trace carried too
// (the job's key, S7), judged against that request's root from then on; else by a deadline
// propagated into it, judged against the deadline. A key seen only in the detached work is its
// own business (a mailer's keys for its mail provider) and binds nothing. The request-reply
// hop, where the request waits for the work, is not detached in the first place
// (startsDetachedWork).
//
// Bound work is judged against the request's gone time only when the request ended abandoned
// (cancelled, deadline exceeded, error); a request that completed normally handed the work over
// and answered, as an asynchronous API answering 202 does (handedOver): the work is judged only
// against the deadlines it carries and the callers that gave up on it within it, and is
// otherwise live (S31).
func bindDetached(s *record.Span, ctx *spanContext, bindings map[uint64]RootRecord) {
	if rec, ok := bindings[s.KeyHash]; s.KeyHash != 0 && ok {
		ctx.bound, ctx.root, ctx.rootID = true, -1, record.SpanID{}
		if handedOver(rec) {
			ctx.handedOver, ctx.hasRoot = true, false
		} else {
			ctx.rec, ctx.hasRoot = rec, true
		}
	} else if ctx.deadline > 0 {
		ctx.bound = true
	}
}

// handedOver reports whether the request of root record rec completed normally, so that the
// work an idempotency key binds to it was handed over, not abandoned (DESIGN.md "Words":
// detached work): nobody waits for it past the request's end, and nobody gave it up either.
func handedOver(rec RootRecord) bool { return rec.Reason == record.EndReasonCompleted }

// detachedRoot reports whether a span is the root of a trace of detached work (a parentless
// CONSUMER span, a root with links: rootIsDetached). It is not a root request: it is counted
// with the end reason detached (DESIGN.md "Words": detached work), has no gone time of its own,
// and the work below it is judged by its own results unless a key or a deadline binds it
// (bindDetached).
func detachedRoot(n *Node) bool { return n.Valid && n.IsRoot && n.detached }

// startsDetachedWork reports whether span i begins work meant to outlive the request, given
// what it inherits (ctx): it is a messaging CONSUMER span that its producing request does not
// wait for (see requestAwaits), or it is a follow-up (see isFollowUp).
func (c *Rules) startsDetachedWork(spans []record.Span, nodes []Node, i int32, ctx *spanContext) bool {
	s := &spans[i]
	if c.cfg.DetachConsumers && s.Kind == record.KindConsumer {
		return !c.requestAwaits(spans, nodes, i)
	}
	return c.cfg.DetachLateEntries && c.isFollowUp(spans, nodes, i, ctx)
}

// requestAwaits reports whether the request that produced CONSUMER span i waits for its work:
// the queue is a request-reply hop (DESIGN.md "Words": detached work). The producing request is
// the entry span of the producer's service (the SERVER or CONSUMER span above the PRODUCER, or
// the root of that service's part of the trace); it waits when it is still open when the
// consumer's work ends, within the clock-skew tolerance between services (it ends after the
// consumer, or less than the tolerance before). An API handler awaiting a task queue's result
// and a durable workflow's activities are the common case; fire-and-forget work (the request
// finished first) stays detached. Only a producer in the consumer's own trace (its parent) is
// looked at: work reached through a span link is detached as before.
func (c *Rules) requestAwaits(spans []record.Span, nodes []Node, i int32) bool {
	pi := nodes[i].Parent
	if pi < 0 {
		return false
	}
	svc := spans[pi].Service
	entry := int32(-1)
	for j := pi; j >= 0 && spans[j].Service == svc; j = nodes[j].Parent {
		entry = j
		if k := spans[j].Kind; k == record.KindServer || k == record.KindConsumer {
			break
		}
	}
	if entry < 0 || !nodes[entry].timed {
		return false
	}
	e, s := &spans[entry], &spans[i]
	return notAfter(s.End, e.End, c.skewBetween(s.Service, e.Service))
}

// isFollowUp reports whether a SERVER span that started after its parent ended is a follow-up
// that nobody waits for (a browser following a redirect, a request sent after an answer that
// completed): its root completed normally and the span it follows ended without error. A late
// entry is not detached by starting late alone (DESIGN.md): when the request was abandoned
// (its root cancelled, past its deadline, or failed) or the caller gave up on this call (its
// span recorded an error, a timeout or a cancellation), the work is the request's own, picked
// up late: a workflow engine's activity that starts after its scheduling span ended, a server
// that takes a request after its client timed out. It is judged like any span, and is
// dispatched for nobody if it starts after the gone time.
func (c *Rules) isFollowUp(spans []record.Span, nodes []Node, i int32, ctx *spanContext) bool {
	s, n := &spans[i], &nodes[i]
	if s.Kind != record.KindServer || n.Parent < 0 || !nodes[n.Parent].timed {
		return false
	}
	p := &spans[n.Parent]
	if notAfter(s.Start, p.End, c.skewBetween(s.Service, p.Service)) {
		return false // not late
	}
	return ctx.hasRoot && ctx.rec.Reason == record.EndReasonCompleted && !record.Failed(p) && !c.Signals.GaveUpWithoutResponse(p)
}

// callerGaveUp reports whether the caller of SERVER span s, its parent p, gave up on it, and
// when: p is a CLIENT span in another service that ended before s, beyond the clock-skew
// tolerance between them, without a response (gaveUpWithoutResponse: a cancellation, a timeout
// or deadline error, HTTP 504 or 408, gRPC CANCELLED or DEADLINE_EXCEEDED, or an HTTP client
// span with unset status and no response status code). From p's end nobody waits for s's
// work, though the root may still wait: an SDK or a load balancer that timed a try out and
// tries again (DESIGN.md "Words": a caller that gave up). s and the spans below it are judged
// against p's end (goneOf), runs there that end later are delivered to nobody, and s, when
// orphaned, is the edge the news did not cross (decideEdges). A caller that got a normal
// response did not give up, whenever it ended.
func (c *Rules) callerGaveUp(s, p *record.Span) (int64, bool) {
	if s.Kind != record.KindServer || p.Kind != record.KindClient || p.Service == s.Service || p.Service == "" {
		return 0, false
	}
	if notAfter(s.End, p.End, c.skewBetween(s.Service, p.Service)) {
		return 0, false // the server ended first, as far as two clocks can tell
	}
	if !c.Signals.GaveUpWithoutResponse(p) {
		return 0, false
	}
	return p.End, true
}

// judgeLiveness decides whether a judged span ended while somebody still waited for its root:
// live if it ended by its gone time (goneOf; plus the clock-skew tolerance across services:
// skewOf), orphaned after it, unless it noticed (see noticed). A span with no gone time is
// unknown, but work handed over by a request that completed (bindDetached), which is live.
func (c *Rules) judgeLiveness(s *record.Span, n *Node, v *record.Verdict) {
	gone, ok := c.goneOf(n)
	if !ok && n.handedOver {
		// Handed over by a request that completed, no deadline: nobody gave it up.
		v.Liveness = record.LivenessLive
		return
	}
	if !ok {
		v.Liveness = record.LivenessUnknown
		return
	}
	// Different clocks: the span's service is not the one whose clock gave the gone time, or
	// the gone time is only a deadline (written by some other clock).
	tol := c.skewOf(s, n)
	switch {
	case notAfter(s.End, gone, tol):
		v.Liveness = record.LivenessLive
	case c.noticed(s, gone):
		v.Liveness = record.LivenessLive
	default:
		v.Liveness = record.LivenessOrphaned
		v.AfterGone = afterGone(s, gone)
	}
	v.StartedAfterGone = !notAfter(s.Start, gone, tol)
}

// afterGone is orphanwatch.after_gone, in seconds: how long span s outlived its gone time,
// measured from the gone time itself, without the clock-skew tolerance (docs/verdicts.md
// "Choices where DESIGN.md was silent": after_gone).
func afterGone(s *record.Span, gone int64) float64 { return float64(s.End-gone) / 1e9 }

// notAfter reports whether moment t is no later than moment ref, as far as two clocks tol
// apart can tell (tol: skewBetween or skewOf): the one comparison of moments read on
// different clocks (docs/verdicts.md "Choices where DESIGN.md was silent": Clock skew).
func notAfter(t, ref, tol int64) bool { return t <= ref+tol }

// skewBetween is the clock-skew tolerance between moments read on the clocks of services a and
// b: none on one service's clock, clock_skew_tolerance across services (docs/verdicts.md
// "Choices where DESIGN.md was silent": Clock skew).
func (c *Rules) skewBetween(a, b string) int64 {
	if a == b {
		return 0
	}
	return int64(c.cfg.ClockSkew)
}

// noticed reports whether a span that ended after its gone time recorded the cancellation (or
// the passed deadline) itself and ended within cancellation.grace of the gone time: it noticed,
// and unwinding took a moment (a cancelled client call that returns a few milliseconds after
// its handler answered 499). It is not orphaned work (DESIGN.md "liveness of a span").
func (c *Rules) noticed(s *record.Span, gone int64) bool {
	return c.Signals.NoticeSignal(s) && s.End <= gone+int64(c.cfg.CancellationGrace)
}
