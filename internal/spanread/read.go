// Package spanread turns pdata spans into the correlator's verdict.Span, reading attributes by
// the OpenTelemetry semantic conventions and the names configured for the orphan processor.
package spanread

import (
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/deadlinefmt"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// DeadlineAttribute is one attribute that may carry a deadline, and its format.
type DeadlineAttribute struct {
	Attribute string
	Format    deadlinefmt.Format
}

// Options names the attributes read. Each list is tried in order; the first present and
// well-typed value wins.
type Options struct {
	AttemptAttributes []string
	IdempotencyKeys   []string
	Deadlines         []DeadlineAttribute
	InputTokens       []string
	OutputTokens      []string
	Models            []string
	CostAttributes    []string
}

// BadReason names an attribute that was present but unusable.
type BadReason uint8

// Reasons an attribute value was ignored.
const (
	BadNone BadReason = iota
	BadAttributeType
	BadTokenCount
	BadDeadline
	BadOutOfRange
	BadUTF8
	NumBadReasons
)

// String returns the reason as used in telemetry.
func (r BadReason) String() string {
	switch r {
	case BadAttributeType:
		return "wrong_attribute_type"
	case BadTokenCount:
		return "invalid_token_count"
	case BadOutOfRange:
		return "out_of_range"
	case BadUTF8:
		return "invalid_utf8"
	case BadDeadline:
		return "malformed_deadline"
	}
	return ""
}

// Stats counts ignored attribute values by reason.
type Stats [NumBadReasons]int

// Reader reads spans with fixed Options. It is safe for concurrent use.
//
// Every attribute name it reads has a slot. Read finds the value of every slot in one pass over
// the span's attributes (the first occurrence of a name, as pcommon.Map.Get would), instead of
// searching the attributes once for each of some forty names.
type Reader struct {
	o     Options
	names []string // by slot
	// byLen lists the slots by name length, for the pass over a span's attributes; nil when
	// there are more names than a view holds (then each name is looked up with Get).
	byLen [][]int

	method, status, statusOld, grpcStatus, rpcStatus, errorType, exceptionType int
	rpcResponseStatus, exceptionMessage, openInferenceKind, llmRequestType     int
	resend, operation                                                          int
	rpcMethod, rpcService, msgDest, serverAddr, serverPort, urlFull, urlPath   int
	peerService, requestModel                                                  int
	responseFlags, errorTag, grpcPrevAttempts, messageID                       int
	toolName, toolCallID, aiToolName, aiToolCallID                             int
	attempt, keys, deadlines, models, inputTokens, outputTokens, costs         []int

	// Masks of the slots of each list, to skip a list none of whose names a span carries.
	attemptMask, keyMask, deadlineMask, modelMask, inputMask, outputMask, costMask uint64
	keyHash                                                                        func(string) uint64 // nil: HashKey (keyhash.go)
}

// maxSlots is how many names a view holds.
const maxSlots = 64

// New returns a Reader for o.
func New(o Options) *Reader {
	r := &Reader{o: o}
	index := map[string]int{}
	slot := func(name string) int {
		if i, ok := index[name]; ok {
			return i
		}
		index[name] = len(r.names)
		r.names = append(r.names, name)
		return len(r.names) - 1
	}
	slots := func(names []string) []int {
		out := make([]int, len(names))
		for i, n := range names {
			out[i] = slot(n)
		}
		return out
	}
	r.method = slot("http.request.method")
	r.status = slot("http.response.status_code")
	r.statusOld = slot("http.status_code")
	r.grpcStatus = slot("rpc.grpc.status_code")
	r.rpcStatus = slot("rpc.status_code")
	r.errorType = slot("error.type")
	r.exceptionType = slot("exception.type")
	r.exceptionMessage = slot("exception.message")
	r.rpcResponseStatus = slot("rpc.response.status_code")
	r.openInferenceKind = slot("openinference.span.kind")
	r.llmRequestType = slot("llm.request.type")
	r.resend = slot("http.request.resend_count")
	r.operation = slot("gen_ai.operation.name")
	r.rpcMethod = slot("rpc.method")
	r.rpcService = slot("rpc.service")
	r.msgDest = slot("messaging.destination.name")
	r.serverAddr = slot("server.address")
	r.serverPort = slot("server.port")
	r.urlFull = slot("url.full")
	r.urlPath = slot("url.path")
	r.peerService = slot("peer.service")
	r.requestModel = slot("gen_ai.request.model")
	r.toolName = slot("gen_ai.tool.name")
	r.toolCallID = slot("gen_ai.tool.call.id")
	r.aiToolName = slot("ai.toolCall.name")
	r.aiToolCallID = slot("ai.toolCall.id")
	r.responseFlags = slot("response_flags") // Envoy's tag, in its Zipkin and OpenTelemetry spans
	r.errorTag = slot("error")               // Zipkin's and OpenTracing's error tag
	r.grpcPrevAttempts = slot("rpc.grpc.request.metadata.grpc-previous-rpc-attempts")
	r.messageID = slot("messaging.message.id")
	r.attempt = slots(o.AttemptAttributes)
	r.keys = slots(o.IdempotencyKeys)
	dl := make([]string, len(o.Deadlines))
	for i, d := range o.Deadlines {
		dl[i] = d.Attribute
	}
	r.deadlines = slots(dl)
	r.models = slots(o.Models)
	r.inputTokens = slots(o.InputTokens)
	r.outputTokens = slots(o.OutputTokens)
	r.costs = slots(o.CostAttributes)
	if len(r.names) <= maxSlots {
		mask := func(slots []int) uint64 {
			var m uint64
			for _, i := range slots {
				m |= 1 << i
			}
			return m
		}
		r.attemptMask, r.keyMask, r.deadlineMask = mask(r.attempt), mask(r.keys), mask(r.deadlines)
		r.modelMask, r.inputMask, r.outputMask = mask(r.models), mask(r.inputTokens), mask(r.outputTokens)
		r.costMask = mask(r.costs)
		for i, n := range r.names {
			for len(r.byLen) <= len(n) {
				r.byLen = append(r.byLen, nil)
			}
			r.byLen[len(n)] = append(r.byLen[len(n)], i)
		}
	}
	return r
}

// maxFound is how many values a view keeps; a span with more of the names read (rare) has the
// others looked up again.
const maxFound = 16

// view holds the values of a Reader's slots for one span.
type view struct {
	r       *Reader
	a       pcommon.Map
	present uint64
	at      [maxSlots]uint8 // 1 + where found holds the slot's value; 0: not kept
	found   [maxFound]pcommon.Value
	n       uint8
}

// load finds every slot's value in one pass over a.
func (v *view) load(r *Reader, a pcommon.Map) {
	v.r, v.a = r, a
	if r.byLen == nil {
		return
	}
	for k, val := range a.All() {
		if len(k) == 0 || len(k) >= len(r.byLen) {
			continue // an empty key (found by FuzzProcessorOTLPJSON) names nothing read
		}
		same := r.byLen[len(k)]
		if len(same) == 0 {
			continue // no name read is this long: its bytes are not touched (a cache miss each)
		}
		last := k[len(k)-1]
		for _, i := range same {
			// Names of one length often share a prefix (gen_ai., http.): the last byte tells
			// most apart before a full comparison.
			if n := r.names[i]; n[len(n)-1] == last && n == k {
				if v.present&(1<<i) == 0 {
					v.present |= 1 << i
					if v.n < maxFound {
						v.found[v.n] = val
						v.n++
						v.at[i] = v.n
					}
				}
				break
			}
		}
	}
}

// any reports whether the span may carry one of the names of mask (always true on the Get path).
func (v *view) any(mask uint64) bool { return v.r.byLen == nil || v.present&mask != 0 }

// get returns the value of a slot, as a.Get would.
func (v *view) get(slot int) (pcommon.Value, bool) {
	if v.r.byLen == nil {
		return v.a.Get(v.r.names[slot])
	}
	if v.present&(1<<slot) == 0 {
		return pcommon.Value{}, false
	}
	if v.at[slot] == 0 {
		return v.a.Get(v.r.names[slot])
	}
	return v.found[v.at[slot]-1], true
}

// Service returns the service.name of a resource, "" when it has none (or not a string).
func Service(res pcommon.Resource) string {
	if v, ok := res.Attributes().Get("service.name"); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

// Resource is what the records of a resource's spans take from it, read once for all of them
// (NewResource).
type Resource struct {
	// Service is the resource's service.name (Service).
	Service string
	// BadUTF8 tells that Service is not valid UTF-8 (each span is then counted BadUTF8).
	BadUTF8 bool
}

// NewResource reads res for the records of its spans.
func NewResource(res pcommon.Resource) Resource {
	svc := Service(res)
	return Resource{Service: svc, BadUTF8: !utf8.ValidString(svc)}
}

// Read fills s from one span and its resource. The span is not modified.
func (r *Reader) Read(res pcommon.Resource, sp ptrace.Span, s *verdict.Span, st *Stats) {
	rr := NewResource(res)
	r.ReadFor(&rr, sp, s, st)
}

// ReadFor is Read for a span whose resource was read before (NewResource): the spans of one
// resource share it.
func (r *Reader) ReadFor(res *Resource, sp ptrace.Span, s *verdict.Span, st *Stats) {
	*s = verdict.Span{
		TraceID:      verdict.TraceID(sp.TraceID()),
		SpanID:       verdict.SpanID(sp.SpanID()),
		ParentID:     verdict.SpanID(sp.ParentSpanID()),
		Name:         sp.Name(),
		Kind:         verdict.Kind(sp.Kind()),
		Start:        int64(sp.StartTimestamp()),
		End:          int64(sp.EndTimestamp()),
		Status:       verdict.Status(sp.Status().Code()),
		GRPCStatus:   -1,
		ResendCount:  -1,
		InputTokens:  -1,
		OutputTokens: -1,
	}
	if s.Kind > verdict.KindConsumer {
		s.Kind = verdict.KindUnspecified
	}
	if s.Status > verdict.StatusError {
		s.Status = verdict.StatusUnset
	}
	s.Service = res.Service
	// Invalid UTF-8 in the names the verdicts and metrics use: the span is still judged (the
	// exporter repairs label values), and counted.
	if res.BadUTF8 || !utf8.ValidString(s.Name) {
		st[BadUTF8]++
	}
	if links := sp.Links(); links.Len() > 0 {
		s.Links = make([]verdict.Link, links.Len())
		for i := range links.Len() {
			l := links.At(i)
			s.Links[i] = verdict.Link{TraceID: verdict.TraceID(l.TraceID()), SpanID: verdict.SpanID(l.SpanID())}
		}
	}
	var a view
	a.load(r, sp.Attributes())
	// Only the stable HTTP conventions (http.request.method) leave a cancelled client call with
	// unset status and no response code; older Zipkin/Brave instrumentation omits
	// http.status_code on every 2xx response, so http.method alone does not qualify.
	_, s.IsHTTP = a.get(r.method)
	s.HTTPStatus = int(intAttr(&a, st, r.status, r.statusOld))
	s.HTTPStatusZero = s.HTTPStatus == 0
	if s.HTTPStatus < 0 || s.HTTPStatus > 999 {
		s.HTTPStatus = 0
	}
	s.ResponseFlags = strValue(a.get(r.responseFlags))
	if v, ok := a.get(r.errorTag); ok {
		v = one(v)
		s.ErrorTag = v.Type() == pcommon.ValueTypeBool && v.Bool() || v.Type() == pcommon.ValueTypeStr && strings.EqualFold(v.Str(), "true")
	}
	s.GRPCStatus = grpcStatus(&a, st)
	s.ErrorType = strValue(a.get(r.errorType))
	if t := strValue(a.get(r.exceptionType)); t != "" {
		s.ExceptionTypes = append(s.ExceptionTypes, t)
	}
	if m := strValue(a.get(r.exceptionMessage)); m != "" {
		s.Messages = append(s.Messages, m)
	}
	if m := sp.Status().Message(); m != "" {
		s.Messages = append(s.Messages, m)
	}
	evs := sp.Events()
	for i := range evs.Len() {
		e := evs.At(i)
		if e.Name() != "exception" {
			continue
		}
		if t := strAttr(e.Attributes(), "exception.type"); t != "" {
			s.ExceptionTypes = append(s.ExceptionTypes, t)
		}
		if m := strAttr(e.Attributes(), "exception.message"); m != "" {
			s.Messages = append(s.Messages, m)
		}
	}
	// A resend count beyond maxResend is no retry count any client keeps: ignored, counted.
	// gRPC's grpc-previous-rpc-attempts (gRFC A6) counts the earlier tries of a retried or
	// hedged call, as resend_count does.
	if n := intAttr(&a, st, r.resend, r.grpcPrevAttempts); n > maxResend {
		st[BadOutOfRange]++
	} else if n >= 0 {
		s.ResendCount = int(n)
	}
	if s.Kind == verdict.KindConsumer {
		s.MessageHash = r.messageHash(&a)
	}
	for _, slot := range r.attempt {
		if !a.any(r.attemptMask) {
			break
		}
		if n := intAttr(&a, st, slot); n > maxResend+1 {
			st[BadOutOfRange]++
		} else if n >= 1 {
			s.Attempt = int(n)
			break
		}
	}
	for _, slot := range r.keys {
		if !a.any(r.keyMask) {
			break
		}
		if k := strValue(a.get(slot)); k != "" {
			s.KeyHash = r.hashKey(k)
			break
		}
	}
	s.Target = r.target(&a)
	s.Operation = strValue(a.get(r.operation))
	if s.Operation == "" {
		s.Operation = llmOperation(&a)
	}
	for _, slot := range [...]int{r.toolName, r.toolCallID, r.aiToolName, r.aiToolCallID} {
		if _, ok := a.get(slot); ok {
			s.ToolCall = true
			break
		}
	}
	for di, d := range r.o.Deadlines {
		if !a.any(r.deadlineMask) {
			break
		}
		v := strValue(a.get(r.deadlines[di]))
		if v == "" {
			continue
		}
		dl, err := deadlinefmt.Parse(d.Format, v, s.Start)
		if err != nil {
			st[BadDeadline]++
			continue
		}
		if dl != 0 && (s.Deadline == 0 || dl < s.Deadline) {
			s.Deadline = dl
		}
	}
	for _, slot := range r.models {
		if !a.any(r.modelMask) {
			break
		}
		v, ok := a.get(slot)
		if !ok {
			continue
		}
		if v = one(v); v.Type() != pcommon.ValueTypeStr {
			st[BadAttributeType]++ // a model is a name: a number here is a mistake, not a model
			continue
		}
		if m := v.Str(); m != "" {
			s.Model = m
			break
		}
	}
	if a.any(r.inputMask) {
		s.InputTokens = tokens(&a, st, r.inputTokens)
	}
	if a.any(r.outputMask) {
		s.OutputTokens = tokens(&a, st, r.outputTokens)
	}
	for _, slot := range r.costs {
		if !a.any(r.costMask) {
			break
		}
		if v, ok := a.get(slot); ok {
			if f, ok := number(one(v)); ok && f >= 0 && !math.IsInf(f, 0) {
				s.Cost, s.HasCost = f, true
				break
			}
			st[BadAttributeType]++
		}
	}
}

// KeyHash returns the hash of sp's idempotency key as Read finds it (KeyHash of verdict.Span),
// or 0 when it has none: all that the correlator needs of a span that is not a root when it
// arrives.
func (r *Reader) KeyHash(sp ptrace.Span) uint64 {
	a := sp.Attributes()
	for _, name := range r.o.IdempotencyKeys {
		if k := strAttr(a, name); k != "" {
			return r.hashKey(k)
		}
	}
	return 0
}

// messageHash is the hash of the identity of the message a CONSUMER span delivers:
// messaging.message.id, else Kafka's destination, partition and offset (the current names,
// then the older messaging.kafka.* ones); 0 when neither is there. A Kafka message key is not
// an identity (many messages share one): configure it as an idempotency key to use it.
func (r *Reader) messageHash(a *view) uint64 {
	if id := strValue(a.get(r.messageID)); id != "" {
		return r.hashKey("messaging.message.id\x00" + id)
	}
	dest := strValue(a.get(r.msgDest))
	if dest == "" {
		return 0
	}
	first := func(names ...string) string {
		for _, n := range names {
			if v := strValue(a.a.Get(n)); v != "" {
				return v
			}
		}
		return ""
	}
	part := first("messaging.destination.partition.id", "messaging.kafka.destination.partition")
	off := first("messaging.kafka.offset", "messaging.kafka.message.offset")
	if part == "" || off == "" {
		return 0
	}
	return r.hashKey("kafka\x00" + dest + "\x00" + part + "\x00" + off)
}

// maxResend bounds http.request.resend_count and attempt numbers taken as real.
const maxResend = 10_000

// HashKey returns the 64-bit FNV-1a hash of an idempotency key, never zero. Only the hash is
// kept, so keys never appear in clear in state, attributes, metrics or logs.
func HashKey(k string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(k))
	if x := h.Sum64(); x != 0 {
		return x
	}
	return 1
}

// strAttr returns a string attribute, or the first element of a string array (HTTP headers are
// captured as string arrays by the HTTP semantic conventions), or "".
func strAttr(a pcommon.Map, name string) string { return strValue(a.Get(name)) }

// strValue is strAttr for a value already found.
func strValue(v pcommon.Value, ok bool) string {
	if !ok {
		return ""
	}
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return v.Str()
	case pcommon.ValueTypeSlice:
		if sl := v.Slice(); sl.Len() > 0 && sl.At(0).Type() == pcommon.ValueTypeStr {
			return sl.At(0).Str()
		}
	case pcommon.ValueTypeInt:
		return strconv.FormatInt(v.Int(), 10)
	case pcommon.ValueTypeDouble:
		return strconv.FormatFloat(v.Double(), 'f', -1, 64)
	}
	return ""
}

