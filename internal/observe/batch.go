package observe

import (
	"sync"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// batch is one Consume call's working memory, recycled (batchPool): the batch's spans read
// into records, grouped by trace, each trace's records contiguous.
type batch struct {
	o        *Observer
	res      []spanread.Resource
	sinkRes  []any          // by resource: what the sink needs of it (Sink.Resource)
	refs     []spanRef      // by record: the span read into spans[i]
	spans    []verdict.Span // the batch's records, each trace's contiguous (groups)
	groups   []traceGroup
	index    map[verdict.TraceID]int32
	linked   []linkedRef // the batch's spans in arrival order, linked by trace
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

// linkedRef is a span of the batch in arrival order, with the next span of its trace.
type linkedRef struct {
	ref  spanRef
	next int32
}

// traceGroup is a trace's spans in the batch: linked[head] along next; once read,
// spans[off:off+n].
type traceGroup struct {
	id         verdict.TraceID
	head, tail int32
	off, n     int
	root       bool // a span of the trace in the batch has no parent
}

var batchPool = sync.Pool{New: func() any { return &batch{index: map[verdict.TraceID]int32{}} }}

// recycle drops what b points into and returns it to the pool.
func (b *batch) recycle() {
	b.o = nil
	clear(b.res)
	b.res = b.res[:0]
	clear(b.sinkRes)
	b.sinkRes = b.sinkRes[:0]
	clear(b.refs)
	b.refs = b.refs[:0]
	clear(b.spans) // the strings they point into
	b.spans = b.spans[:0]
	b.groups = b.groups[:0]
	if len(b.index) > 4096 {
		b.index = map[verdict.TraceID]int32{} // do not keep a huge batch's table
	} else {
		clear(b.index)
	}
	clear(b.linked)
	b.linked = b.linked[:0]
	clear(b.observed)
	b.observed = b.observed[:0]
	clear(b.noTrace)
	b.noTrace = b.noTrace[:0]
	clear(b.verdicts)
	b.verdicts = b.verdicts[:0]
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
	last := int32(-1) // a trace's spans mostly come one after another
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
				g := last
				if g < 0 || b.groups[g].id != id {
					var ok bool
					if g, ok = b.index[id]; !ok {
						g = int32(len(b.groups))
						b.groups = append(b.groups, traceGroup{id: id, head: -1, tail: -1})
						b.index[id] = g
					}
					last = g
				}
				i := int32(len(b.linked))
				b.linked = append(b.linked, linkedRef{ref: spanRef{sp: sp, res: res}, next: -1})
				gr := &b.groups[g]
				if gr.tail < 0 {
					gr.head = i
				} else {
					b.linked[gr.tail].next = i
				}
				gr.tail = i
				gr.n++
			}
		}
	}
	n := len(b.linked)
	if cap(b.spans) < n {
		b.spans = make([]verdict.Span, n)
	}
	b.spans = b.spans[:n]
	if cap(b.refs) < n {
		b.refs = make([]spanRef, n)
	}
	b.refs = b.refs[:n]
	off := 0
	for gi := range b.groups {
		g := &b.groups[gi]
		g.off = off
		for i := g.head; i >= 0; i = b.linked[i].next {
			r := b.linked[i].ref
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
