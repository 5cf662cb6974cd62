package orphanmetrics // import "github.com/orphanwatch/orphanwatch/internal/orphanmetrics"

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Label values.
const (
	livenessLive             = "live"
	livenessOrphaned         = "orphaned"
	livenessUnknown          = "unknown"
	livenessDetached         = "detached"
	livenessOutlivedRoot     = "outlived_root"
	livenessStartedAfterGone = "started_after_gone"

	directionInput  = "input"
	directionOutput = "output"

	unknownService   = "unknown_service"
	unknownOperation = "unknown"
	unknownModel     = "unknown"

	// maxLabelValueBytes caps label values taken from span data.
	maxLabelValueBytes = 256
)

// The fixed label values, as indexes into the cached series of a service, operation or model.

// liveness is the liveness label of a span: live, orphaned, unknown, detached.
type liveness uint8

const (
	lvLive liveness = iota
	lvOrphaned
	lvUnknown
	lvDetached
	numLiveness
)

var livenessNames = [numLiveness]string{livenessLive, livenessOrphaned, livenessUnknown, livenessDetached}

// attemptLabel is the liveness label of attempts_total.
type attemptLabel uint8

const (
	alLive attemptLabel = iota
	alOutlivedRoot
	alStartedAfterGone
	alUnknown
	alDetached
	numAttemptLabels
)

var attemptNames = [numAttemptLabels]string{livenessLive, livenessOutlivedRoot, livenessStartedAfterGone, livenessUnknown, livenessDetached}

var outcomeNames = [...]string{"success", "retryable_failure", "hard_failure", "cancelled", "delivered_to_nobody", "unknown_root"}

const outcomeDeliveredToNobody = 4

var endReasonNames = [...]string{"cancelled", "deadline_exceeded", "error", "completed", "detached"}

func indexOf(names []string, s string) int {
	for i, n := range names {
		if n == s {
			return i
		}
	}
	return -1
}

// Attributes read by the exporter (docs/verdicts.md), as indexes of a spanView.
const (
	kLiveness = iota
	kDetached
	kStartedAfterGone
	kAfterGone
	kAttempt
	kRunOutcome
	kEndReason
	kCallerService
	kSpendModel
	kSpendInput
	kSpendOutput
	kSpendCost
	kSpendRepeated
	kSpendNested
	kReachHops
	kDepthHops
	kGenAIResponseModel
	kGenAIRequestModel
	kGenAIInputTokens
	kGenAIOutputTokens
	kGenAIOperation
	kGenAIToolName
	kGenAIAgentName
	kHTTPMethod
	kHTTPMethodOld
	kURLTemplate
	kHTTPRoute
	kServerAddress
	kServerPort
	kNetPeerName
	kNetPeerPort
	kHTTPURL
	kURLFull
	kURLScheme
	kRPCSystem
	kRPCService
	kRPCMethod
	kMsgOperationName
	kMsgOperationType
	kMsgDestination
	kDeferred
	numKeys
)

// attrNames are the attribute names the exporter reads, by index.
var attrNames = [numKeys]string{
	kLiveness:           "orphanwatch.liveness",
	kDetached:           "orphanwatch.detached",
	kStartedAfterGone:   "orphanwatch.started_after_gone",
	kAfterGone:          "orphanwatch.after_gone",
	kAttempt:            "orphanwatch.attempt",
	kRunOutcome:         "orphanwatch.run.outcome",
	kEndReason:          "orphanwatch.root.end_reason",
	kCallerService:      "orphanwatch.caller.service",
	kSpendModel:         "orphanwatch.spend.model",
	kSpendInput:         "orphanwatch.spend.input_tokens",
	kSpendOutput:        "orphanwatch.spend.output_tokens",
	kSpendCost:          "orphanwatch.spend.cost",
	kSpendRepeated:      "orphanwatch.spend.repeated",
	kSpendNested:        "orphanwatch.spend.nested",
	kReachHops:          "orphanwatch.cancel.reach_hops",
	kDepthHops:          "orphanwatch.orphaned.depth_hops",
	kGenAIResponseModel: "gen_ai.response.model",
	kGenAIRequestModel:  "gen_ai.request.model",
	kGenAIInputTokens:   "gen_ai.usage.input_tokens",
	kGenAIOutputTokens:  "gen_ai.usage.output_tokens",
	kGenAIOperation:     "gen_ai.operation.name",
	kGenAIToolName:      "gen_ai.tool.name",
	kGenAIAgentName:     "gen_ai.agent.name",
	kHTTPMethod:         "http.request.method",
	kHTTPMethodOld:      "http.method",
	kURLTemplate:        "url.template",
	kHTTPRoute:          "http.route",
	kServerAddress:      "server.address",
	kServerPort:         "server.port",
	kNetPeerName:        "net.peer.name",
	kNetPeerPort:        "net.peer.port",
	kHTTPURL:            "http.url",
	kURLFull:            "url.full",
	kURLScheme:          "url.scheme",
	kRPCSystem:          "rpc.system",
	kRPCService:         "rpc.service",
	kRPCMethod:          "rpc.method",
	kMsgOperationName:   "messaging.operation.name",
	kMsgOperationType:   "messaging.operation.type",
	kMsgDestination:     "messaging.destination.name",
	kDeferred:           "orphanwatch.verdict.deferred",
}