// one returns v itself, or the single element of an array of one value: the conventions write
// captured headers as string arrays (http.request.header.x-retry-attempt = ["3"]), and every
// configured attribute reads such an array as its value (DESIGN.md "Words": attempt). An array
// of any other length stays an array, which no scalar reader accepts (counted where read).
func one(v pcommon.Value) pcommon.Value {
	if v.Type() == pcommon.ValueTypeSlice && v.Slice().Len() == 1 {
		return v.Slice().At(0)
	}
	return v
}

// number reads an int, a finite double, or a numeric string.
func number(v pcommon.Value) (float64, bool) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return float64(v.Int()), true
	case pcommon.ValueTypeDouble:
		f := v.Double()
		return f, !math.IsNaN(f) && !math.IsInf(f, 0)
	case pcommon.ValueTypeStr:
		f, err := strconv.ParseFloat(strings.TrimSpace(v.Str()), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// intAttr reads the first of names holding an integer (an int, an integral double, or a decimal
// string, as some exporters write every value as a string); -1 when absent. A value of another
// type is counted as BadAttributeType.
func intAttr(a *view, st *Stats, slots ...int) int64 {
	if n, ok := firstOf(a, st, slots, intValue); ok {
		return n
	}
	return -1
}

// intValue reads an int, an integral double below 2^53 or a decimal string as an integer.
func intValue(v pcommon.Value) (int64, bool) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return v.Int(), true
	case pcommon.ValueTypeDouble:
		if f := v.Double(); f == math.Trunc(f) && f >= 0 && f < 1<<53 {
			return int64(f), true
		}
	case pcommon.ValueTypeStr:
		if n, err := strconv.ParseInt(strings.TrimSpace(v.Str()), 10, 64); err == nil {
			return n, true
		}
	}
	return 0, false
}

