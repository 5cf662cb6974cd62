// Package scenarios builds the traces of the orphanwatch scenarios (SCENARIOS.md S1-S24, and
// S25-S34 from the verdict rounds after it) together with the verdicts the processor must write
// on them and the metric series the exporter must then produce (docs/verdicts.md).
//
// The traces are built with a small test-data DSL: times are given in seconds relative to
// T0 = 2026-01-01T00:00:00Z, trace and span IDs are derived from the scenario number, the
// trace number and a per-trace span counter, so every build is byte-for-byte identical.
//
//	b := NewBuilder(2)
//	tr := b.NewTrace()
//	root := tr.HTTPServerRoot("gateway", "POST", "/ask", 0.00, 3.00, 499)
//	call := root.HTTPClient("POST", "researcher", 8080, "/run", 0.01, 3.00, 0).ErrorType("context canceled")
//	srv := call.HTTPServer("researcher", "/run", 0.02, 6.55, 200)
//	td := b.Traces()
//
// The expected verdicts are written by hand for every span (see expect.go), never computed
// by a model of the processor: this package is the independent reading of the contract.
package scenarios

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// T0Unix is the origin of every scenario timeline in unix seconds (2026-01-01T00:00:00Z).
const T0Unix = 1767225600

// T0 is the origin of every scenario timeline.
var T0 = time.Unix(T0Unix, 0).UTC()

// ScopeName is the instrumentation scope the builder puts the spans under.
const ScopeName = "github.com/orphanwatch/orphanwatch/internal/scenarios" // the files' scope since S1; kept when the package moved under testsupport

// Span kinds, re-exported for brevity.
const (
	Internal = ptrace.SpanKindInternal
	Server   = ptrace.SpanKindServer
	Client   = ptrace.SpanKindClient
	Producer = ptrace.SpanKindProducer
	Consumer = ptrace.SpanKindConsumer
)

// Seconds converts a time in seconds after T0 into nanoseconds after T0 (rounded to the
// nearest nanosecond, so 4.39 is exactly 4_390_000_000).
func Seconds(s float64) int64 { return int64(math.Round(s * 1e9)) }

// Builder collects the traces of one scenario.
type Builder struct {
	scenario int
	traces   []*Trace
	spans    []*Span // in creation order
}

// NewBuilder starts a scenario. The scenario number (1..255) is part of every ID.
func NewBuilder(scenario int) *Builder {
	if scenario <= 0 || scenario > 255 {
		panic("scenario number out of range")
	}
	return &Builder{scenario: scenario}
}

// Trace is one trace of a scenario.
type Trace struct {
	b     *Builder
	Index int // 1-based, in creation order
	ID    pcommon.TraceID
	count uint32
}

// NewTrace adds a trace with ID 5c<scenario><index>00..00<index> (hex).
func (b *Builder) NewTrace() *Trace {
	idx := len(b.traces) + 1
	var id [16]byte
	id[0] = 0x5c
	id[1] = byte(b.scenario)
	id[2] = byte(idx)
	id[15] = byte(idx)
	t := &Trace{b: b, Index: idx, ID: pcommon.TraceID(id)}
	b.traces = append(b.traces, t)
	return t
}

// NewTraceWithID adds a trace with an explicit ID (S13 uses the all-zero ID).
func (b *Builder) NewTraceWithID(id pcommon.TraceID) *Trace {
	t := b.NewTrace()
	t.ID = id
	return t
}

// Spans returns all spans in creation order.
func (b *Builder) Spans() []*Span { return b.spans }

// Attr is one span attribute; Value is string, int, int64, float64, bool or []string.
type Attr struct {
	Key   string
	Value any
}

// Span is one span under construction. Fields are exported so scenario code and tests can
// read them; use the methods to build.
type Span struct {
	Trace    *Trace
	TraceID  pcommon.TraceID
	ID       pcommon.SpanID
	ParentID pcommon.SpanID
	Parent   *Span // nil for roots (and for spans whose parent is set by raw ID)
	Service  string
	Name     string
	Kind     ptrace.SpanKind
	// Start and End in nanoseconds after T0, unless ZeroTimes is set (then both are
	// written as 0, i.e. 1970).
	Start, End int64
	ZeroTimes  bool
	StatusCode ptrace.StatusCode
	StatusMsg  string
	Attrs      []Attr
	Links      []*Span
	// Events are span events; only "exception" events (with exception.type) are used.
	Events []Event
}

// Event is a span event at a time in seconds after T0.
type Event struct {
	Name  string
	At    int64 // nanoseconds after T0
	Attrs []Attr
}

// Exception records an exception event of the given type at the span's end, as OpenTelemetry
// SDKs' RecordException does (semantic conventions: exceptions on spans), and sets the span
// status to ERROR.
func (s *Span) Exception(typ string) *Span {
	s.Events = append(s.Events, Event{Name: "exception", At: s.End, Attrs: []Attr{{"exception.type", typ}}})
	return s.Error(typ)
}

// Span adds a span without parent (a root) to the trace.
func (t *Trace) Span(service, name string, kind ptrace.SpanKind, start, end float64) *Span {
	t.count++
	var id [8]byte
	id[0] = byte(t.b.scenario)
	id[1] = byte(t.Index)
	binary.BigEndian.PutUint32(id[4:], t.count)
	s := &Span{
		Trace:   t,
		TraceID: t.ID,
		ID:      pcommon.SpanID(id),
		Service: service,
		Name:    name,
		Kind:    kind,
		Start:   Seconds(start),
		End:     Seconds(end),
	}
	t.b.spans = append(t.b.spans, s)
	return s
}

