package orphanprocessor

import (
	"context"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Releasing: decided spans leave in batches.

// release decides the given traces, writes their verdicts and passes them on in one batch.
// A refusal by the next consumer is returned; where nobody can be told (the release loop,
// shutdown), the caller passes the error to dropped.
func (p *orphanProcessor) release(ctx context.Context, ready []*heldTrace) error {
	ready = p.keyShareHold(ready) // key sharing: traces waiting for a key record (keysharing.go)
	if len(ready) == 0 {
		return nil
	}
	now := p.clock.Now()
	n := 0
	// The spans leave grouped as they came: by the ScopeSpans they arrived in.
	type group struct {
		src   *heldScope
		spans []ptrace.Span
	}
	var groups []group
	index := map[*heldScope]int{}
	for _, h := range ready {
		p.decide(ctx, h)
		p.tel.ProcessorOrphanDecisionWait.Record(ctx, now.Sub(h.first).Seconds(), p.tel.ID)
		for _, r := range h.refs {
			if r.hold {
				continue
			}
			n++
			gi, ok := index[r.src]
			if !ok {
				gi = len(groups)
				index[r.src] = gi
				groups = append(groups, group{src: r.src})
			}
			groups[gi].spans = append(groups[gi].spans, r.sp)
		}
		h.refs = nil
	}
	out := ptrace.NewTraces()
	outRS := make(map[ptrace.ResourceSpans]ptrace.ResourceSpans, len(groups))
	for _, g := range groups {
		drs, ok := outRS[g.src.rs]
		if !ok {
			drs = out.ResourceSpans().AppendEmpty()
			g.src.rs.Resource().CopyTo(drs.Resource())
			drs.SetSchemaUrl(g.src.rs.SchemaUrl())
			outRS[g.src.rs] = drs
		}
		dss := drs.ScopeSpans().AppendEmpty()
		g.src.ss.Scope().CopyTo(dss.Scope())
		dss.SetSchemaUrl(g.src.ss.SchemaUrl())
		// Each span moves into the output and leaves an empty span in its batch.
		dst := dss.Spans()
		dst.EnsureCapacity(len(g.spans))
		for _, sp := range g.spans {
			sp.MoveTo(dst.AppendEmpty())
		}
	}
	p.tel.ProcessorOrphanSpansProcessed.Add(ctx, int64(n), p.tel.ID)
	p.countCorrelatorEvictions(ctx)
	if err := p.next.ConsumeTraces(ctx, out); err != nil {
		p.tel.ProcessorOrphanDownstreamErrors.Add(ctx, int64(n), p.tel.ID)
		return &refusedError{err: err, spans: n}
	}
	return nil
}

// moveSpan moves sp to td, with a copy of its resource and scope. The processor owns the
// batches it is given (MutatesData), so spans need not be copied.
func moveSpan(td ptrace.Traces, rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, sp ptrace.Span) ptrace.Span {
	drs := td.ResourceSpans().AppendEmpty()
	rs.Resource().CopyTo(drs.Resource())
	drs.SetSchemaUrl(rs.SchemaUrl())
	dss := drs.ScopeSpans().AppendEmpty()
	ss.Scope().CopyTo(dss.Scope())
	dss.SetSchemaUrl(ss.SchemaUrl())
	moved := dss.Spans().AppendEmpty()
	sp.MoveTo(moved)
	return moved
}
