package input

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jaegertracing/jaeger-idl/model/v1"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/translator/jaeger"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The Jaeger UI / query API JSON model (jaeger's model/json): one trace object with its spans
// and a table of processes the spans point to by processID. Times are microseconds since the
// epoch, durations microseconds, IDs hex, tags typed.
type jaegerTraceJSON struct {
	TraceID   string                     `json:"traceID"`
	Spans     []json.RawMessage          `json:"spans"`
	Processes map[string]jaegerProcessJS `json:"processes"`
}

type jaegerProcessJS struct {
	ServiceName string            `json:"serviceName"`
	Tags        []json.RawMessage `json:"tags"`
}

type jaegerSpanJSON struct {
	TraceID       string            `json:"traceID"`
	SpanID        string            `json:"spanID"`
	ParentSpanID  string            `json:"parentSpanID"` // older exports
	Flags         json.Number       `json:"flags"`
	OperationName string            `json:"operationName"`
	References    []jaegerRefJSON   `json:"references"`
	StartTime     json.RawMessage   `json:"startTime"`
	Duration      json.RawMessage   `json:"duration"`
	Tags          []json.RawMessage `json:"tags"`
	Logs          []jaegerLogJSON   `json:"logs"`
	ProcessID     string            `json:"processID"`
	Process       *jaegerProcessJS  `json:"process"` // inline, as the UI's own trace model has it
}

type jaegerRefJSON struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

type jaegerLogJSON struct {
	Timestamp json.RawMessage   `json:"timestamp"`
	Fields    []json.RawMessage `json:"fields"`
}

// noParentTag marks, during translation only, a span whose only same-trace references are
// FOLLOWS_FROM: the jaeger-idl model (and so the translator) would make the first of them the
// parent; orphanwatch treats FOLLOWS_FROM as a span link only (work that follows, not work the
// caller waits for), so the parent is cleared after translation and the link kept.
const noParentTag = "orphanwatch.cli.follows_from_only"

// jaegerTrace converts one Jaeger JSON trace object: it maps the JSON onto jaeger-idl model
// spans and converts them with the contrib Jaeger translator's ProtoToTraces, the translation
// the collector's jaeger receiver applies to what Jaeger clients send.
func (r *Result) jaegerTrace(raw json.RawMessage) error {
	var t jaegerTraceJSON
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("not a Jaeger JSON trace: %w", err)
	}
	procs := map[string]*model.Process{}
	ids := make([]string, 0, len(t.Processes))
	for id := range t.Processes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	batches := map[string]*model.Batch{}
	var order []*model.Batch
	batchFor := func(key string, p *model.Process) *model.Batch {
		b := batches[key]
		if b == nil {
			b = &model.Batch{Process: p}
			batches[key] = b
			order = append(order, b)
		}
		return b
	}
	for _, id := range ids {
		p := t.Processes[id]
		procs[id] = r.jaegerProcess(p)
	}
	marked := 0
	for _, sraw := range t.Spans {
		var js jaegerSpanJSON
		dec := json.NewDecoder(bytes.NewReader(sraw))
		dec.UseNumber()
		if err := dec.Decode(&js); err != nil {
			if bytes.HasPrefix(bytes.TrimSpace(sraw), []byte("{")) {
				r.malformed(MalformedUnparseable, 1)
				r.warnf("Jaeger span dropped: %v", err)
			} else {
				r.malformed(MalformedNotObject, 1)
			}
			continue
		}
		sp, reason := r.jaegerSpan(&js, t.TraceID)
		if reason != "" {
			r.malformed(reason, 1)
			continue
		}
		for _, tag := range sp.Tags {
			if tag.Key == noParentTag {
				marked++
			}
		}
		switch {
		case js.Process != nil:
			p := r.jaegerProcess(*js.Process)
			b := batchFor("inline:"+p.String(), p)
			b.Spans = append(b.Spans, sp)
		case procs[js.ProcessID] != nil:
			b := batchFor("id:"+js.ProcessID, procs[js.ProcessID])
			b.Spans = append(b.Spans, sp)
		default:
			r.warnf("Jaeger span with unknown processID %q: no service name", js.ProcessID)
			b := batchFor("none", &model.Process{})
			b.Spans = append(b.Spans, sp)
		}
	}
	td, err := jaeger.ProtoToTraces(order)
	if err != nil {
		return fmt.Errorf("jaeger translator: %w", err)
	}
	if marked > 0 {
		clearFollowsFromParents(td)
	}
	td.ResourceSpans().MoveAndAppendTo(r.Traces.ResourceSpans())
	return nil
}

