package orphanprocessor

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/internal/verdictattrs"
)

// Writing verdicts: deciding a released trace and writing its verdicts, carried verdicts
// and carrier spans onto spans.

// spanBufs recycles the verdict.Span buffers that decide reads a trace into.
var spanBufs = sync.Pool{New: func() any { return new([]verdict.Span) }}

// verdictBufs recycles the buffers decide's verdicts are written into.
var verdictBufs = sync.Pool{New: func() any { return new([]verdict.Verdict) }}

// decide asks the correlator for one trace's verdicts and writes them onto its spans: the
// verdicts, or the deferred mark when the root has not arrived, and the verdicts carried for
// spans that left before (as events on the trace's root when it is here, else its first span).
func (p *orphanProcessor) decide(ctx context.Context, h *heldTrace) {
	buf := spanBufs.Get().(*[]verdict.Span)
	spans := slices.Grow((*buf)[:0], len(h.refs))[:len(h.refs)]
	var rst spanread.Stats
	for i, r := range h.refs {
		p.reader.ReadFor(&r.src.res, r.sp, &spans[i], &rst)
	}
	p.countReaderStats(ctx, &rst)
	vbuf := verdictBufs.Get().(*[]verdict.Verdict)
	var d verdict.Decision
	if p.atOnce {
		// Each batch is decided whole, as it arrives (decide_each_batch): one decision, every run
		// over, nothing deferred or kept but root records.
		d.Verdicts, d.Stats = p.corr.DecideAt(*vbuf, spans, p.clock.Now().UnixNano())
		d.Stats.Spans = len(spans)
		if d.Stats.RootMissing {
			d.Stats.RootMissingSpans = 0
			for i := range spans {
				if verdict.WithoutRoot(&spans[i], &d.Verdicts[i]) {
					d.Stats.RootMissingSpans++
				}
			}
			d.Stats.RootMissing = d.Stats.RootMissingSpans > 0
		}
	} else {
		// extra: the attributes that name the operation of a span whose verdict may be carried
		// later (a deferred span, the final attempt of a run left open).
		extra := func(i int) any {
			if ops := operationAttributes(h.refs[i].sp.Attributes()); ops != nil {
				return ops
			}
			return nil
		}
		if h.last {
			d = p.corr.ReleaseLast(*vbuf, spans, p.clock.Now().UnixNano(), extra)
		} else {
			d = p.corr.Release(*vbuf, spans, p.clock.Now().UnixNano(), extra)
		}
	}
	clear(spans) // drop the strings it points into before the buffer is reused
	*buf = spans[:0]
	spanBufs.Put(buf)
	verdicts := d.Verdicts
	defer func() {
		clear(verdicts)
		*vbuf = verdicts[:0]
		verdictBufs.Put(vbuf)
	}()
	if d.Deferred {
		for _, r := range h.refs {
			r.sp.Attributes().PutBool(verdict.AttrDeferred, true)
		}
		p.tel.ProcessorOrphanSpansDeferred.Add(ctx, int64(len(h.refs)), p.tel.ID)
		return
	}
	p.updateHeldRoots(h.id, d.Reach)
	p.lat.Counted(h.id, p.clock.Now())
	if p.atOnce {
		p.lat.Expire(time.Time{}) // every decision is final
	}
	provisional := int64(0)
	for i := range verdicts {
		if verdicts[i].Provisional {
			// Orphaned under the root known, but a span above it has not come: its verdict is
			// carried when the chain is complete (or after chain_wait).
			h.refs[i].sp.Attributes().PutBool(verdict.AttrDeferred, true)
			provisional++
			continue
		}
		if !h.last && !p.atOnce && p.rootHold > 0 && verdict.HeldAbandonedRoot(&verdicts[i], h.refs[i].sp.ParentSpanID().IsEmpty()) {
			p.holdRoot(ctx, h, i, &verdicts[i])
			continue
		}
		writeVerdict(h.refs[i].sp.Attributes(), &verdicts[i])
	}
	if provisional > 0 {
		p.tel.ProcessorOrphanSpansDeferred.Add(ctx, provisional, p.tel.ID)
	}
	if len(d.Carried) > 0 {
		carrier := h.refs[0].sp
		for _, r := range h.refs {
			if r.sp.ParentSpanID().IsEmpty() {
				carrier = r.sp
				break
			}
		}
		carrier.Events().EnsureCapacity(carrier.Events().Len() + len(d.Carried))
		for i := range d.Carried {
			writeCarried(carrier, &d.Carried[i])
		}
	}
	p.countDecision(ctx, verdicts, d.Carried, &d.Stats)
}