// keyTable finds an attribute name's index with one string comparison: slots by a hash of the
// name's length and three of its bytes, two candidates (index+1) a slot.
var keyTable = func() (t [1024][2]uint8) {
	for i, name := range attrNames {
		slot := &t[keyHash(name)]
		switch {
		case slot[0] == 0:
			slot[0] = uint8(i + 1)
		case slot[1] == 0:
			slot[1] = uint8(i + 1)
		default:
			panic("orphanmetrics: keyTable: three names in one slot: " + name)
		}
	}
	return t
}()

func keyHash(k string) int {
	n := len(k)
	return (n*131 + int(k[n-1])*31 + int(k[n/2])*7 + int(k[n/4])) & 1023
}

// keyLengths has bit n set when a name read is n bytes long: most other names are passed over
// without touching their bytes (reading them is a cache miss each on a large batch).
var keyLengths = func() (m uint64) {
	for _, name := range attrNames {
		m |= 1 << len(name)
	}
	return m
}()

// keyIndex maps an attribute name to its index, or -1 for names the exporter does not read.
func keyIndex(k string) int {
	if len(k) < minKeyLen || len(k) > 63 || keyLengths&(1<<len(k)) == 0 {
		return -1
	}
	for _, c := range keyTable[keyHash(k)] {
		if c != 0 && attrNames[c-1] == k {
			return int(c - 1)
		}
	}
	return -1
}

// minKeyLen is the length of the shortest name read.
const minKeyLen = len("url.full")

// spanView holds the attributes of one span that the exporter reads, found in one pass over
// its attributes (the first occurrence of a name wins, as with pcommon.Map.Get).
type spanView struct {
	has  uint64
	vals [numKeys]pcommon.Value
	// typed marks the values given as Go values (observe.go: a verdict decided here, or the
	// attributes kept of a span whose verdict came later), held in typedVals instead of vals.
	typed     uint64
	typedVals [numKeys]typedValue
}

func (v *spanView) read(m pcommon.Map) {
	v.has, v.typed = 0, 0
	for k, val := range m.All() {
		// keyIndex, inlined: this loop is half of the exporter's time.
		n := len(k)
		if n > 63 || keyLengths&(1<<n) == 0 {
			continue
		}
		slot := &keyTable[keyHash(k)]
		for _, c := range slot {
			if c != 0 && attrNames[c-1] == k {
				if bit := uint64(1) << (c - 1); v.has&bit == 0 {
					v.has |= bit
					v.vals[c-1] = val
				}
				break
			}
		}
	}
}

func (v *spanView) present(k int) bool { return v.has&(1<<k) != 0 }

// str returns the attribute as a string: attrAbsent, attrValid or attrInvalid (not a string).
func (v *spanView) str(k int) (string, attrState) {
	if !v.present(k) {
		return "", attrAbsent
	}
	if v.typed&(1<<k) != 0 {
		return v.typedVals[k].str()
	}
	if v.vals[k].Type() != pcommon.ValueTypeStr {
		return "", attrInvalid
	}
	return v.vals[k].Str(), attrValid
}

// strOK returns a string attribute, or "" when it is absent or not a string.
func (v *spanView) strOK(k int) string {
	s, _ := v.str(k)
	return s
}

func (v *spanView) boolean(k int) (bool, attrState) {
	if !v.present(k) {
		return false, attrAbsent
	}
	if v.typed&(1<<k) != 0 {
		return v.typedVals[k].boolean()
	}
	if v.vals[k].Type() != pcommon.ValueTypeBool {
		return false, attrInvalid
	}
	return v.vals[k].Bool(), attrValid
}

