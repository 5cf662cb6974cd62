package orphanprocessor

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Releasing: decided spans leave in batches. Held spans stay where they arrived, in the
// batches the processor was given (and owns: MutatesData). A batch whose spans all leave in
// one release leaves as the very pdata it came in (no span, scope or resource copied); a batch
// whose spans leave over several releases gives up the leaving spans one by one, each moved
// into a new span of the output under a copy of its resource and scope.

// heldBatch is a batch (ptrace.Traces) some of whose spans are held.
type heldBatch struct {
	mu    sync.Mutex
	td    ptrace.Traces
	left  int  // spans still in it that will leave (held, or leaving with a release under way)
	split bool // spans left it one by one: it holds husks (empty spans) and is not passed on
}

// batchLeaving is the spans of one batch that leave in a release.
type batchLeaving struct {
	b    *heldBatch
	refs []heldSpan
}

// leaving gathers the spans of one release by the batch they are in. Recycled (leavingPool).
type leaving struct {
	batches []batchLeaving
	last    int                // index of the batch the previous span was in
	index   map[*heldBatch]int // batches by index, once there are many
	spans   int
}

var leavingPool = sync.Pool{New: func() any { return &leaving{} }}

// add records that r leaves.
func (lv *leaving) add(r heldSpan) {
	lv.spans++
	b := r.src.b
	if lv.last < len(lv.batches) && lv.batches[lv.last].b == b {
		lv.batches[lv.last].refs = append(lv.batches[lv.last].refs, r)
		return
	}
	i, ok := -1, false
	if lv.index != nil {
		i, ok = lv.index[b]
	} else {
		for j := range lv.batches {
			if lv.batches[j].b == b {
				i, ok = j, true
				break
			}
		}
	}
	if !ok {
		i = len(lv.batches)
		if i < cap(lv.batches) {
			lv.batches = lv.batches[:i+1]
			lv.batches[i].b = b
		} else {
			lv.batches = append(lv.batches, batchLeaving{b: b})
		}
		if lv.index != nil {
			lv.index[b] = i
		} else if len(lv.batches) > 16 {
			lv.index = make(map[*heldBatch]int, 64)
			for j := range lv.batches {
				lv.index[lv.batches[j].b] = j
			}
		}
	}
	lv.last = i
	lv.batches[i].refs = append(lv.batches[i].refs, r)
}

// recycle drops what lv points into and returns it to the pool.
func (lv *leaving) recycle() {
	for i := range lv.batches {
		bl := &lv.batches[i]
		clear(bl.refs)
		bl.refs, bl.b = bl.refs[:0], nil
	}
	lv.batches = lv.batches[:0]
	lv.index = nil
	lv.last, lv.spans = 0, 0
	leavingPool.Put(lv)
}

// assemble takes the leaving spans out of their batches into one ptrace.Traces: whole batches
// as they are, the spans of batches that stay (in part) moved out one by one, grouped by the
// ScopeSpans they arrived in.
func (lv *leaving) assemble() ptrace.Traces {
	var (
		out ptrace.Traces
		has bool
	)
	put := func(td ptrace.Traces) {
		if !has {
			out, has = td, true
			return
		}
		td.ResourceSpans().MoveAndAppendTo(out.ResourceSpans())
	}
	var parts ptrace.Traces // spans of batches that stay in part
	hasParts := false
	for i := range lv.batches {
		bl := &lv.batches[i]
		b := bl.b
		b.mu.Lock()
		if len(bl.refs) == b.left && !b.split {
			b.left = 0
			put(b.td)
			b.td = ptrace.Traces{}
		} else {
			if !hasParts {
				parts, hasParts = ptrace.NewTraces(), true
			}
			b.left -= len(bl.refs)
			b.split = true
			extract(parts, bl.refs)
		}
		b.mu.Unlock()
	}
	if hasParts {
		put(parts)
	}
	if !has {
		return ptrace.NewTraces()
	}
	return out
}

// extract moves refs (spans of one batch, whose lock is held) into td, grouped by the
// ScopeSpans they arrived in, each under a copy of its resource and scope. Each span moves into
// a new span of td and leaves an empty span (a husk) in its batch, which is not passed on any
// more.
func extract(td ptrace.Traces, refs []heldSpan) {
	var (
		src *heldScope
		dst ptrace.SpanSlice
	)
	outSS := map[*heldScope]ptrace.SpanSlice{}
	outRS := map[ptrace.ResourceSpans]ptrace.ResourceSpans{}
	for _, r := range refs {
		if r.src != src {
			src = r.src
			var ok bool
			if dst, ok = outSS[src]; !ok {
				drs, ok := outRS[src.rs]
				if !ok {
					drs = td.ResourceSpans().AppendEmpty()
					src.rs.Resource().CopyTo(drs.Resource())
					drs.SetSchemaUrl(src.rs.SchemaUrl())
					outRS[src.rs] = drs
				}
				dss := drs.ScopeSpans().AppendEmpty()
				src.ss.Scope().CopyTo(dss.Scope())
				dss.SetSchemaUrl(src.ss.SchemaUrl())
				dst = dss.Spans()
				outSS[src] = dst
			}
		}
		r.sp.MoveTo(dst.AppendEmpty())
	}
}

// release decides the given traces, writes their verdicts and passes them on in one batch.
// A refusal by the next consumer is returned; where nobody can be told (the release loop,
// shutdown), the caller passes the error to dropped.
func (p *orphanProcessor) release(ctx context.Context, ready []*heldTrace) error {
	return p.releaseWith(ctx, ready, nil)
}

// releaseWith is release with spans that leave undecided (pass: spans without a trace ID,
// their mark written) in the same batch.
func (p *orphanProcessor) releaseWith(ctx context.Context, ready []*heldTrace, pass []heldSpan) error {
	ready = p.keyShareHold(ready) // key sharing: traces waiting for a key record (keysharing.go)
	if len(ready) == 0 && len(pass) == 0 {
		return nil
	}
	// Held until decided and handed on, whatever the next consumer says.
	defer p.leftHeld(ctx, len(ready), heldRefs(ready))
	now := p.clock.Now()
	lv := leavingPool.Get().(*leaving)
	defer lv.recycle()
	for _, h := range ready {
		p.decide(ctx, h)
		p.tel.ProcessorOrphanDecisionWait.Record(ctx, now.Sub(h.first).Seconds(), p.tel.ID)
		for _, r := range h.refs {
			if !r.hold {
				lv.add(r)
			}
		}
		h.refs = nil
	}
	for _, r := range pass {
		lv.add(r)
	}
	n := lv.spans
	out := lv.assemble()
	p.tel.ProcessorOrphanSpansProcessed.Add(ctx, int64(n-len(pass)), p.tel.ID) // pass: counted when it came
	p.countCorrelatorEvictions(ctx)
	if err := p.next.ConsumeTraces(ctx, out); err != nil {
		p.tel.ProcessorOrphanDownstreamErrors.Add(ctx, int64(n), p.tel.ID)
		return &refusedError{err: err, spans: n}
	}
	return nil
}