// operationAttributes copies the attributes that name a span's operation and its token usage
// (verdict.OperationAttributes, verdict.UsageAttributes), for a verdict carried later: found in
// one pass over the span's attributes (the first of a name, as Get would), kept in the lists'
// order. It returns nil when the span has none of them.
func operationAttributes(a pcommon.Map) *carriedAttrs {
	var (
		found [maxCarriedNames]pcommon.Value
		has   uint64
		n     int
	)
	for k, v := range a.All() {
		if i, ok := carriedIndex[k]; ok && has&(1<<i) == 0 {
			has |= 1 << i
			found[i] = v
			n++
		}
	}
	if n == 0 {
		return nil
	}
	c := &carriedAttrs{list: make([]carriedAttr, 0, n)}
	for i := range carriedNames {
		if has&(1<<i) == 0 {
			continue
		}
		v := found[i]
		ca := carriedAttr{name: uint8(i), typ: v.Type()}
		switch ca.typ {
		case pcommon.ValueTypeStr:
			ca.str = v.Str()
		case pcommon.ValueTypeInt:
			ca.num = uint64(v.Int())
		case pcommon.ValueTypeDouble:
			ca.num = math.Float64bits(v.Double())
		case pcommon.ValueTypeBool:
			if v.Bool() {
				ca.num = 1
			}
		case pcommon.ValueTypeEmpty:
		default: // arrays, maps and bytes: a pdata copy (captured headers are arrays of one value)
			ca.val = pcommon.NewValueEmpty()
			v.CopyTo(ca.val)
		}
		c.list = append(c.list, ca)
	}
	return c
}

// carriedAttrs is what a span that leaves provisional keeps of its attributes for its verdict
// carried later (verdict.Span.Extra): the values of those of carriedNames it has, in that
// order; scalars as Go values (one allocation for them all, none per value), other values as
// pdata copies.
type carriedAttrs struct {
	list []carriedAttr
}

// carriedAttr is one attribute of carriedAttrs: carriedNames[name] of type typ, its value in
// str (a string), num (an int, a double's bits, a bool as 0 or 1) or val (any other type).
type carriedAttr struct {
	str  string
	num  uint64
	val  pcommon.Value
	name uint8
	typ  pcommon.ValueType
}

// usage reports whether the attribute is one of verdict.UsageAttributes (a part of a verdict
// copies none).
func (ca *carriedAttr) usage() bool { return int(ca.name) >= len(verdict.OperationAttributes) }

// putTo writes the attribute into a.
func (ca *carriedAttr) putTo(a pcommon.Map) {
	k := carriedNames[ca.name]
	switch ca.typ {
	case pcommon.ValueTypeStr:
		a.PutStr(k, ca.str)
	case pcommon.ValueTypeInt:
		a.PutInt(k, int64(ca.num))
	case pcommon.ValueTypeDouble:
		a.PutDouble(k, math.Float64frombits(ca.num))
	case pcommon.ValueTypeBool:
		a.PutBool(k, ca.num == 1)
	case pcommon.ValueTypeEmpty:
		a.PutEmpty(k)
	default:
		ca.val.CopyTo(a.PutEmpty(k))
	}
}

// carriedNames are verdict.OperationAttributes then verdict.UsageAttributes (at most
// maxCarriedNames), and carriedIndex their positions.
var (
	carriedNames = append(slices.Clone(verdict.OperationAttributes), verdict.UsageAttributes...)
	carriedIndex = func() map[string]int {
		if len(carriedNames) > maxCarriedNames {
			panic("orphanprocessor: more than 64 attributes copied for carried verdicts")
		}
		m := make(map[string]int, len(carriedNames))
		for i, k := range carriedNames {
			m[k] = i
		}
		return m
	}()
)

// maxCarriedNames bounds carriedNames (a bit each in operationAttributes).
const maxCarriedNames = 64

// carriedNameAttrs is how many attributes writeCarried writes to name the span a carried verdict
// is of (trace and span ID, name, kind, start, service.name).
const carriedNameAttrs = 6

