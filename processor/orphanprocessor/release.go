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
	// spanBytes is each of its spans' share of its encoded size (limits.max_held_bytes): the
	// batch's ptrace.ProtoMarshaler.TracesSize over its spans, at least 1; 0 when the limit is 0.
	spanBytes int64
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
	lv.reset()
	leavingPool.Put(lv)
}

// reset drops what lv points into: it gathers the next part of a release (send).
func (lv *leaving) reset() {
	for i := range lv.batches {
		bl := &lv.batches[i]
		clear(bl.refs)
		bl.refs, bl.b = bl.refs[:0], nil
	}
	lv.batches = lv.batches[:0]
	lv.index = nil
	lv.last, lv.spans = 0, 0
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

// release decides the given traces, writes their verdicts and passes them on, in calls of at
// most send_batch_max_size spans (send). A refusal by the next consumer is returned; where
// nobody can be told (the release loop, shutdown), the caller passes the error to dropped.
func (p *orphanProcessor) release(ctx context.Context, ready []*heldTrace) error {
	return p.releaseWith(ctx, ready, nil)
}

// releaseWith is release with spans that leave undecided (pass: spans without a trace ID,
// their mark written) in the same release, after the decided ones.
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
	var ref refusals
	// Each trace is decided before any of its spans leaves (its carried verdicts are written on
	// one of them); a part full at send_batch_max_size leaves before the next trace is decided.
	for _, h := range ready {
		p.decide(ctx, h)
		p.tel.ProcessorOrphanDecisionWait.Record(ctx, now.Sub(h.first).Seconds(), p.tel.ID)
		for _, r := range h.refs {
			if !r.hold {
				lv.add(r)
				if lv.spans >= p.cfg.SendBatchMaxSize {
					p.send(ctx, lv, 0, &ref)
				}
			}
		}
		h.refs = nil
	}
	passing := 0 // spans of pass in lv: counted as processed when they came
	for _, r := range pass {
		lv.add(r)
		if passing++; lv.spans >= p.cfg.SendBatchMaxSize {
			p.send(ctx, lv, passing, &ref)
			passing = 0
		}
	}
	p.send(ctx, lv, passing, &ref)
	return ref.err()
}

// send assembles the spans lv gathered (at most send_batch_max_size), passes them on in one
// call, counts them (processed, but for the counted spans of pass; downstream_errors when
// refused, adding them to ref) and resets lv for the next part of the release.
func (p *orphanProcessor) send(ctx context.Context, lv *leaving, counted int, ref *refusals) {
	n := lv.spans
	if n == 0 {
		return
	}
	out := lv.assemble()
	lv.reset()
	if n > counted {
		p.tel.ProcessorOrphanSpansProcessed.Add(ctx, int64(n-counted), p.tel.ID)
	}
	p.countCorrelatorEvictions(ctx)
	p.handOn(ctx, out, n, ref)
}

// handOn passes out (n spans, at most send_batch_max_size) to the next consumer; a refusal is
// counted in downstream_errors and added to ref.
func (p *orphanProcessor) handOn(ctx context.Context, out ptrace.Traces, n int, ref *refusals) {
	if err := p.next.ConsumeTraces(ctx, out); err != nil {
		p.tel.ProcessorOrphanDownstreamErrors.Add(ctx, int64(n), p.tel.ID)
		ref.add(err, n)
	}
}

// refusals gathers the next consumer's refusals of the parts of one release: the spans refused
// and the first error (the parts after a refusal are still handed on: each is a request of its
// own downstream).
type refusals struct {
	first error
	spans int
}

func (r *refusals) add(err error, n int) {
	if r.first == nil {
		r.first = err
	}
	r.spans += n
}

// err is the release's refusedError; nil when nothing was refused.
func (r *refusals) err() error {
	if r.spans == 0 {
		return nil
	}
	return &refusedError{err: r.first, spans: r.spans}
}
