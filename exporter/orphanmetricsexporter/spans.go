package orphanmetricsexporter // import "github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Attributes read by the exporter; see docs/verdicts.md.
const (
	attrServiceName = "service.name"

	attrLiveness         = "orphanwatch.liveness"
	attrStartedAfterGone = "orphanwatch.started_after_gone"
	attrAfterGone        = "orphanwatch.after_gone"
	attrDetached         = "orphanwatch.detached"
	attrAttempt          = "orphanwatch.attempt"
	attrRunOutcome       = "orphanwatch.run.outcome"
	attrRootEndReason    = "orphanwatch.root.end_reason"
	attrCallerService    = "orphanwatch.caller.service"
	attrSpendModel       = "orphanwatch.spend.model"
	attrSpendInput       = "orphanwatch.spend.input_tokens"
	attrSpendOutput      = "orphanwatch.spend.output_tokens"
	attrSpendCost        = "orphanwatch.spend.cost"

	attrGenAIResponseModel = "gen_ai.response.model"
	attrGenAIRequestModel  = "gen_ai.request.model"
	attrGenAIInputTokens   = "gen_ai.usage.input_tokens"
	attrGenAIOutputTokens  = "gen_ai.usage.output_tokens"
)

// Label values.
const (
	livenessLive             = "live"
	livenessOrphaned         = "orphaned"
	livenessUnknown          = "unknown"
	livenessDetached         = "detached"
	livenessOutlivedRoot     = "outlived_root"
	livenessStartedAfterGone = "started_after_gone"

	outcomeDeliveredToNobody = "delivered_to_nobody"

	directionInput  = "input"
	directionOutput = "output"

	unknownService   = "unknown_service"
	unknownOperation = "unknown"
	unknownModel     = "unknown"

	// maxLabelValueBytes caps label values taken from span data.
	maxLabelValueBytes = 256
)

var (
	runOutcomes = map[string]bool{
		"success": true, "retryable_failure": true, "hard_failure": true,
		"cancelled": true, outcomeDeliveredToNobody: true, "unknown_root": true,
	}
	endReasons = map[string]bool{
		"cancelled": true, "deadline_exceeded": true, "error": true, "completed": true,
	}
	livenessValues = map[string]bool{
		livenessLive: true, livenessOrphaned: true, livenessUnknown: true,
	}
)

// attrState tells whether an attribute is absent, usable or malformed.
type attrState int

const (
	attrAbsent attrState = iota
	attrValid
	attrInvalid
)

// spanCtx carries what every metric of one span needs; label values from
// span data pass through the limiter only when a metric uses them, so spans
// without verdicts never take up a label slot.
type spanCtx struct {
	r        *Recorder
	span     ptrace.Span
	attrs    pcommon.Map
	service  string
	exemplar prometheus.Labels

	svc, op       string
	svcOK, opOK   bool
	livenessLabel string // live, orphaned, unknown, detached
	livenessOK    bool   // false: liveness attributes malformed, skip liveness metrics
	judged        bool   // carries orphanwatch.liveness or orphanwatch.detached
}

func (c *spanCtx) serviceLabel() string {
	if !c.svcOK {
		c.svc, c.svcOK = c.r.limiter.Value(labelServiceName, c.service), true
	}
	return c.svc
}

func (c *spanCtx) operationLabel() string {
	if !c.opOK {
		op := sanitize(c.span.Name())
		if op == "" {
			op = unknownOperation
		}
		c.op, c.opOK = c.r.limiter.Value(labelOperation, op), true
	}
	return c.op
}

func (c *spanCtx) skip(reason string) { c.r.skipped.WithLabelValues(reason).Inc() }

// add increments counter by v, with the span's trace ID as exemplar when
// withExemplar is set and the span has a trace ID.
func (c *spanCtx) add(counter prometheus.Counter, v float64, withExemplar bool) {
	if withExemplar && c.exemplar != nil {
		if ea, ok := counter.(prometheus.ExemplarAdder); ok {
			ea.AddWithExemplar(v, c.exemplar)
			return
		}
	}
	counter.Add(v)
}

func (r *Recorder) recordSpan(service string, span ptrace.Span) {
	c := &spanCtx{r: r, span: span, attrs: span.Attributes(), service: service}
	if tid := span.TraceID(); !tid.IsEmpty() {
		c.exemplar = prometheus.Labels{exemplarTraceID: tid.String()}
		if sid := span.SpanID(); !sid.IsEmpty() {
			c.exemplar[exemplarSpanID] = sid.String()
		}
	}
	c.resolveLiveness()

	r.recordRun(c)
	r.recordRoot(c)
	r.recordUnpropagated(c)
	isAttempt := r.recordAttempt(c)
	isModelCall := r.recordModelCall(c)
	if isAttempt || (isModelCall && !c.judged) {
		r.recordSpendSeconds(c)
	}
	r.recordOutlive(c)
}

