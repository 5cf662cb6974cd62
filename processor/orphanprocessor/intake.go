package orphanprocessor

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/bytrace"
	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Taking a batch in (ConsumeTraces): its spans are grouped by trace with no lock held (group),
// then each trace joins its held trace in its shard (holdInShards), or, with decide_each_batch,
// the batch's traces are released as they are (holdBatch).

// intake is one ConsumeTraces call's working memory, recycled (intakePool).
type intake struct {
	traces   bytrace.Groups[intakeSpan] // the batch's spans by trace, traces in order of first span
	pass     []heldSpan                 // spans without a trace ID: they leave now, undecided
	observed []verdict.Span             // what the batch tells other traces (roots, keys)
	ids      []verdict.TraceID          // the groups' trace IDs
	known    []bool                     // by group: the trace's root was known before the batch
	holdings []*heldTrace               // holdBatch's traces still held at the batch's end
	rst      spanread.Stats
}

// intakeSpan is a span of the batch being taken in.
type intakeSpan struct {
	ref  heldSpan
	root bool // it has no parent
}

var intakePool = sync.Pool{New: func() any { return &intake{} }}

// recycle drops what in points into and returns it to the pool.
func (in *intake) recycle() {
	in.traces.Reset()
	clear(in.pass) // released by now
	in.pass = in.pass[:0]
	clear(in.observed)
	in.observed = in.observed[:0]
	clear(in.holdings)
	in.holdings = in.holdings[:0]
	in.rst = spanread.Stats{}
	intakePool.Put(in)
}

// group reads td into in: its spans by trace, what its spans tell other traces (a root's
// record, an idempotency key; the rest of what the correlator reads is read when the trace is
// decided), and the spans without a trace ID, marked. It returns the batch.
func (in *intake) group(r *spanread.Reader, td ptrace.Traces) *heldBatch {
	rss := td.ResourceSpans()
	nScopes := 0
	for ri := range rss.Len() {
		nScopes += rss.At(ri).ScopeSpans().Len()
	}
	b := &heldBatch{td: td}
	scopes := make([]heldScope, 0, nScopes)
	for ri := range rss.Len() {
		rs := rss.At(ri)
		sss := rs.ScopeSpans()
		res := spanread.NewResource(rs.Resource())
		for si := range sss.Len() {
			ss := sss.At(si)
			scopes = append(scopes, heldScope{b: b, rs: rs, ss: ss, res: res})
			src := &scopes[len(scopes)-1]
			spans := ss.Spans()
			for k := range spans.Len() {
				sp := spans.At(k)
				traceID := verdict.TraceID(sp.TraceID())
				if traceID.IsZero() {
					// Cannot be grouped with its trace: passed on at once, unchanged (but read,
					// so that its unusable attributes are counted).
					var vs verdict.Span
					r.ReadFor(&src.res, sp, &vs, &in.rst)
					// liveness unknown marks it as seen, so the exporter does not count it
					// as a span nobody judged.
					sp.Attributes().PutStr(verdict.AttrLiveness, verdict.LivenessUnknown.String())
					in.pass = append(in.pass, heldSpan{sp: sp, src: src})
					continue
				}
				parentID := verdict.SpanID(sp.ParentSpanID())
				switch {
				case parentID.IsZero():
					var vs verdict.Span
					var counted spanread.Stats // counted when the trace is decided
					r.ReadFor(&src.res, sp, &vs, &counted)
					in.observed = append(in.observed, vs)
				default:
					if kh := r.KeyHash(sp); kh != 0 {
						in.observed = append(in.observed, verdict.Span{TraceID: traceID, SpanID: verdict.SpanID(sp.SpanID()), ParentID: parentID, KeyHash: kh})
					}
				}
				in.traces.Add(traceID, intakeSpan{ref: heldSpan{sp: sp, src: src}, root: parentID.IsZero()})
			}
		}
	}
	return b
}