// firstOf returns what read makes of the first of slots present whose value (its first element
// when an array) read accepts; each present value it refuses is counted as BadAttributeType.
// ok is false when none is accepted.
func firstOf[T any](a *view, st *Stats, slots []int, read func(pcommon.Value) (T, bool)) (t T, ok bool) {
	for _, slot := range slots {
		v, present := a.get(slot)
		if !present {
			continue
		}
		if t, ok = read(one(v)); ok {
			return t, true
		}
		st[BadAttributeType]++
	}
	return t, false
}

// tokens reads the first present token count of names; negative or non-integral counts are
// ignored and counted.
func tokens(a *view, st *Stats, slots []int) int64 {
	for _, slot := range slots {
		v, ok := a.get(slot)
		if !ok {
			continue
		}
		f, ok := number(one(v))
		if !ok || f != math.Trunc(f) {
			st[BadAttributeType]++
			continue
		}
		if f < 0 || f > 1<<53 {
			st[BadTokenCount]++
			continue
		}
		return int64(f)
	}
	return -1
}

var grpcCodeNames = map[string]int{
	"OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4,
	"NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8,
	"FAILED_PRECONDITION": 9, "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12,
	"INTERNAL": 13, "UNAVAILABLE": 14, "DATA_LOSS": 15, "UNAUTHENTICATED": 16,
}