func (r *Result) jaegerProcess(p jaegerProcessJS) *model.Process {
	mp := &model.Process{ServiceName: p.ServiceName}
	for _, raw := range p.Tags {
		if kv, ok := r.jaegerTag(raw); ok {
			mp.Tags = append(mp.Tags, kv)
		}
	}
	return mp
}

// jaegerSpan maps one span; a non-empty reason means the span is dropped.
func (r *Result) jaegerSpan(js *jaegerSpanJSON, traceTraceID string) (*model.Span, string) {
	tid := js.TraceID
	if strings.TrimSpace(tid) == "" {
		tid = traceTraceID
	}
	traceID, ok := parseTraceID(tid)
	if !ok {
		return nil, MalformedTraceID
	}
	spanID, ok := parseSpanID(js.SpanID)
	if !ok {
		return nil, MalformedSpanID
	}
	sp := &model.Span{
		TraceID:       traceID,
		SpanID:        spanID,
		OperationName: js.OperationName,
	}
	if f, err := strconv.ParseUint(js.Flags.String(), 10, 32); err == nil {
		sp.Flags = model.Flags(f)
	}
	start, okStart := micros(js.StartTime)
	if !okStart || start <= 0 {
		if len(js.StartTime) > 0 && string(js.StartTime) != "null" && !okStart {
			r.warnf("Jaeger span startTime %s is not a number of microseconds", truncate(string(js.StartTime), 40))
		}
		start = 0 // the processor counts zero_timestamps
	}
	sp.StartTime = time.Unix(0, start*1000).UTC()
	if d, ok := micros(js.Duration); ok {
		sp.Duration = time.Duration(d) * time.Microsecond
	} else if len(js.Duration) > 0 && string(js.Duration) != "null" {
		r.warnf("Jaeger span duration %s is not a number of microseconds", truncate(string(js.Duration), 40))
	}
	childOf, followsFrom := false, false
	for _, ref := range js.References {
		rt, ok1 := parseTraceID(ref.TraceID)
		if strings.TrimSpace(ref.TraceID) == "" {
			rt, ok1 = traceID, true
		}
		rs, ok2 := parseSpanID(ref.SpanID)
		if !ok1 || !ok2 {
			r.warnf("Jaeger reference with an invalid ID ignored")
			continue
		}
		var typ model.SpanRefType
		switch strings.ToUpper(strings.TrimSpace(ref.RefType)) {
		case "CHILD_OF", "CHILDOF", "":
			typ = model.ChildOf
			childOf = childOf || rt == traceID
		case "FOLLOWS_FROM", "FOLLOWSFROM":
			typ = model.FollowsFrom
			followsFrom = followsFrom || rt == traceID
		default:
			r.warnf("Jaeger reference type %q read as CHILD_OF", ref.RefType)
			typ = model.ChildOf
			childOf = childOf || rt == traceID
		}
		sp.References = append(sp.References, model.SpanRef{TraceID: rt, SpanID: rs, RefType: typ})
	}
	if p := strings.TrimSpace(js.ParentSpanID); p != "" && !childOf {
		if ps, ok := parseSpanID(p); ok && ps != 0 {
			sp.References = append([]model.SpanRef{{TraceID: traceID, SpanID: ps, RefType: model.ChildOf}}, sp.References...)
			childOf = true
		}
	}
	for _, raw := range js.Tags {
		if kv, ok := r.jaegerTag(raw); ok {
			sp.Tags = append(sp.Tags, kv)
		}
	}
	if followsFrom && !childOf {
		sp.Tags = append(sp.Tags, model.Bool(noParentTag, true))
	}
	for _, l := range js.Logs {
		ts, ok := micros(l.Timestamp)
		if !ok {
			ts = start
		}
		ml := model.Log{Timestamp: time.Unix(0, ts*1000).UTC()}
		for _, raw := range l.Fields {
			if kv, ok := r.jaegerTag(raw); ok {
				ml.Fields = append(ml.Fields, kv)
			}
		}
		sp.Logs = append(sp.Logs, ml)
	}
	return sp, ""
}