// resolveLiveness sets the liveness label of the span: detached when
// orphanwatch.detached is true, else orphanwatch.liveness, else unknown.
func (c *spanCtx) resolveLiveness() {
	detached, dState := getBool(c.attrs, attrDetached)
	liveness, lState := getString(c.attrs, attrLiveness)
	if lState == attrValid && !livenessValues[liveness] {
		lState = attrInvalid
	}
	c.judged = dState != attrAbsent || lState != attrAbsent
	if dState == attrInvalid {
		c.skip(ReasonInvalidDetached)
	}
	if lState == attrInvalid {
		c.skip(ReasonInvalidLiveness)
	}

	switch {
	case dState == attrValid && detached:
		c.livenessLabel, c.livenessOK = livenessDetached, true
	case lState == attrValid:
		c.livenessLabel, c.livenessOK = liveness, true
	case lState == attrInvalid || dState == attrInvalid:
		c.livenessOK = false
	default: // not judged, or detached=false without liveness
		c.livenessLabel, c.livenessOK = livenessUnknown, true
	}
}

func (r *Recorder) recordRun(c *spanCtx) {
	outcome, st := getString(c.attrs, attrRunOutcome)
	if st == attrAbsent {
		return
	}
	if st == attrInvalid || !runOutcomes[outcome] {
		c.skip(ReasonInvalidRunOutcome)
		return
	}
	c.add(r.runs.WithLabelValues(c.serviceLabel(), c.operationLabel(), outcome), 1,
		outcome == outcomeDeliveredToNobody)
}

func (r *Recorder) recordRoot(c *spanCtx) {
	reason, st := getString(c.attrs, attrRootEndReason)
	if st == attrAbsent {
		return
	}
	if st == attrInvalid || !endReasons[reason] {
		c.skip(ReasonInvalidEndReason)
		return
	}
	r.roots.WithLabelValues(c.serviceLabel(), reason).Inc()
}

func (r *Recorder) recordUnpropagated(c *spanCtx) {
	caller, st := getString(c.attrs, attrCallerService)
	if st == attrAbsent {
		return
	}
	caller = sanitize(caller)
	if st == attrInvalid || caller == "" {
		c.skip(ReasonInvalidCallerService)
		return
	}
	callee := r.limiter.Value(labelCalleeService, c.service)
	c.add(r.unpropagated.WithLabelValues(r.limiter.Value(labelCallerService, caller), callee), 1, true)
}

// recordAttempt counts attempt spans (those with orphanwatch.attempt) and
// reports whether the span is one.
func (r *Recorder) recordAttempt(c *spanCtx) bool {
	n, st := getInt(c.attrs, attrAttempt)
	if st == attrAbsent {
		return false
	}
	if st == attrInvalid || n < 1 {
		c.skip(ReasonInvalidAttempt)
		return false
	}
	if !c.livenessOK {
		return true
	}
	label := c.livenessLabel
	if label == livenessOrphaned {
		after, st := getBool(c.attrs, attrStartedAfterGone)
		switch {
		case st == attrInvalid:
			c.skip(ReasonInvalidStartedAfterGone)
			return true
		case st == attrValid && after:
			label = livenessStartedAfterGone
		default:
			label = livenessOutlivedRoot
		}
	}
	c.add(r.attempts.WithLabelValues(c.serviceLabel(), c.operationLabel(), label), 1,
		label == livenessOutlivedRoot || label == livenessStartedAfterGone)
	return true
}

func (r *Recorder) recordSpendSeconds(c *spanCtx) {
	if !c.livenessOK {
		return
	}
	start, end := c.span.StartTimestamp(), c.span.EndTimestamp()
	switch {
	case start == 0 || end == 0:
		c.skip(ReasonZeroTime)
		return
	case end < start:
		c.skip(ReasonEndBeforeStart)
		return
	}
	seconds := float64(end-start) / 1e9
	c.add(r.spendSeconds.WithLabelValues(c.serviceLabel(), c.livenessLabel), seconds,
		c.livenessLabel == livenessOrphaned)
}