// llmOperation names the model operation of an LLM span that instrumentations other than the
// GenAI conventions mark as one: OpenInference's openinference.span.kind LLM (a chat) and
// OpenLLMetry's llm.request.type ("chat", "completion", "embedding"). A failed call carries no
// tokens, and without this it would not be an attempt of its run.
func llmOperation(a *view) string {
	if k := strValue(a.get(a.r.openInferenceKind)); strings.EqualFold(k, "LLM") {
		return "chat"
	}
	switch t := strings.ToLower(strValue(a.get(a.r.llmRequestType))); t {
	case "chat", "completion":
		return t
	case "embedding":
		return "embeddings"
	}
	return ""
}

// grpcStatus reads rpc.grpc.status_code (int) or rpc.status_code (int, numeric string or the
// canonical code name, as newer RPC conventions write it); -1 when absent.
func grpcStatus(a *view, st *Stats) int {
	if c, ok := firstOf(a, st, []int{a.r.grpcStatus, a.r.rpcStatus}, grpcCode); ok {
		return c
	}
	// The current RPC conventions: rpc.response.status_code, a string; for gRPC the code's
	// name ("UNAVAILABLE"). Values of other RPC systems are not gRPC codes: passed over.
	if v, ok := a.get(a.r.rpcResponseStatus); ok && one(v).Type() == pcommon.ValueTypeStr {
		v = one(v)
		if c, ok := grpcCodeNames[strings.ToUpper(strings.TrimSpace(v.Str()))]; ok {
			return c
		}
	}
	return -1
}

