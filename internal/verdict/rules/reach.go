package rules

import "github.com/orphanwatch/orphanwatch/internal/verdict/record"

// How far the news of a cancellation travelled: the edges where it stopped, and the
// cancellation reach of each abandoned root (DESIGN.md "Words": cancellation reach;
// docs/verdicts.md "Edges", "Cancellation reach").

// decideEdges names the edges that did not carry the cancellation. On every orphaned path down
// from the root, the first span that enters another service (an orphaned SERVER or CONSUMER
// span whose parent is in another service) carries its caller's service: the news stopped at
// that boundary, whatever became of the caller's own span (still open past a deadline, unwound
// a few milliseconds late, or live while a nested call went on). Orphaned entries below an
// orphaned entry are not edges of their own: their caller never knew either.
//
// Within a release (memo.go) an edge is named only when the whole chain of spans up to the root
// is there: an orphaned caller above, which ends later and so often arrives later, would make
// it no edge of its own. Until then the span's edge is pending (EdgePending): a later release
// with the chain complete carries it (PartEdge).
func (c *Rules) decideEdges(sc *scratch, spans []record.Span, nodes []Node, out []record.Verdict) {
	whole := sc.input().chainsWhole()
	for _, i := range sc.order { // parents before children
		s, n := &spans[i], &nodes[i]
		if n.Parent < 0 {
			// A span without a parent ID tops its chain even when it is not a usable root (its
			// times not sane: validity): nothing above it will come.
			n.chainOK = whole || n.IsRoot || s.ParentID.IsZero()
			continue
		}
		n.chainOK = nodes[n.Parent].chainOK
		p := &spans[n.Parent]
		above := nodes[n.Parent].orphanedEntryAbove
		if out[i].Liveness == record.LivenessOrphaned && isEntry(s, p) {
			if !above {
				if nodes[n.Parent].chainOK {
					out[i].CallerService = p.Service
				} else {
					out[i].EdgePending = true
				}
			}
			above = true
		}
		n.orphanedEntryAbove = above
	}
}

// markProvisional marks, within a release that is not final, the spans whose chain of spans up
// to their root is incomplete: the span above them that has not arrived may belong under
// another root of the trace (a scheduler's batch span that ends after the request's root was
// decided), under which they would be judged otherwise, or be detached work. Their verdict
// waits (memo.go) until the chain is complete or ChainWait has passed; then the root the
// absent-parent rule gives judges them.
func markProvisional(sc *scratch, nodes []Node, out []record.Verdict) {
	if !sc.input().chainsWait() {
		return
	}
	for i := range out {
		if nodes[i].Valid && !nodes[i].chainOK {
			out[i].Provisional = true
		}
	}
}

// abandonedRoot reports whether root n of a decision is an abandoned request: it ended
// cancelled or deadline_exceeded, and is not the root of detached work. Its verdict has a
// cancellation reach and an orphaned depth (Verdict.HasReach), and it is held a while after its
// trace's release (HeldAbandonedRoot).
func abandonedRoot(n *Node) bool {
	return !n.detached && (n.rec.Reason == record.EndReasonCancelled || n.rec.Reason == record.EndReasonDeadlineExceeded)
}

// HeldAbandonedRoot reports whether the span of verdict v, with no parent span (parentless), is
// an abandoned root (abandonedRoot) that the processor's hold and observe mode keep after its
// trace's release, until decision_wait after it arrived, so that orphans arriving meanwhile
// deepen its orphaned depth and cancellation reach (docs/verdicts.md "When verdicts are
// decided": the root was cancelled or passed its deadline). A decision after which nothing comes
// (a trace's last, decision_wait 0) holds nothing: the caller checks that.
func HeldAbandonedRoot(v *record.Verdict, parentless bool) bool { return v.HasReach && parentless }

// decideReach measures, for every root of the decision that ended cancelled or
// deadline_exceeded, in service hops from the root (isEntry):
//   - reach: the deepest hop at which work noticed the cancellation: a span there recorded the
//     cancellation or a passed deadline within cancellation.grace of its gone time, or a run
//     there ended cancelled; 0 when only the root's own service knew;
//   - orphaned depth: the deepest hop of an orphaned span; 0 when nothing was orphaned below the
//     root's own service.
//
// Hops are counted along the spans present in the decision; spans whose parent is absent are
// not counted for any root.
func (c *Rules) decideReach(spans []record.Span, nodes []Node, out []record.Verdict, roots []int32) {
	abandoned := false
	for _, r := range roots {
		if abandonedRoot(&nodes[r]) {
			out[r].HasReach = true
			abandoned = true
		}
	}
	if !abandoned {
		return
	}
	for i := range spans {
		n := &nodes[i]
		if !n.Valid || n.root < 0 || n.detached && !n.bound {
			continue
		}
		rv := &out[roots[n.root]]
		if !rv.HasReach {
			continue
		}
		if out[i].Outcome == record.OutcomeCancelled || c.Signals.NoticeSignal(&spans[i]) && c.nearGone(n, spans[i].End) {
			rv.ReachHops = max(rv.ReachHops, int(n.hop))
		}
		if out[i].Liveness == record.LivenessOrphaned {
			rv.OrphanedDepthHops = max(rv.OrphanedDepthHops, int(n.hop))
		}
	}
}