// Child adds a span under s, in the same trace.
func (s *Span) Child(service, name string, kind ptrace.SpanKind, start, end float64) *Span {
	c := s.Trace.Span(service, name, kind, start, end)
	c.ParentID = s.ID
	c.Parent = s
	return c
}

// SetParent makes p the parent of s (used to build the S13 cycle).
func (s *Span) SetParent(p *Span) *Span {
	s.ParentID = p.ID
	s.Parent = p
	return s
}

// SetID overrides the span ID (used to build the S13 duplicate).
func (s *Span) SetID(id pcommon.SpanID) *Span {
	s.ID = id
	return s
}

// SetZeroTimes writes 0 as start and end timestamp.
func (s *Span) SetZeroTimes() *Span {
	s.ZeroTimes = true
	return s
}

// Set adds (or replaces) an attribute. Supported values: string, int, int64, float64,
// bool, []string.
func (s *Span) Set(key string, value any) *Span {
	switch value.(type) {
	case string, int, int64, float64, bool, []string:
	default:
		panic(fmt.Sprintf("unsupported attribute type %T for %s", value, key))
	}
	for i := range s.Attrs {
		if s.Attrs[i].Key == key {
			s.Attrs[i].Value = value
			return s
		}
	}
	s.Attrs = append(s.Attrs, Attr{Key: key, Value: value})
	return s
}

// Get returns an attribute value set on the span.
func (s *Span) Get(key string) (any, bool) {
	for _, a := range s.Attrs {
		if a.Key == key {
			return a.Value, true
		}
	}
	return nil, false
}

// Error sets the span status to ERROR with a message.
func (s *Span) Error(msg string) *Span {
	s.StatusCode = ptrace.StatusCodeError
	s.StatusMsg = msg
	return s
}

// Link adds a span link from s to o.
func (s *Span) Link(o *Span) *Span {
	s.Links = append(s.Links, o)
	return s
}

// StartSeconds and EndSeconds return the times in seconds after T0.
func (s *Span) StartSeconds() float64 { return float64(s.Start) / 1e9 }

// EndSeconds returns the end time in seconds after T0.
func (s *Span) EndSeconds() float64 { return float64(s.End) / 1e9 }

// Traces converts everything built so far: one ResourceSpans per service (in order of first
// appearance), one ScopeSpans each, spans in creation order.
func (b *Builder) Traces() ptrace.Traces { return SpansToTraces(b.spans) }

// SpansToTraces converts spans in the given order, starting a new ResourceSpans whenever the
// service differs from every earlier one (grouped by service, first appearance order).
func SpansToTraces(spans []*Span) ptrace.Traces {
	td := ptrace.NewTraces()
	bySvc := map[string]ptrace.SpanSlice{}
	for _, s := range spans {
		ss, ok := bySvc[s.Service]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", s.Service)
			sc := rs.ScopeSpans().AppendEmpty()
			sc.Scope().SetName(ScopeName)
			ss = sc.Spans()
			bySvc[s.Service] = ss
		}
		s.CopyTo(ss.AppendEmpty())
	}
	return td
}

// SpansToTracesInOrder converts spans keeping their exact order: a new ResourceSpans starts
// whenever the service changes from the previous span (so one service may appear in several
// ResourceSpans, as after a shuffle).
func SpansToTracesInOrder(spans []*Span) ptrace.Traces {
	td := ptrace.NewTraces()
	var cur ptrace.SpanSlice
	prev := ""
	for i, s := range spans {
		if i == 0 || s.Service != prev {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", s.Service)
			sc := rs.ScopeSpans().AppendEmpty()
			sc.Scope().SetName(ScopeName)
			cur = sc.Spans()
			prev = s.Service
		}
		s.CopyTo(cur.AppendEmpty())
	}
	return td
}

// CopyTo writes the span into a pdata span.
func (s *Span) CopyTo(dst ptrace.Span) {
	dst.SetTraceID(s.TraceID)
	dst.SetSpanID(s.ID)
	dst.SetParentSpanID(s.ParentID)
	dst.SetName(s.Name)
	dst.SetKind(s.Kind)
	if !s.ZeroTimes {
		dst.SetStartTimestamp(pcommon.Timestamp(T0Unix*int64(time.Second) + s.Start))
		dst.SetEndTimestamp(pcommon.Timestamp(T0Unix*int64(time.Second) + s.End))
	}
	dst.Status().SetCode(s.StatusCode)
	dst.Status().SetMessage(s.StatusMsg)
	attrs := dst.Attributes()
	for _, a := range s.Attrs {
		switch v := a.Value.(type) {
		case string:
			attrs.PutStr(a.Key, v)
		case int:
			attrs.PutInt(a.Key, int64(v))
		case int64:
			attrs.PutInt(a.Key, v)
		case float64:
			attrs.PutDouble(a.Key, v)
		case bool:
			attrs.PutBool(a.Key, v)
		case []string:
			sl := attrs.PutEmptySlice(a.Key)
			for _, e := range v {
				sl.AppendEmpty().SetStr(e)
			}
		}
	}
	for _, ev := range s.Events {
		de := dst.Events().AppendEmpty()
		de.SetName(ev.Name)
		de.SetTimestamp(pcommon.Timestamp(T0Unix*int64(time.Second) + ev.At))
		for _, a := range ev.Attrs {
			if v, ok := a.Value.(string); ok {
				de.Attributes().PutStr(a.Key, v)
			}
		}
	}
	for _, l := range s.Links {
		dl := dst.Links().AppendEmpty()
		dl.SetTraceID(l.TraceID)
		dl.SetSpanID(l.ID)
	}
}