// grpcCode reads a gRPC status code: an int from 0 to 16, its canonical name or its number as
// a string.
func grpcCode(v pcommon.Value) (int, bool) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		if c := v.Int(); c >= 0 && c <= 16 {
			return int(c), true
		}
	case pcommon.ValueTypeStr:
		s := strings.TrimSpace(v.Str())
		if c, ok := grpcCodeNames[strings.ToUpper(s)]; ok {
			return c, true
		}
		if c, err := strconv.Atoi(s); err == nil && c >= 0 && c <= 16 {
			return c, true
		}
	}
	return 0, false
}

// target names what a span calls, for grouping same-name siblings into runs (DESIGN.md "Words":
// run; docs/verdicts.md "How attempts group into runs"): the hash of rpc.service/rpc.method,
// messaging.destination.name, server.address[:server.port] followed by the path (url.path, else
// the path of url.full), url.full without its query, peer.service or the requested model, the
// first present, then "#" and the tool name (gen_ai.tool.name, else ai.toolCall.name) where one
// is recorded: calls to different endpoints of one host, or to different tools, are different
// operations. Hashed part by part, nothing joined or allocated.
func (r *Reader) target(a *view) verdict.TargetHash {
	t := r.endpoint(a)
	tool := strValue(a.get(r.toolName))
	if tool == "" {
		tool = strValue(a.get(r.aiToolName))
	}
	if tool != "" {
		if t == 0 {
			t = verdict.NewTargetHash()
		}
		t = t.Add("#").Add(tool)
	}
	return t
}

