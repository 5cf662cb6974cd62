package orphanmetrics // import "github.com/orphanwatch/orphanwatch/internal/orphanmetrics"

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Observe mode (DESIGN.md "Two ways to run"): the verdicts are decided here, by
// internal/observe, from what it reads of each span as it arrives; the recorder counts them as
// it counts the orphanwatch.* attributes the orphan processor writes in annotate mode. A
// verdict is turned into the values those attributes would have had (setVerdict mirrors the
// processor's writeVerdict, field by field), given to the same spanView as Go values, and
// counted by the same code (recordView): both modes give the same series for the same spans.

// typedKind is the type of a typedValue, as pcommon's value types.
type typedKind uint8

const (
	tkStr typedKind = iota
	tkBool
	tkInt
	tkDouble
	tkOther // an array, map or bytes value: no reader of the exporter's accepts it
)

// typedValue is an attribute value held as a Go value: a string, or a number's bits.
type typedValue struct {
	s    string
	n    uint64
	kind typedKind
}

func (t *typedValue) str() (string, attrState) {
	if t.kind != tkStr {
		return "", attrInvalid
	}
	return t.s, attrValid
}

func (t *typedValue) boolean() (bool, attrState) {
	if t.kind != tkBool {
		return false, attrInvalid
	}
	return t.n != 0, attrValid
}

func (t *typedValue) integer() (int64, attrState) {
	switch t.kind {
	case tkInt:
		return int64(t.n), attrValid
	case tkDouble:
		f := math.Float64frombits(t.n)
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), attrValid
		}
	}
	return 0, attrInvalid
}

// number is spanView.number for a typed value: the same conversions and checks.
func (t *typedValue) number(decimal, nonNegative bool) (float64, attrState) {
	var f float64
	switch t.kind {
	case tkInt:
		f = float64(int64(t.n))
	case tkDouble:
		f = math.Float64frombits(t.n)
	case tkStr:
		if !decimal {
			return 0, attrInvalid
		}
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(t.s), 64); err != nil {
			return 0, attrInvalid
		}
	default:
		return 0, attrInvalid
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || (nonNegative && f < 0) {
		return 0, attrInvalid
	}
	return f, attrValid
}

// typedOf is the typedValue of a pdata value. A string is the value's own Go string (strings
// are immutable: a later change of the span's attributes replaces it, never changes it), as the
// correlator's records keep the span's name and service.
func typedOf(v pcommon.Value) typedValue {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return typedValue{s: v.Str(), kind: tkStr}
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return typedValue{n: 1, kind: tkBool}
		}
		return typedValue{kind: tkBool}
	case pcommon.ValueTypeInt:
		return typedValue{n: uint64(v.Int()), kind: tkInt}
	case pcommon.ValueTypeDouble:
		return typedValue{n: math.Float64bits(v.Double()), kind: tkDouble}
	}
	return typedValue{kind: tkOther}
}

// set gives the view attribute k as a Go value.
func (v *spanView) set(k int, t typedValue) {
	bit := uint64(1) << k
	v.has |= bit
	v.typed |= bit
	v.typedVals[k] = t
}

func (v *spanView) setStr(k int, s string) { v.set(k, typedValue{s: s, kind: tkStr}) }
func (v *spanView) setInt(k int, n int64)  { v.set(k, typedValue{n: uint64(n), kind: tkInt}) }
func (v *spanView) setDouble(k int, f float64) {
	v.set(k, typedValue{n: math.Float64bits(f), kind: tkDouble})
}
func (v *spanView) setBool(k int, b bool) {
	t := typedValue{kind: tkBool}
	if b {
		t.n = 1
	}
	v.set(k, t)
}

// verdictKeys are the view's orphanwatch.* keys: what a verdict sets. usageKeys are the
// gen_ai.usage keys (a part of a verdict carries none, as a carried event's part has none).
var verdictKeys, usageKeys = func() (m, u uint64) {
	for k, name := range attrNames {
		if strings.HasPrefix(name, "orphanwatch.") {
			m |= 1 << k
		}
	}
	return m, 1<<kGenAIInputTokens | 1<<kGenAIOutputTokens
}()

