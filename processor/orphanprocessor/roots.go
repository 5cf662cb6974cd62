package orphanprocessor

import (
	"context"
	"time"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Abandoned roots held after their trace was released (heldRoot).

// heldRoot is an abandoned root (its request ended cancelled or deadline_exceeded) kept after
// its trace was released, until abandoned_root_hold after it arrived, so that the orphans arriving
// after it count in its orphaned depth and cancellation reach. Its verdict is written when it
// leaves.
type heldRoot struct {
	trace verdict.TraceID
	ref   heldSpan
	v     verdict.Verdict
}

// holdRoot keeps the abandoned root h.refs[i] after its trace's release (heldRoot), until
// abandoned_root_hold after it arrived (about decision_wait_after_root before now; at once
// when the hold is shorter).
func (p *orphanProcessor) holdRoot(ctx context.Context, h *heldTrace, i int, v *verdict.Verdict) {
	h.refs[i].hold = true
	due := p.clock.Now().Add(max(p.rootHold-p.afterRoot, 0))
	hr := &heldRoot{trace: h.id, ref: heldSpan{sp: h.refs[i].sp, src: h.refs[i].src}, v: *v}
	over := p.roots.Add(h.id, due, hr) > p.cfg.Limits.MaxTraces
	if sb := hr.ref.src.b.spanBytes; sb > 0 {
		p.heldBytes.Add(sb) // its trace's bytes were taken out with the trace
	}
	p.tel.ProcessorOrphanSpansHeld.Add(ctx, 1, p.tel.ID)
	if over {
		p.tel.ProcessorOrphanEvictions.Add(ctx, 1, p.tel.With("state", "held_roots"))
		_ = p.dropped(ctx, p.releaseRoots(ctx, p.dueRoots(time.Time{}, 1)))
	}
}

// updateHeldRoots raises the reach and depth of the trace's held roots to what a later release
// of the trace saw.
func (p *orphanProcessor) updateHeldRoots(t verdict.TraceID, reach []verdict.RootReach) {
	if len(reach) == 0 {
		return
	}
	p.roots.Update(t, func(hr *heldRoot) { verdict.RaiseReach(&hr.v, verdict.SpanID(hr.ref.sp.SpanID()), reach) })
}

// dueRoots takes the held roots due at now (all with a zero now and n < 0; the n oldest when
// n > 0).
func (p *orphanProcessor) dueRoots(now time.Time, n int) []*heldRoot {
	out := p.roots.Take(now, n)
	for _, hr := range out {
		if sb := hr.ref.src.b.spanBytes; sb > 0 {
			p.heldBytes.Add(-sb)
		}
	}
	return out
}

// nextRootDue is when the first held root is due; zero when none is held.
func (p *orphanProcessor) nextRootDue() time.Time { return p.roots.NextDue() }

// releaseRoots writes the held roots' verdicts and passes them on, in calls of at most
// send_batch_max_size spans.
func (p *orphanProcessor) releaseRoots(ctx context.Context, roots []*heldRoot) error {
	if len(roots) == 0 {
		return nil
	}
	lv := leavingPool.Get().(*leaving)
	defer lv.recycle()
	now := p.clock.Now()
	n := len(roots)
	// Held until handed on (leftHeld).
	defer p.tel.ProcessorOrphanSpansHeld.Add(ctx, int64(-n), p.tel.ID)
	var ref refusals
	for _, hr := range roots {
		writeVerdict(hr.ref.sp.Attributes(), &hr.v)
		lv.add(hr.ref)
		p.lat.Counted(hr.trace, now)
		if lv.spans >= p.cfg.SendBatchMaxSize {
			p.send(ctx, lv, 0, &ref)
		}
	}
	p.send(ctx, lv, 0, &ref)
	return ref.err()
}