// holdInShards adds the batch's traces to their held traces, each in its shard under the
// shard's lock; a trace not held yet is added once a place is made for it (makeRoom). It returns
// the traces taken out at once (max_spans_per_trace; max_traces: the oldest of all shards) and
// the number of late spans (their trace's root was known before the batch).
func (p *orphanProcessor) holdInShards(ctx context.Context, in *intake, now time.Time) (ready []*heldTrace, late int64) {
	// traces_held goes up before any of the batch's traces can be taken, by the batch's traces
	// (corrected below for those already held).
	budget := int64(in.traces.Len())
	p.tel.ProcessorOrphanTracesHeld.Add(ctx, budget, p.tel.ID)
	// Each span's share of the batch's encoded size (limits.max_held_bytes), added before any
	// of the batch's traces can be taken out (and its bytes with it).
	var sb int64
	if n := in.traces.Items(); n > 0 {
		if sb = in.traces.At(0).ref.src.b.spanBytes; sb > 0 {
			p.heldBytes.Add(sb * int64(n))
		}
	}
	created := int64(0)
	for gi := range in.traces.Len() {
		g := in.traces.Group(gi)
		sh := p.shardOf(g.ID)
		sh.mu.Lock()
		var h *heldTrace
		left := g.N
		for i := in.traces.First(gi); i >= 0; i = in.traces.Next(i) {
			s := in.traces.At(i)
			if h == nil || h.decided {
				if h = sh.lookup(g.ID); h == nil {
					// A new trace: its place is made with no shard locked (max_traces).
					sh.mu.Unlock()
					ready = p.makeRoom(ctx, ready)
					sh.mu.Lock()
					if h = sh.lookup(g.ID); h != nil {
						p.traces.Add(-1) // another intake added it meanwhile
					} else {
						h = p.addHeld(sh, g.ID, now, in.known[gi], s.root)
						if created++; created > budget {
							p.tel.ProcessorOrphanTracesHeld.Add(ctx, 1, p.tel.ID)
							budget++
						}
					}
				}
			}
			if s.root && !h.hasRoot {
				h.hasRoot = true
				p.lat.RootArrived(g.ID, now)
				p.setDueLocked(sh, h, now.Add(p.afterRoot))
			}
			sh.hold(h, s.ref, left)
			h.bytes += sb
			left--
			if h.late {
				late++
			}
			if len(h.refs) >= p.cfg.Limits.MaxSpansPerTrace && !h.decided {
				p.tel.ProcessorOrphanEvictions.Add(ctx, 1, p.tel.With("state", "spans_per_trace"))
				// The next spans of this batch start a new holding for the trace.
				ready = append(ready, p.take(sh, h))
			}
		}
		p.wakeFor(sh)
		sh.mu.Unlock()
	}
	if created < budget {
		p.tel.ProcessorOrphanTracesHeld.Add(ctx, created-budget, p.tel.ID)
	}
	return p.fitBytes(ctx, ready), late
}

// addHeld adds trace id, whose first span of the batch is root or not, to sh (locked), due
// decision_wait from now, or decision_wait_after_root when its root came before (known).
func (p *orphanProcessor) addHeld(sh *holdShard, id verdict.TraceID, now time.Time, known, root bool) *heldTrace {
	h := sh.add(id, now)
	h.seq = p.seq.Add(1)
	h.late = known && !root
	if known {
		// Its root came before: held the short wait after root.
		p.setDueLocked(sh, h, now.Add(p.afterRoot))
	} else {
		p.setDueLocked(sh, h, now.Add(p.cfg.DecisionWait))
	}
	return h
}

// holdBatch is holdInShards with decide_each_batch: every trace of the batch is due at once, so
// none is put where another goroutine would look; the batch's traces are returned to be
// released now, as the shards would give them (max_spans_per_trace holdings as they fill,
// then the others in order of first span, the oldest beyond max_traces counted as evicted).
func (p *orphanProcessor) holdBatch(ctx context.Context, in *intake, now time.Time) (ready []*heldTrace, late int64) {
	newTraces := int64(0)
	// The batch's traces in one allocation, not one a trace (not recycled: key sharing may keep
	// a trace after the call). Their span lists stay one a trace, each of its exact size: one
	// list for the batch would be rounded up to whole pages.
	traces := make([]heldTrace, in.traces.Len())
	ready = make([]*heldTrace, 0, in.traces.Len())
	for gi := range in.traces.Len() {
		g := in.traces.Group(gi)
		var h *heldTrace
		left := g.N
		for i := in.traces.First(gi); i >= 0; i = in.traces.Next(i) {
			s := in.traces.At(i)
			if h == nil || h.decided {
				if h == nil {
					h = &traces[gi]
				} else {
					h = &heldTrace{} // the spans beyond max_spans_per_trace: a new holding
				}
				h.id, h.first, h.late = g.ID, now, in.known[gi] && !s.root
				in.holdings = append(in.holdings, h)
				newTraces++
			}
			if s.root && !h.hasRoot {
				h.hasRoot = true
				p.lat.RootArrived(g.ID, now)
			}
			h.add(s.ref, left)
			left--
			if h.late {
				late++
			}
			if len(h.refs) >= p.cfg.Limits.MaxSpansPerTrace && !h.decided {
				p.tel.ProcessorOrphanEvictions.Add(ctx, 1, p.tel.With("state", "spans_per_trace"))
				h.decided = true
				ready = append(ready, h)
			}
		}
	}
	if newTraces > 0 {
		p.tel.ProcessorOrphanTracesHeld.Add(ctx, newTraces, p.tel.ID)
	}
	held := 0
	for _, h := range in.holdings {
		if !h.decided {
			held++
		}
	}
	if over := held - p.cfg.Limits.MaxTraces; over > 0 {
		p.tel.ProcessorOrphanEvictions.Add(ctx, int64(over), p.tel.With("state", "traces"))
	}
	for _, h := range in.holdings {
		if !h.decided {
			h.decided = true
			ready = append(ready, h)
		}
	}
	return ready, late
}

// grownBools returns b resized to n elements (their values unset).
func grownBools(b []bool, n int) []bool {
	if cap(b) < n {
		return make([]bool, n)
	}
	return b[:n]
}