// setVerdict gives the view the attributes the orphan processor writes for v (its
// writeVerdict, field by field).
func (v *spanView) setVerdict(d *verdict.Verdict) {
	if d.Liveness != verdict.LivenessNone {
		v.setStr(kLiveness, d.Liveness.String())
	}
	if d.Liveness == verdict.LivenessLive || d.Liveness == verdict.LivenessOrphaned {
		v.setBool(kStartedAfterGone, d.StartedAfterGone)
	}
	if d.Liveness == verdict.LivenessOrphaned {
		v.setDouble(kAfterGone, d.AfterGone)
	}
	if d.Detached {
		v.setBool(kDetached, true)
	}
	if d.Attempt > 0 {
		v.setInt(kAttempt, int64(d.Attempt))
	}
	if d.Outcome != verdict.OutcomeNone {
		v.setStr(kRunOutcome, d.Outcome.String())
	}
	if d.EndReason != verdict.EndReasonNone {
		v.setStr(kEndReason, d.EndReason.String())
	}
	if d.CallerService != "" {
		v.setStr(kCallerService, d.CallerService)
	}
	if d.SpendRepeated {
		v.setBool(kSpendRepeated, true)
	}
	if d.SpendNested {
		v.setBool(kSpendNested, true)
	}
	if d.HasReach {
		v.setInt(kReachHops, int64(d.ReachHops))
		v.setInt(kDepthHops, int64(d.OrphanedDepthHops))
	}
	if d.Model != "" {
		v.setStr(kSpendModel, d.Model)
		if d.InputTokens >= 0 {
			v.setInt(kSpendInput, d.InputTokens)
		}
		if d.OutputTokens >= 0 {
			v.setInt(kSpendOutput, d.OutputTokens)
		}
		if d.HasCost {
			v.setDouble(kSpendCost, d.Cost)
		}
	}
}

// keptAttrs is what an observing recorder keeps of a span whose verdict comes later: the
// attributes the exporter reads that are not verdicts (its operation's, the gen_ai usage), as
// Go values. A carried verdict of the processor copies the same ones (verdict.Operation
// Attributes and UsageAttributes) into its event.
type keptAttrs struct {
	has  uint64
	vals []typedValue // in key order, one per bit of has
	// svc is, with dimensions, the cache of the span's service and dimension values, resolved
	// when it arrived (observeSink.Keep); nil without dimensions.
	svc *serviceSeries
}

// keep returns the attributes of the view kept for later, or nil when it has none.
func (v *spanView) keep() *keptAttrs {
	has := v.has &^ verdictKeys
	if has == 0 {
		return nil
	}
	k := &keptAttrs{has: has, vals: make([]typedValue, 0, bitsSet(has))}
	for i := range numKeys {
		if has&(1<<i) != 0 {
			k.vals = append(k.vals, typedOf(v.vals[i]))
		}
	}
	return k
}

// restore gives the view the kept attributes, without the usage keys unless usage is set.
func (v *spanView) restore(k *keptAttrs, usage bool) {
	j := 0
	for i := range numKeys {
		if k.has&(1<<i) == 0 {
			continue
		}
		if usage || usageKeys&(1<<i) == 0 {
			v.set(i, k.vals[j])
		}
		j++
	}
}