// endpoint is target's first part: what the span calls, without the tool.
func (r *Reader) endpoint(a *view) verdict.TargetHash {
	if m := strValue(a.get(r.rpcMethod)); m != "" {
		return verdict.NewTargetHash().Add(strValue(a.get(r.rpcService))).Add("/").Add(m)
	}
	if d := strValue(a.get(r.msgDest)); d != "" {
		return verdict.NewTargetHash().Add(d)
	}
	if h := strValue(a.get(r.serverAddr)); h != "" {
		t := verdict.NewTargetHash().Add(h)
		pv, ok := a.get(r.serverPort)
		if ok && pv.Type() == pcommon.ValueTypeInt {
			t = t.Add(":").AddInt(pv.Int())
		} else if p := strValue(pv, ok); p != "" {
			t = t.Add(":").Add(p)
		}
		path := strValue(a.get(r.urlPath))
		if path == "" {
			path = URLPath(strValue(a.get(r.urlFull)))
		}
		return t.Add(path)
	}
	if u := strValue(a.get(r.urlFull)); u != "" {
		if i := strings.IndexAny(u, "?#"); i >= 0 {
			u = u[:i]
		}
		return verdict.NewTargetHash().Add(u)
	}
	if p := strValue(a.get(r.peerService)); p != "" {
		return verdict.NewTargetHash().Add(p)
	}
	if m := strValue(a.get(r.requestModel)); m != "" {
		return verdict.NewTargetHash().Add(m)
	}
	return 0
}

// URLPath is the path of an absolute URL ("http://h:8080/search?q=1" → "/search"): what
// follows the authority, up to the query or fragment; "" when there is none.
func URLPath(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	rest := u[i+3:]
	j := strings.IndexAny(rest, "/?#")
	if j < 0 || rest[j] != '/' {
		return ""
	}
	rest = rest[j:]
	if k := strings.IndexAny(rest, "?#"); k >= 0 {
		rest = rest[:k]
	}
	return rest
}