// writeCarried adds a carried verdict to sp as an EventVerdict event (verdict/attributes.go).
func writeCarried(sp ptrace.Span, cv *verdict.Carried) {
	s := &cv.Span
	ev := sp.Events().AppendEmpty()
	ev.SetName(verdict.EventVerdict)
	ev.SetTimestamp(pcommon.Timestamp(max(s.End, 0)))
	a := ev.Attributes()
	ops, _ := s.Extra.(*carriedAttrs)
	// One array for all the event's attributes: the span's operation attributes, the six that
	// name the span, and the verdict's.
	n := carriedNameAttrs + verdictAttrs(&cv.Verdict)
	if ops != nil {
		n += len(ops.list)
	}
	a.EnsureCapacity(n)
	if ops != nil {
		for i := range ops.list {
			if ca := &ops.list[i]; cv.Part == verdict.PartAll || !ca.usage() {
				ca.putTo(a) // a part of a verdict counts no spend: no usage attributes
			}
		}
	}
	if tid, sid := pcommon.TraceID(s.TraceID), pcommon.SpanID(s.SpanID); tid.IsEmpty() || sid.IsEmpty() {
		a.PutStr(verdict.AttrEventTraceID, tid.String())
		a.PutStr(verdict.AttrEventSpanID, sid.String())
	} else {
		ids := idsHex(s.TraceID, s.SpanID)
		a.PutStr(verdict.AttrEventTraceID, ids[:32])
		a.PutStr(verdict.AttrEventSpanID, ids[32:])
	}
	a.PutStr(verdict.AttrEventSpanName, s.Name)
	if int(s.Kind) < len(verdictattrs.KindNames) {
		a.PutStr(verdict.AttrEventSpanKind, verdictattrs.KindNames[s.Kind])
	}
	a.PutInt(verdict.AttrEventStart, max(s.Start, 0))
	a.PutStr("service.name", s.Service)
	verdictattrs.WritePart(a, cv.Part, &cv.Verdict)
}

// idsHex is a trace ID's 32 lower-case hex digits then a span ID's 16, in one string: one
// allocation for the two, each as pcommon's String method writes a non-empty ID.
func idsHex(t verdict.TraceID, s verdict.SpanID) string {
	var b [48]byte
	hex.Encode(b[:32], t[:])
	hex.Encode(b[32:], s[:])
	return string(b[:])
}

// passCarried passes on carried verdicts that no span of their trace is there to carry (a
// sweep, shutdown): one carrier span per trace (verdict.CarrierSpanName), a child of the first
// span it carries for, in that span's service; in calls of at most send_batch_max_size carriers.
func (p *orphanProcessor) passCarried(ctx context.Context, carried []verdict.Carried, st verdict.Stats, now time.Time) error {
	if len(carried) == 0 {
		return nil
	}
	p.countDecision(ctx, nil, carried, &st)
	p.countCorrelatorEvictions(ctx)
	// The carriers first, with how many events each will carry, then the events: one events
	// array per carrier. A new part begins every send_batch_max_size carriers.
	type carrier struct {
		sp ptrace.Span
		n  int
	}
	var (
		parts []ptrace.Traces
		sizes []int
	)
	byTrace := map[verdict.TraceID]*carrier{}
	for i := range carried {
		cv := &carried[i]
		c, ok := byTrace[cv.Span.TraceID]
		if !ok {
			if len(parts) == 0 || sizes[len(sizes)-1] >= p.cfg.SendBatchMaxSize {
				parts, sizes = append(parts, ptrace.NewTraces()), append(sizes, 0)
			}
			sizes[len(sizes)-1]++
			rs := parts[len(parts)-1].ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", cv.Span.Service)
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName(carrierScope)
			sp := ss.Spans().AppendEmpty()
			sp.SetTraceID(pcommon.TraceID(cv.Span.TraceID))
			sp.SetSpanID(p.newSpanID())
			sp.SetParentSpanID(pcommon.SpanID(cv.Span.SpanID))
			sp.SetName(verdict.CarrierSpanName)
			sp.SetKind(ptrace.SpanKindInternal)
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
			sp.Attributes().PutBool(verdict.AttrCarrier, true)
			c = &carrier{sp: sp}
			byTrace[cv.Span.TraceID] = c
		}
		c.n++
	}
	for _, c := range byTrace {
		c.sp.Events().EnsureCapacity(c.n)
	}
	for i := range carried {
		writeCarried(byTrace[carried[i].Span.TraceID].sp, &carried[i])
	}
	for t := range byTrace {
		p.lat.Counted(t, now)
	}
	p.tel.ProcessorOrphanCarrierSpans.Add(ctx, int64(len(byTrace)), p.tel.ID)
	var ref refusals
	for i, out := range parts {
		p.handOn(ctx, out, sizes[i], &ref)
	}
	return ref.err()
}

// carrierScope is the instrumentation scope of carrier spans.
const carrierScope = "github.com/orphanwatch/orphanwatch/processor/orphanprocessor"

// newSpanID returns a random span ID for a carrier span.
func (p *orphanProcessor) newSpanID() pcommon.SpanID {
	var id pcommon.SpanID
	for id.IsEmpty() {
		binary.LittleEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}

// verdictAttrs is how many attributes writeVerdict writes for v (internal/verdictattrs).
func verdictAttrs(v *verdict.Verdict) int { return verdictattrs.Count(v) }

// writeVerdict writes v's attributes (internal/verdictattrs).
func writeVerdict(a pcommon.Map, v *verdict.Verdict) { verdictattrs.Write(a, v) }