// jaegerTag maps a typed tag {"key", "type", "value"} (or the protobuf JSON form {"key",
// "vType", "vStr"|"vInt64"|...}) to a model tag. Values whose JSON type disagrees with the
// declared type are converted when they can be ("500" typed int64, "true" typed bool); an
// "error" tag typed as a string "true"/"false" becomes a bool, so the translator sets the
// span's error status as it does for a real bool.
func (r *Result) jaegerTag(raw json.RawMessage) (model.KeyValue, bool) {
	var t struct {
		Key      string          `json:"key"`
		Type     string          `json:"type"`
		Value    json.RawMessage `json:"value"`
		VType    string          `json:"vType"`
		VStr     json.RawMessage `json:"vStr"`
		VBool    json.RawMessage `json:"vBool"`
		VInt64   json.RawMessage `json:"vInt64"`
		VFloat64 json.RawMessage `json:"vFloat64"`
		VBinary  json.RawMessage `json:"vBinary"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&t); err != nil || t.Key == "" {
		r.warnf("Jaeger tag that is not {key, type, value} ignored")
		return model.KeyValue{}, false
	}
	typ, val := strings.ToLower(t.Type), t.Value
	if t.VType != "" && typ == "" {
		typ = strings.ToLower(t.VType)
		switch typ {
		case "string":
			val = t.VStr
		case "bool":
			val = t.VBool
		case "int64":
			val = t.VInt64
		case "float64":
			val = t.VFloat64
		case "binary":
			val = t.VBinary
		}
	}
	var s string
	isStr := json.Unmarshal(val, &s) == nil
	text := s
	if !isStr {
		text = strings.TrimSpace(string(val))
	}
	switch typ {
	case "", "string":
		if isStr {
			if t.Key == "error" {
				if b, err := strconv.ParseBool(s); err == nil {
					return model.Bool(t.Key, b), true
				}
			}
			return model.String(t.Key, s), true
		}
		if len(val) == 0 || string(val) == "null" {
			return model.String(t.Key, ""), true
		}
		return model.String(t.Key, text), true
	case "bool":
		if b, err := strconv.ParseBool(text); err == nil {
			return model.Bool(t.Key, b), true
		}
	case "int64":
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return model.Int64(t.Key, n), true
		}
		if f, err := strconv.ParseFloat(text, 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return model.Int64(t.Key, int64(f)), true
		}
	case "float64":
		if f, err := strconv.ParseFloat(text, 64); err == nil {
			return model.Float64(t.Key, f), true
		}
	case "binary":
		if b, err := base64.StdEncoding.DecodeString(text); err == nil {
			return model.Binary(t.Key, b), true
		}
	default:
		r.warnf("Jaeger tag type %q kept as a string", t.Type)
		return model.String(t.Key, text), true
	}
	r.warnf("Jaeger tag %q typed %s with value %s kept as a string", t.Key, typ, truncate(string(val), 40))
	return model.String(t.Key, text), true
}

// clearFollowsFromParents removes the parent the translator took from a FOLLOWS_FROM
// reference, and the marker tag; the reference stays as a span link.
func clearFollowsFromParents(td ptrace.Traces) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				if _, ok := sp.Attributes().Get(noParentTag); ok {
					sp.Attributes().Remove(noParentTag)
					sp.SetParentSpanID(pcommon.NewSpanIDEmpty())
				}
			}
		}
	}
}

// parseTraceID reads 1-32 hex digits; 64-bit IDs (16 digits or fewer) are left-padded with
// zeros, as Jaeger and the W3C Trace Context do.
func parseTraceID(s string) (model.TraceID, bool) {
	s = strings.TrimSpace(s)
	if !isHex(s, 32) {
		return model.TraceID{}, false
	}
	id, err := model.TraceIDFromString(s)
	return id, err == nil
}

func parseSpanID(s string) (model.SpanID, bool) {
	s = strings.TrimSpace(s)
	if !isHex(s, 16) {
		return 0, false
	}
	id, err := model.SpanIDFromString(s)
	return id, err == nil
}

// micros reads a number of microseconds written as a JSON number or a string.
func micros(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	text := strings.TrimSpace(string(raw))
	var s string
	if json.Unmarshal(raw, &s) == nil {
		text = strings.TrimSpace(s)
	}
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return n, true
	}
	if f, err := strconv.ParseFloat(text, 64); err == nil && !math.IsNaN(f) && math.Abs(f) < 1<<62 {
		return int64(f), true
	}
	return 0, false
}
