package observe

import (
	"sync"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/bytrace"
	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// batch is one Consume call's working memory, recycled (batchPool): the batch's spans read
// into records, grouped by trace, each trace's records contiguous.
type batch struct {
	o        *Observer
	res      []spanread.Resource
	sinkRes  []any                   // by resource: what the sink needs of it (Sink.Resource)
	refs     []spanRef               // by record: the span read into spans[i]
	spans    []verdict.Span          // the batch's records, each trace's contiguous (groups)
	traces   bytrace.Groups[spanRef] // the batch's spans by trace
	groups   []traceGroup            // by trace, in the order of traces
	observed []verdict.Span
	noTrace  []spanRef // spans without a trace ID: counted unknown, never grouped
	verdicts []verdict.Verdict
	rst      spanread.Stats
	known    []bool // by group: the trace's root was known before the batch
}

// spanRef is a span of the batch and its resource (an index into batch.res).
type spanRef struct {
	sp  ptrace.Span
	res int32
}

// traceGroup is a trace's records in the batch: spans[off:off+n].
type traceGroup struct {
	id     verdict.TraceID
	off, n int
	root   bool // a span of the trace in the batch has no parent
}

var batchPool = sync.Pool{New: func() any { return &batch{} }}

// recycle drops what b points into and returns it to the pool.
func (b *batch) recycle() {
	b.o = nil
	b.res = emptied(b.res)
	b.sinkRes = emptied(b.sinkRes)
	b.refs = emptied(b.refs)
	b.spans = emptied(b.spans) // and the strings they point into
	b.groups = b.groups[:0]
	b.traces.Reset()
	b.observed = emptied(b.observed)
	b.noTrace = emptied(b.noTrace)
	b.verdicts = emptied(b.verdicts)
	b.known = b.known[:0]
	b.rst = spanread.Stats{}
	batchPool.Put(b)
}

// group reads td into b: its spans grouped by trace (IDs only), then each trace's spans read
// into contiguous records (with what the sink keeps of each), and what the batch tells other
// traces (roots, idempotency keys).
func (b *batch) group(o *Observer, td ptrace.Traces) {
	b.o = o
	rss := td.ResourceSpans()
	for ri := range rss.Len() {
		rs := rss.At(ri)
		b.res = append(b.res, spanread.NewResource(rs.Resource()))
		b.sinkRes = append(b.sinkRes, o.sink.Resource(rs.Resource()))
		res := int32(len(b.res) - 1)
		sss := rs.ScopeSpans()
		for si := range sss.Len() {
			spans := sss.At(si).Spans()
			for k := range spans.Len() {
				sp := spans.At(k)
				id := verdict.TraceID(sp.TraceID())
				if id.IsZero() {
					b.noTrace = append(b.noTrace, spanRef{sp: sp, res: res})
					continue
				}
				b.traces.Add(id, spanRef{sp: sp, res: res})
			}
		}
	}
	n := b.traces.Items()
	if cap(b.spans) < n {
		b.spans = make([]verdict.Span, n)
	}
	b.spans = b.spans[:n]
	if cap(b.refs) < n {
		b.refs = make([]spanRef, n)
	}
	b.refs = b.refs[:n]
	off := 0
	for gi := range b.traces.Len() {
		tr := b.traces.Group(gi)
		b.groups = append(b.groups, traceGroup{id: tr.ID, off: off, n: tr.N})
		g := &b.groups[gi]
		for i := b.traces.First(gi); i >= 0; i = b.traces.Next(i) {
			r := *b.traces.At(i)
			s := &b.spans[off]
			o.reader.ReadFor(&b.res[r.res], r.sp, s, &b.rst)
			// What the sink needs to count the span's verdict when it is decided, after
			// Consume returned: the span itself is not kept.
			s.Extra = o.sink.Keep(b.sinkRes[r.res], r.sp)
			b.refs[off] = r
			off++
			switch {
			case s.ParentID.IsZero():
				g.root = true
				b.observed = append(b.observed, *s)
			case s.KeyHash != 0:
				b.observed = append(b.observed, verdict.Span{TraceID: s.TraceID, SpanID: s.SpanID, ParentID: s.ParentID, KeyHash: s.KeyHash})
			}
		}
	}
}

// emptied clears s (so the pool keeps nothing it points to alive) and returns it with length 0,
// its capacity kept.
func emptied[S ~[]E, E any](s S) S {
	clear(s)
	return s[:0]
}
