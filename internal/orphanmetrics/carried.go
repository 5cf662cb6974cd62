package orphanmetrics // import "github.com/orphanwatch/orphanwatch/internal/orphanmetrics"

import (
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Carried verdicts (time model v2, internal/verdict's contract): a span that left the
// processor before its verdict was final carries orphanwatch.verdict.deferred = true and is
// not counted (recordSpan); its verdict comes later as a span event named
// orphanwatch.verdict on another span of its trace (its root, or a span named
// orphanwatch.verdicts made to carry such events). Each such event is counted as the span it
// is for: its attributes are the verdict attributes and the span's operation attributes, and
// it names the span's identity. A carrier span (orphanwatch.verdicts, orphanwatch.carrier =
// true) has no verdict attribute of its own: it needs no case here.
const (
	eventVerdict      = "orphanwatch.verdict"
	attrEventTraceID  = "orphanwatch.span.trace_id"
	attrEventSpanID   = "orphanwatch.span.span_id"
	attrEventSpanName = "orphanwatch.span.name"
	attrEventSpanKind = "orphanwatch.span.kind"
	attrEventStart    = "orphanwatch.span.start_time_unix_nano"
	attrEventService  = "service.name"
)

// carried is what one Record call needs for the events it meets: a span made on the first one
// and reused for every event (only its identity is set: the attributes are read from the
// event), and the service of the last event.
type carried struct {
	span     ptrace.Span
	made     bool
	lastName string
	lastSvc  *serviceSeries
}

// recordEvents counts the orphanwatch.verdict events of span (whose resource's service is svc,
// and its dimension values res) as the spans they are for.
func (r *Recorder) recordEvents(svc *serviceSeries, res []string, span ptrace.Span, v *spanView, now int64, cs *carried) {
	evs := span.Events()
	for i := range evs.Len() {
		ev := evs.At(i)
		if ev.Name() != eventVerdict {
			continue
		}
		attrs := ev.Attributes()
		v.read(attrs)
		if v.has == 0 {
			continue // nothing any metric reads
		}
		if !cs.made {
			cs.span, cs.made = ptrace.NewSpan(), true
		}
		id := readIdentity(attrs)
		s := cs.span
		tid := span.TraceID()
		if id.traceIDOK {
			tid = id.traceID
		}
		s.SetTraceID(tid)
		s.SetSpanID(id.spanID) // empty unless valid: never the carrying span's
		s.SetName(id.name)
		s.SetKind(id.kind)
		s.SetStartTimestamp(pcommon.Timestamp(id.start))
		s.SetEndTimestamp(ev.Timestamp())
		evSvc := svc
		if id.service != "" {
			if id.service != cs.lastName || cs.lastSvc == nil {
				cs.lastName, cs.lastSvc = id.service, r.service(id.service)
			}
			evSvc = cs.lastSvc
		}
		if r.dims != nil {
			// The event's dimension values: its own attributes' (the processor copies only
			// the operation's), else, for a span of the carrying span's service, that
			// resource's (another span's attributes are not its), else the defaults.
			evRes := res
			if evSvc != svc {
				evRes = nil
			}
			evSvc = r.dimService(evSvc.name, evRes, attrs)
		}
		if id.malformed {
			r.skips[skipInvalidVerdictEvent].Inc()
		}
		r.recordView(evSvc, s, v, now)
	}
}

// identity is the span an orphanwatch.verdict event is for, as far as its attributes say it
// well: a malformed value is left at its zero value (the trace ID: the carrying span's; the
// kind: unspecified; the service: the carrying span's) and sets malformed.
type identity struct {
	traceID   pcommon.TraceID
	traceIDOK bool
	spanID    pcommon.SpanID
	name      string
	kind      ptrace.SpanKind
	start     uint64
	service   string // sanitized (unknown_service when empty), "" when absent or malformed
	malformed bool
}

// readIdentity reads the identity attributes of an event (the first occurrence of a name wins,
// as in spanView.read).
func readIdentity(attrs pcommon.Map) identity {
	var id identity
	var seen uint8
	first := func(bit uint8) bool {
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	}
	for k, val := range attrs.All() {
		switch k {
		case attrEventTraceID:
			if first(1) {
				id.traceIDOK = val.Type() == pcommon.ValueTypeStr && parseHexID(id.traceID[:], val.Str())
				id.malformed = id.malformed || !id.traceIDOK
			}
		case attrEventSpanID:
			if first(2) {
				if val.Type() != pcommon.ValueTypeStr || !parseHexID(id.spanID[:], val.Str()) {
					id.spanID, id.malformed = pcommon.SpanID{}, true
				}
			}
		case attrEventSpanName:
			if first(4) {
				if val.Type() == pcommon.ValueTypeStr {
					id.name = val.Str()
				} else {
					id.malformed = true
				}
			}
		case attrEventSpanKind:
			if first(8) {
				kind, ok := spanKindOf(val)
				id.kind, id.malformed = kind, id.malformed || !ok
			}
		case attrEventStart:
			if first(16) {
				if val.Type() == pcommon.ValueTypeInt && val.Int() >= 0 {
					id.start = uint64(val.Int())
				} else {
					id.malformed = true
				}
			}
		case attrEventService:
			if first(32) {
				// As on a resource: an empty name is unknown_service (the processor writes ""
				// for a span whose resource had none).
				if val.Type() == pcommon.ValueTypeStr {
					if id.service = sanitize(val.Str()); id.service == "" {
						id.service = unknownService
					}
				} else {
					id.malformed = true
				}
			}
		}
	}
	return id
}

// spanKinds are the span kinds, by their ptrace.SpanKind value, as orphanwatch.span.kind names
// them.
var spanKinds = [...]string{"unspecified", "internal", "server", "client", "producer", "consumer"}

// spanKindOf reads a span kind written as its lowercase name; anything else is unspecified and
// not ok.
func spanKindOf(val pcommon.Value) (ptrace.SpanKind, bool) {
	if val.Type() != pcommon.ValueTypeStr {
		return ptrace.SpanKindUnspecified, false
	}
	if k := slices.Index(spanKinds[:], val.Str()); k >= 0 {
		return ptrace.SpanKind(k), true
	}
	return ptrace.SpanKindUnspecified, false
}

// parseHexID decodes s, exactly 2*len(dst) hex digits (either case) that are not all zero
// (an invalid ID), into dst. It leaves dst zero and returns false otherwise.
func parseHexID(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	var or byte
	for i := range dst {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			clear(dst)
			return false
		}
		dst[i] = hi<<4 | lo
		or |= dst[i]
	}
	return or != 0
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