// recordModelCall records model calls, tokens and cost, and reports whether
// the span is a model call: it carries orphanwatch.spend.model or token
// counts, or (for spans the processor did not judge) gen_ai.usage tokens.
func (r *Recorder) recordModelCall(c *spanCtx) bool {
	model, mState := getString(c.attrs, attrSpendModel)
	if mState == attrValid {
		if model = sanitize(model); model == "" {
			mState = attrInvalid
		}
	}
	inKey, outKey := attrSpendInput, attrSpendOutput
	_, hasIn := c.attrs.Get(attrSpendInput)
	_, hasOut := c.attrs.Get(attrSpendOutput)
	_, hasCost := c.attrs.Get(attrSpendCost)

	isModelCall := mState != attrAbsent || hasIn || hasOut
	if !c.judged {
		// Fallback for spans that never went through the processor.
		if !hasIn {
			if _, ok := c.attrs.Get(attrGenAIInputTokens); ok {
				inKey, isModelCall = attrGenAIInputTokens, true
			}
		}
		if !hasOut {
			if _, ok := c.attrs.Get(attrGenAIOutputTokens); ok {
				outKey, isModelCall = attrGenAIOutputTokens, true
			}
		}
		if mState == attrAbsent && (isModelCall || hasCost) {
			for _, key := range []string{attrGenAIResponseModel, attrGenAIRequestModel} {
				m, st := getString(c.attrs, key)
				if st == attrValid {
					m = sanitize(m)
				}
				if st == attrValid && m != "" {
					model, mState = m, attrValid
					break
				}
				if st != attrAbsent {
					c.skip(ReasonInvalidModel)
				}
			}
		}
	}
	if !isModelCall && !hasCost {
		return false
	}
	if mState == attrInvalid && isModelCall {
		c.skip(ReasonInvalidModel)
	}
	if mState == attrInvalid || !c.livenessOK {
		return isModelCall
	}
	if mState == attrAbsent {
		model = unknownModel
	}

	svc := c.serviceLabel()
	modelLabel := r.limiter.Value(labelModel, model)
	orphaned := c.livenessLabel == livenessOrphaned
	if isModelCall {
		c.add(r.modelCalls.WithLabelValues(svc, modelLabel, c.livenessLabel), 1, orphaned)
		for _, d := range []struct{ key, direction string }{{inKey, directionInput}, {outKey, directionOutput}} {
			tokens, st := getCount(c.attrs, d.key)
			switch st {
			case attrValid:
				c.add(r.spendTokens.WithLabelValues(svc, modelLabel, d.direction, c.livenessLabel), tokens, orphaned)
			case attrInvalid:
				c.skip(ReasonInvalidTokens)
			}
		}
	}
	if hasCost {
		cost, st := getCount(c.attrs, attrSpendCost)
		if st == attrValid {
			c.add(r.spendCost.WithLabelValues(svc, modelLabel, c.livenessLabel), cost, orphaned)
		} else {
			c.skip(ReasonInvalidCost)
		}
	}
	return isModelCall
}

func (r *Recorder) recordOutlive(c *spanCtx) {
	if !c.livenessOK || c.livenessLabel != livenessOrphaned {
		return
	}
	v, st := getNumber(c.attrs, attrAfterGone)
	switch {
	case st == attrAbsent:
		return
	case st == attrInvalid || v < 0:
		c.skip(ReasonInvalidAfterGone)
		return
	}
	obs := r.outlive.WithLabelValues(c.serviceLabel())
	if eo, ok := obs.(prometheus.ExemplarObserver); ok && c.exemplar != nil {
		eo.ObserveWithExemplar(v, c.exemplar)
		return
	}
	obs.Observe(v)
}

func serviceName(attrs pcommon.Map) string {
	if v, ok := attrs.Get(attrServiceName); ok && v.Type() == pcommon.ValueTypeStr {
		if s := sanitize(v.Str()); s != "" {
			return s
		}
	}
	return unknownService
}

// sanitize makes a span-supplied string usable as a label value: valid
// UTF-8, trimmed, at most maxLabelValueBytes long.
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

func getString(m pcommon.Map, key string) (string, attrState) {
	v, ok := m.Get(key)
	if !ok {
		return "", attrAbsent
	}
	if v.Type() != pcommon.ValueTypeStr {
		return "", attrInvalid
	}
	return v.Str(), attrValid
}

func getBool(m pcommon.Map, key string) (bool, attrState) {
	v, ok := m.Get(key)
	if !ok {
		return false, attrAbsent
	}
	if v.Type() != pcommon.ValueTypeBool {
		return false, attrInvalid
	}
	return v.Bool(), attrValid
}

// getNumber reads an int or double attribute; non-finite values are invalid.
func getNumber(m pcommon.Map, key string) (float64, attrState) {
	v, ok := m.Get(key)
	if !ok {
		return 0, attrAbsent
	}
	var f float64
	switch v.Type() {
	case pcommon.ValueTypeInt:
		f = float64(v.Int())
	case pcommon.ValueTypeDouble:
		f = v.Double()
	default:
		return 0, attrInvalid
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, attrInvalid
	}
	return f, attrValid
}

// getInt reads an int attribute, or a double holding an integer.
func getInt(m pcommon.Map, key string) (int64, attrState) {
	v, ok := m.Get(key)
	if !ok {
		return 0, attrAbsent
	}
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return v.Int(), attrValid
	case pcommon.ValueTypeDouble:
		f := v.Double()
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), attrValid
		}
	}
	return 0, attrInvalid
}

// getCount reads a non-negative finite quantity (tokens, cost) given as an
// int, a double or a decimal string.
func getCount(m pcommon.Map, key string) (float64, attrState) {
	v, ok := m.Get(key)
	if !ok {
		return 0, attrAbsent
	}
	var f float64
	switch v.Type() {
	case pcommon.ValueTypeInt:
		f = float64(v.Int())
	case pcommon.ValueTypeDouble:
		f = v.Double()
	case pcommon.ValueTypeStr:
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(v.Str()), 64); err != nil {
			return 0, attrInvalid
		}
	default:
		return 0, attrInvalid
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, attrInvalid
	}
	return f, attrValid
}