// integer reads an int attribute, or a double holding an integer.
func (v *spanView) integer(k int) (int64, attrState) {
	if !v.present(k) {
		return 0, attrAbsent
	}
	if v.typed&(1<<k) != 0 {
		return v.typedVals[k].integer()
	}
	val := v.vals[k]
	switch val.Type() {
	case pcommon.ValueTypeInt:
		return val.Int(), attrValid
	case pcommon.ValueTypeDouble:
		f := val.Double()
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), attrValid
		}
	}
	return 0, attrInvalid
}

// number reads a finite number given as an int or a double, and, when decimal is set, as a
// decimal string (tokens and cost, which Zipkin and some SDKs write as strings). Non-finite
// values are invalid; so are negative ones when nonNegative is set.
func (v *spanView) number(k int, decimal, nonNegative bool) (float64, attrState) {
	if !v.present(k) {
		return 0, attrAbsent
	}
	if v.typed&(1<<k) != 0 {
		return v.typedVals[k].number(decimal, nonNegative)
	}
	var f float64
	val := v.vals[k]
	switch val.Type() {
	case pcommon.ValueTypeInt:
		f = float64(val.Int())
	case pcommon.ValueTypeDouble:
		f = val.Double()
	case pcommon.ValueTypeStr:
		if !decimal {
			return 0, attrInvalid
		}
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(val.Str()), 64); err != nil {
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

// attrState tells whether an attribute is absent, usable or malformed.
type attrState int

const (
	attrAbsent attrState = iota
	attrValid
	attrInvalid
)

// spanCtx carries what every metric of one span needs. Label values from span data are
// resolved through the limiter only when a metric uses them, so spans without verdicts never
// take up a label slot; each use counts one overflow when the value is exported as "other".
type spanCtx struct {
	r    *Recorder
	span ptrace.Span
	svc  *serviceSeries
	v    *spanView

	now      int64 // unix nanoseconds of the Record call, for exemplars
	svcUsed  bool
	op       *opSeries
	exemplar prometheus.Labels

	lv       liveness
	lvOK     bool // false: liveness attributes malformed, skip liveness metrics
	judged   bool // carries orphanwatch.liveness or orphanwatch.detached
	orphaned bool
}

// useService marks the service label as used by this span (counting an overflow once).
func (c *spanCtx) useService() *serviceSeries {
	if !c.svcUsed {
		c.svcUsed = true
		c.svc.label.use(c.r, labelServiceName, c.svc.name)
		c.svc.useDims(c.r)
	}
	return c.svc
}

func (c *spanCtx) skip(reason skipReason) { c.r.skips[reason].Inc() }

// exemplarLabels returns the span's trace and span ID as exemplar labels (nil without a trace
// ID), made on first use: only orphan series carry exemplars.
func (c *spanCtx) exemplarLabels() prometheus.Labels {
	if c.exemplar == nil {
		tid := c.span.TraceID()
		if tid.IsEmpty() {
			return nil
		}
		c.exemplar = prometheus.Labels{exemplarTraceID: tid.String()}
		if sid := c.span.SpanID(); !sid.IsEmpty() {
			c.exemplar[exemplarSpanID] = sid.String()
		}
	}
	return c.exemplar
}

// add increments s by v, with the span's IDs as exemplar when withExemplar is set (and the
// series' exemplar is due for replacement).
func (c *spanCtx) add(s *counterSlot, v float64, withExemplar bool) {
	if withExemplar && !c.span.TraceID().IsEmpty() && exemplarDue(&s.exemplarAt, c.now) {
		s.ea.AddWithExemplar(v, c.exemplarLabels())
		return
	}
	s.c.Add(v)
}

func (c *spanCtx) observe(s *observerSlot, v float64) {
	if !c.span.TraceID().IsEmpty() && exemplarDue(&s.exemplarAt, c.now) {
		s.eo.ObserveWithExemplar(v, c.exemplarLabels())
		return
	}
	s.o.Observe(v)
}

// recordSpan records a span of a resource whose service's cache is svc; with dimensions, res
// are the resource's dimension values (resourceDims).
func (r *Recorder) recordSpan(svc *serviceSeries, res []string, span ptrace.Span, v *spanView, now int64) {
	attrs := span.Attributes()
	v.read(attrs)
	if res != nil && v.has != 0 {
		svc = r.dimService(svc.name, res, attrs)
	}
	r.recordView(svc, span, v, now)
}

// recordView records a span whose attributes v holds (read from the span, or from a carried
// verdict's event for a span made to stand for it): nothing below reads span.Attributes().
func (r *Recorder) recordView(svc *serviceSeries, span ptrace.Span, v *spanView, now int64) {
	if v.has == 0 {
		return // nothing any metric reads
	}
	// A span whose verdict is not final yet (time model v2): its verdict comes later as an
	// orphanwatch.verdict event, counted then. A malformed marker is counted and read as absent.
	deferred, st := v.boolean(kDeferred)
	if st == attrValid && deferred {
		return
	}
	if st == attrInvalid {
		r.skips[skipInvalidDeferred].Inc()
	}
	c := spanCtx{r: r, span: span, svc: svc, v: v, now: now}
	c.resolveLiveness()

	r.recordRun(&c)
	r.recordRoot(&c)
	r.recordUnpropagated(&c)
	isAttempt := r.recordAttempt(&c)
	isModelCall := r.recordModelCall(&c)
	if (isAttempt || (isModelCall && !c.judged)) && !r.nested(&c) {
		r.recordSpendSeconds(&c)
	}
	r.recordOutlive(&c)
}

// resolveLiveness sets the liveness label of the span: detached when orphanwatch.detached is
// true, else orphanwatch.liveness, else unknown.
func (c *spanCtx) resolveLiveness() {
	detached, dState := c.v.boolean(kDetached)
	lvName, lState := c.v.str(kLiveness)
	lv := liveness(0)
	if lState == attrValid {
		switch lvName {
		case livenessLive:
			lv = lvLive
		case livenessOrphaned:
			lv = lvOrphaned
		case livenessUnknown:
			lv = lvUnknown
		default:
			lState = attrInvalid
		}
	}
	c.judged = dState != attrAbsent || lState != attrAbsent
	if dState == attrInvalid {
		c.skip(skipInvalidDetached)
	}
	if lState == attrInvalid {
		c.skip(skipInvalidLiveness)
	}

	switch {
	case dState == attrValid && detached:
		c.lv, c.lvOK = lvDetached, true
	case lState == attrValid:
		c.lv, c.lvOK = lv, true
	case lState == attrInvalid || dState == attrInvalid:
		c.lvOK = false
	default: // not judged, or detached=false without liveness
		c.lv, c.lvOK = lvUnknown, true
	}
	c.orphaned = c.lvOK && c.lv == lvOrphaned
}

// operation returns the span's operation series (its label resolved on first use per span).
func (c *spanCtx) operation() *opSeries {
	if c.op == nil {
		c.op = c.svc.operation(c.r, operationKeyOf(c.span, c.v))
		c.op.label.use(c.r, labelOperation, c.op.name)
	}
	return c.op
}

func (r *Recorder) recordRun(c *spanCtx) {
	outcome, st := c.v.str(kRunOutcome)
	if st == attrAbsent {
		return
	}
	i := -1
	if st == attrValid {
		i = indexOf(outcomeNames[:], outcome)
	}
	if i < 0 {
		c.skip(skipInvalidRunOutcome)
		return
	}
	c.useService()
	op := c.operation()
	c.add(op.runs.get(i, func() prometheus.Counter {
		return r.runs.WithLabelValues(c.svc.lvs(c.svc.label.value, op.label.value, outcomeNames[i])...)
	}), 1, i == outcomeDeliveredToNobody)
}

func (r *Recorder) recordRoot(c *spanCtx) {
	reason, st := c.v.str(kEndReason)
	if st != attrAbsent {
		i := -1
		if st == attrValid {
			i = indexOf(endReasonNames[:], reason)
		}
		if i < 0 {
			c.skip(skipInvalidEndReason)
		} else {
			svc := c.useService()
			svc.roots.get(i, func() prometheus.Counter {
				return r.roots.WithLabelValues(svc.lvs(svc.label.value, endReasonNames[i])...)
			}).c.Inc()
		}
	}
	// Cancellation reach, on roots that ended cancelled or deadline_exceeded.
	if !c.v.present(kReachHops) && !c.v.present(kDepthHops) {
		return
	}
	for _, h := range [...]struct {
		key    int
		reason skipReason
		slot   *observerCache
		vec    *limitedHistogramVec
	}{
		{kReachHops, skipInvalidReachHops, &c.svc.reach, r.reach},
		{kDepthHops, skipInvalidDepthHops, &c.svc.depth, r.depth},
	} {
		n, st := c.v.integer(h.key)
		switch {
		case st == attrAbsent:
			continue
		case st == attrInvalid || n < 0:
			c.skip(h.reason)
			continue
		}
		svc := c.useService()
		c.observe(h.slot.get(func() prometheus.Observer { return h.vec.WithLabelValues(svc.lvs(svc.label.value)...) }), float64(n))
	}
}

func (r *Recorder) recordUnpropagated(c *spanCtx) {
	caller, st := c.v.str(kCallerService)
	if st == attrAbsent {
		return
	}
	caller = sanitize(caller)
	if st == attrInvalid || caller == "" {
		c.skip(skipInvalidCallerService)
		return
	}
	e := c.svc.edge(caller)
	e.callee.use(r, labelCalleeService, c.svc.name)
	e.caller.use(r, labelCallerService, e.name)
	c.add(e.count.get(0, func() prometheus.Counter {
		return r.unpropagated.WithLabelValues(e.caller.value, e.callee.value)
	}), 1, true)
}

// recordAttempt counts attempt spans (those with orphanwatch.attempt) and reports whether the
// span is one.
func (r *Recorder) recordAttempt(c *spanCtx) bool {
	n, st := c.v.integer(kAttempt)
	if st == attrAbsent {
		return false
	}
	if st == attrInvalid || n < 1 {
		c.skip(skipInvalidAttempt)
		return false
	}
	if !c.lvOK {
		return true
	}
	var label attemptLabel
	switch c.lv {
	case lvLive:
		label = alLive
	case lvUnknown:
		label = alUnknown
	case lvDetached:
		label = alDetached
	case lvOrphaned:
		after, st := c.v.boolean(kStartedAfterGone)
		switch {
		case st == attrInvalid:
			c.skip(skipInvalidStartedAfterGone)
			return true
		case st == attrValid && after:
			label = alStartedAfterGone
		default:
			label = alOutlivedRoot
		}
	}
	c.useService()
	op := c.operation()
	c.add(op.attempts.get(int(label), func() prometheus.Counter {
		return r.attempts.WithLabelValues(c.svc.lvs(c.svc.label.value, op.label.value, attemptNames[label])...)
	}), 1, label == alOutlivedRoot || label == alStartedAfterGone)
	return true
}

// nested reports whether the span is an attempt inside another attempt of its own service
// (orphanwatch.spend.nested): its seconds are counted on the enclosing attempt. A malformed value
// is counted and read as false.
func (r *Recorder) nested(c *spanCtx) bool {
	nested, st := c.v.boolean(kSpendNested)
	if st == attrInvalid {
		c.skip(skipInvalidSpendNested)
	}
	return st == attrValid && nested
}

// recordSpendSeconds adds the span's duration. Of an orphaned span only the seconds after its
// gone time (orphanwatch.after_gone, at most its duration) count as orphaned, the rest as live.
func (r *Recorder) recordSpendSeconds(c *spanCtx) {
	if !c.lvOK {
		return
	}
	start, end := c.span.StartTimestamp(), c.span.EndTimestamp()
	switch {
	case start == 0 || end == 0:
		c.skip(skipZeroTime)
		return
	case end < start:
		c.skip(skipEndBeforeStart)
		return
	case int64(end) > c.now+r.futureTol:
		c.skip(skipEndInFuture)
		return
	case r.maxSpan > 0 && int64(end-start) > r.maxSpan:
		c.skip(skipOverMaxDuration)
		return
	}
	seconds := float64(end-start) / 1e9
	svc := c.useService()
	slot := func(lv liveness) *counterSlot {
		return svc.spendSeconds.get(int(lv), func() prometheus.Counter {
			return r.spendSeconds.WithLabelValues(svc.lvs(svc.label.value, livenessNames[lv])...)
		})
	}
	if c.orphaned {
		// A missing or malformed after_gone (counted by recordOutlive) leaves it all orphaned.
		if after, st := c.v.number(kAfterGone, false, true); st == attrValid && after < seconds {
			c.add(slot(lvLive), seconds-after, false)
			seconds = after
		}
	}
	c.add(slot(c.lv), seconds, c.orphaned)
}

// recordModelCall records model calls, tokens and cost, and reports whether the span is a
// model call: it carries orphanwatch.spend.model or token counts, or (when it carries no
// orphanwatch.spend.* attribute at all, an application annotating its spans itself)
// gen_ai.usage tokens. A span marked orphanwatch.spend.repeated repeats the usage of model
// calls below it and is never a model call by its gen_ai attributes.
func (r *Recorder) recordModelCall(c *spanCtx) bool {
	v := c.v
	model, mState := v.str(kSpendModel)
	if mState == attrValid && !validModel(model) {
		mState = attrInvalid
	}
	inKey, outKey := kSpendInput, kSpendOutput
	hasIn, hasOut, hasCost := v.present(kSpendInput), v.present(kSpendOutput), v.present(kSpendCost)
	isModelCall := mState != attrAbsent || hasIn || hasOut

	if !isModelCall && !hasCost && (v.present(kGenAIInputTokens) || v.present(kGenAIOutputTokens)) {
		repeated, st := v.boolean(kSpendRepeated)
		if st == attrInvalid {
			c.skip(skipInvalidSpendRepeated)
		}
		if st == attrAbsent || (st == attrValid && !repeated) {
			// The gen_ai fallback.
			inKey, outKey, isModelCall = kGenAIInputTokens, kGenAIOutputTokens, true
			for _, key := range [...]int{kGenAIResponseModel, kGenAIRequestModel} {
				m, st := v.str(key)
				if st == attrValid && validModel(m) {
					model, mState = m, attrValid
					break
				}
				if st != attrAbsent {
					c.skip(skipInvalidModel)
				}
			}
		}
	}
	if !isModelCall && !hasCost {
		return false
	}
	if mState == attrInvalid && isModelCall {
		c.skip(skipInvalidModel)
	}
	if mState == attrInvalid || !c.lvOK {
		return isModelCall
	}
	if mState == attrAbsent {
		model = unknownModel
	}

	svc := c.useService()
	ms := svc.model(r, model) // the label is the sanitized model
	ms.label.use(r, labelModel, ms.name)
	lv := c.lv
	if isModelCall {
		c.add(ms.calls.get(int(lv), func() prometheus.Counter {
			return r.modelCalls.WithLabelValues(svc.lvs(svc.label.value, ms.label.value, livenessNames[lv])...)
		}), 1, c.orphaned)
		for dir, key := range [2]int{inKey, outKey} {
			tokens, st := v.number(key, true, true)
			switch st {
			case attrValid:
				c.add(ms.tokens.get(dir*int(numLiveness)+int(lv), func() prometheus.Counter {
					return r.spendTokens.WithLabelValues(svc.lvs(svc.label.value, ms.label.value, [2]string{directionInput, directionOutput}[dir], livenessNames[lv])...)
				}), tokens, c.orphaned)
			case attrInvalid:
				c.skip(skipInvalidTokens)
			}
		}
	}
	if hasCost {
		cost, st := v.number(kSpendCost, true, true)
		if st == attrValid {
			c.add(ms.cost.get(int(lv), func() prometheus.Counter {
				return r.spendCost.WithLabelValues(svc.lvs(svc.label.value, ms.label.value, livenessNames[lv])...)
			}), cost, c.orphaned)
		} else {
			c.skip(skipInvalidCost)
		}
	}
	return isModelCall
}

func (r *Recorder) recordOutlive(c *spanCtx) {
	if !c.orphaned {
		return
	}
	v, st := c.v.number(kAfterGone, false, true)
	switch st {
	case attrAbsent:
		return
	case attrInvalid:
		c.skip(skipInvalidAfterGone)
		return
	}
	if r.maxSpan > 0 && v > float64(r.maxSpan)/1e9 {
		c.skip(skipInvalidAfterGone) // longer than any request may last
		return
	}
	svc := c.useService()
	c.observe(svc.outlive.get(func() prometheus.Observer { return r.outlive.WithLabelValues(svc.lvs(svc.label.value)...) }), v)
}

// validModel reports whether a model name makes a label value (not empty once sanitized).
func validModel(m string) bool {
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c >= utf8.RuneSelf {
			break // Unicode spaces: ask sanitize
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\v' && c != '\f' {
			return true
		}
	}
	return sanitize(m) != ""
}

func serviceName(attrs pcommon.Map) string {
	if v, ok := attrs.Get("service.name"); ok && v.Type() == pcommon.ValueTypeStr {
		if s := sanitize(v.Str()); s != "" {
			return s
		}
	}
	return unknownService
}

// sanitize makes a span-supplied string usable as a label value: valid UTF-8, trimmed, at
// most maxLabelValueBytes long.
func sanitize(s string) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) <= maxLabelValueBytes {
		return s
	}
	cut := maxLabelValueBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