func bitsSet(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// observeSink is the recorder as internal/observe's Sink: the verdicts decided here counted as
// the attributes the processor would have written.
type observeSink struct {
	r *Recorder
	// annotated is called once, the first time a span arrives that already carries
	// orphanwatch.* verdicts (an orphan processor before an observing exporter).
	annotated      func()
	sawAnnotated   atomic.Bool
	views, scratch sync.Pool
}

// newObserveSink returns r as a Sink.
func newObserveSink(r *Recorder, annotated func()) *observeSink {
	s := &observeSink{r: r, annotated: annotated}
	s.views.New = func() any { return new(spanView) }
	s.scratch.New = func() any { sp := ptrace.NewSpan(); return &sp }
	return s
}

// resourceDims is what the sink reads of a resource with dimensions: its service label and its
// dimension values (Recorder.resourceDims).
type resourceDims struct {
	service string
	vals    []string
}

// Resource: with dimensions, the resource's service and dimension values, read once for its
// spans; nil without.
func (s *observeSink) Resource(res pcommon.Resource) any {
	if s.r.dims == nil {
		return nil
	}
	attrs := res.Attributes()
	return &resourceDims{service: labelService(spanread.Service(res)), vals: s.r.resourceDims(nil, attrs)}
}

// Keep: the attributes the exporter reads of sp that are not verdicts; with dimensions, also
// the cache of its service and dimension values (the values read now: nothing of sp is kept).
func (s *observeSink) Keep(res any, sp ptrace.Span) any {
	v := s.views.Get().(*spanView)
	attrs := sp.Attributes()
	v.read(attrs)
	if v.has&verdictKeys != 0 {
		s.sawVerdicts()
	}
	k := v.keep()
	s.views.Put(v)
	if rd, _ := res.(*resourceDims); rd != nil {
		svc := s.r.dimService(rd.service, rd.vals, attrs)
		if k == nil {
			return svc
		}
		k.svc = svc
	}
	if k == nil {
		return nil
	}
	return k
}

// Decided counts sp's verdict d as the processor's attributes on sp.
func (s *observeSink) Decided(res any, sp ptrace.Span, vs *verdict.Span, d *verdict.Verdict) {
	v := s.views.Get().(*spanView)
	attrs := sp.Attributes()
	v.read(attrs)
	if v.has&verdictKeys != 0 {
		s.sawVerdicts()
		v.has &^= verdictKeys
	}
	v.setVerdict(d)
	svc := s.r.service(labelService(vs.Service))
	if rd, _ := res.(*resourceDims); rd != nil {
		svc = s.r.dimService(rd.service, rd.vals, attrs)
	}
	s.r.recordView(svc, sp, v, s.r.now().UnixNano())
	s.views.Put(v)
}

// Later counts a verdict decided after its span left, as the processor's carried event.
func (s *observeSink) Later(cv *verdict.Carried) {
	v := s.views.Get().(*spanView)
	v.has, v.typed = 0, 0
	var svc *serviceSeries // with dimensions: resolved when the span arrived (Keep)
	kept, _ := cv.Span.Extra.(*keptAttrs)
	if kept != nil {
		v.restore(kept, cv.Part == verdict.PartAll)
		svc = kept.svc
	} else {
		svc, _ = cv.Span.Extra.(*serviceSeries)
	}
	switch cv.Part {
	case verdict.PartEdge:
		v.setStr(kCallerService, cv.Verdict.CallerService)
	case verdict.PartRun:
		v.setStr(kRunOutcome, cv.Verdict.Outcome.String())
	default:
		v.setVerdict(&cv.Verdict)
	}
	if v.has == 0 {
		s.views.Put(v)
		return
	}
	p := s.scratch.Get().(*ptrace.Span)
	sp := *p
	c := &cv.Span
	sp.SetTraceID(pcommon.TraceID(c.TraceID))
	sp.SetSpanID(pcommon.SpanID(c.SpanID))
	sp.SetName(c.Name)
	sp.SetKind(ptrace.SpanKind(c.Kind))
	sp.SetStartTimestamp(pcommon.Timestamp(max(c.Start, 0)))
	sp.SetEndTimestamp(pcommon.Timestamp(max(c.End, 0)))
	if svc == nil {
		svc = s.r.service(labelService(c.Service))
		if s.r.dims != nil {
			// Never with Keep's records; a record without them counts with the defaults.
			svc = s.r.dimService(svc.name, nil, s.r.noAttrs)
		}
	}
	s.r.recordView(svc, sp, v, s.r.now().UnixNano())
	sp.SetName("")
	s.scratch.Put(p)
	s.views.Put(v)
}

// sawVerdicts reports, once, that spans already carry verdicts.
func (s *observeSink) sawVerdicts() {
	if s.sawAnnotated.CompareAndSwap(false, true) && s.annotated != nil {
		s.annotated()
	}
}

// labelService is the service label of a service name read by spanread: as serviceName makes
// it of the resource attribute.
func labelService(name string) string {
	if s := sanitize(name); s != "" {
		return s
	}
	return unknownService
}
