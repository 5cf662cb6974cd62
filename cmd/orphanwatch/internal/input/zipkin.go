package input

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"net"
	"sort"
	"strings"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/translator/zipkin/zipkinv1"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/translator/zipkin/zipkinv2"
	zipkinmodel "github.com/openzipkin/zipkin-go/model"

	"github.com/orphanwatch/orphanwatch/internal/zipkinaddr"
)

// zipkinV2 converts a Zipkin v2 JSON array with the contrib Zipkin translator, as the
// collector's zipkin receiver does (string tags are kept as strings, the receiver's default).
// Spans are decoded one by one so that one bad span is counted, not fatal. Shared client/server
// halves keep their common span ID (the processor tells them apart by kind); spans without a
// duration end when they start (the processor judges them unknown).
func (r *Result) zipkinV2(elems []json.RawMessage) {
	spans := make([]*zipkinmodel.SpanModel, 0, len(elems))
	for _, e := range elems {
		var m map[string]json.RawMessage
		if json.Unmarshal(e, &m) != nil {
			r.malformed(MalformedNotObject, 1)
			continue
		}
		if reason := zipkinIDs(m); reason != "" {
			r.malformed(reason, 1)
			continue
		}
		r.fixEndpoint(m, "localEndpoint")
		r.fixEndpoint(m, "remoteEndpoint")
		b, _ := json.Marshal(m)
		var sp zipkinmodel.SpanModel
		if err := json.Unmarshal(b, &sp); err != nil {
			r.malformed(MalformedUnparseable, 1)
			r.warnf("Zipkin span dropped: %v", err)
			continue
		}
		if sp.TraceID.Empty() {
			// Kept: the processor counts it (zero_trace_id) and passes it on unjudged.
			r.warnf("Zipkin span without a trace ID")
		}
		spans = append(spans, &sp)
	}
	if len(spans) == 0 {
		return
	}
	r.splitSharedReceivers(spans)
	td, err := zipkinv2.ToTranslator{ParseStringTags: false}.ToTraces(spans)
	if err != nil {
		// The translator stops at the first span it refuses (a malformed otlp.link tag): count
		// the rest as unparseable rather than losing the file.
		r.warnf("Zipkin translator: %v", err)
		r.malformed(MalformedUnparseable, len(spans)-td.SpanCount())
	}
	td.ResourceSpans().MoveAndAppendTo(r.Traces.ResourceSpans())
}

// zipkinIDs checks the IDs of a Zipkin span before zipkin-go reads them (its errors do not say
// which field was wrong) and returns the reason to drop the span, or "".
func zipkinIDs(m map[string]json.RawMessage) string {
	str := func(k string) (string, bool) {
		v, ok := m[k]
		if !ok || string(v) == "null" {
			return "", false
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "\x00", true // not a string: never hex
		}
		return s, true
	}
	if s, ok := str("traceId"); !ok || !isHex(s, 32) {
		return MalformedTraceID
	}
	if s, ok := str("id"); !ok || !isHex(s, 16) || strings.Trim(s, "0") == "" {
		return MalformedSpanID
	}
	if s, ok := str("parentId"); ok && s != "" && !isHex(s, 16) {
		return MalformedParentID
	}
	return ""
}

// isHex reports whether s is 1 to max hexadecimal digits.
func isHex(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// fixEndpoint makes an endpoint's addresses acceptable to Go's net.ParseIP, which refuses
// IPv4 addresses with leading zeros ("52.0.0.04", found in real exports) and would make the
// whole span unreadable. Such addresses are rewritten canonically; others that do not parse are
// removed. Both are noted as warnings.
func (r *Result) fixEndpoint(m map[string]json.RawMessage, key string) {
	raw, ok := m[key]
	if !ok {
		return
	}
	var ep map[string]json.RawMessage
	if json.Unmarshal(raw, &ep) != nil {
		delete(m, key)
		r.warnf("Zipkin %s that is not an object removed", key)
		return
	}
	changed := false
	for _, f := range []string{"ipv4", "ipv6"} {
		v, ok := ep[f]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			delete(ep, f)
			changed = true
			continue
		}
		if s == "" || net.ParseIP(s) != nil {
			continue
		}
		if f == "ipv4" {
			if c := zipkinaddr.CanonicalIPv4(s); net.ParseIP(c) != nil {
				ep[f], _ = json.Marshal(c)
				changed = true
				r.warnf("Zipkin %s.%s %q read as %s", key, f, s, c)
				continue
			}
		}
		delete(ep, f)
		changed = true
		r.warnf("Zipkin %s.%s %q is not an IP address; ignored", key, f, s)
	}
	if changed {
		m[key], _ = json.Marshal(ep)
	}
}

// zipkinV1 converts a Zipkin v1 JSON array with the contrib translator (all or nothing: v1
// spans are assembled from annotations across records).
func (r *Result) zipkinV1(raw json.RawMessage, elems []json.RawMessage) {
	td, err := zipkinv1.NewJSONTracesUnmarshaler(false).UnmarshalTraces(raw)
	if err != nil {
		r.malformed(MalformedUnparseable, len(elems))
		r.warnf("Zipkin v1 translator refused the spans: %v", err)
		return
	}
	td.ResourceSpans().MoveAndAppendTo(r.Traces.ResourceSpans())
}

// splitSharedReceivers gives separate span IDs to several server-side halves of one shared
// Zipkin span. Zipkin lets a server join its client's span (`shared: true`, same ID); when one
// client span is received more than once, as Brave's Kafka instrumentation records every
// "receive" of a message under the sender's ID, the file holds several SERVER (or CONSUMER)
// records with one ID, different times and children of their own. In OTLP each receipt is a
// span of its own: each gets an ID derived from the shared one, becomes the child of the client
// half (when present), and the children recorded under the shared ID in the same service are
// re-parented to the receipt they belong to (same endpoint, the latest receipt that started
// before them). A single server half (the ordinary client/server pair) and exact copies of one
// record are left as the zipkin receiver leaves them.
func (r *Result) splitSharedReceivers(spans []*zipkinmodel.SpanModel) {
	type key struct {
		trace zipkinmodel.TraceID
		id    zipkinmodel.ID
		kind  zipkinmodel.Kind
	}
	groups := map[key][]*zipkinmodel.SpanModel{}
	var order []key
	ids := map[zipkinmodel.ID]bool{}
	clientHalf := map[[2]any]bool{}
	for _, sp := range spans {
		ids[sp.ID] = true
		if sp.Kind == zipkinmodel.Client || sp.Kind == zipkinmodel.Producer {
			clientHalf[[2]any{sp.TraceID, sp.ID}] = true
		}
		if !sp.Shared || (sp.Kind != zipkinmodel.Server && sp.Kind != zipkinmodel.Consumer) {
			continue
		}
		k := key{sp.TraceID, sp.ID, sp.Kind}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], sp)
	}
	for _, k := range order {
		g := distinct(groups[k])
		if len(g) < 2 {
			continue
		}
		sort.SliceStable(g, func(i, j int) bool { return g[i].Timestamp.Before(g[j].Timestamp) })
		newIDs := make([]zipkinmodel.ID, len(g))
		for i, sp := range g {
			newIDs[i] = derivedID(k.trace, k.id, i, ids)
			ids[newIDs[i]] = true
			if clientHalf[[2]any{k.trace, k.id}] {
				parent := k.id
				sp.ParentID = &parent
			}
		}
		// Children recorded under the shared ID, in a receipt's service: to their receipt.
		for _, child := range spans {
			if child.ParentID == nil || *child.ParentID != k.id || child.TraceID != k.trace || child.ID == k.id {
				continue
			}
			if best := receiptOf(child, g); best >= 0 {
				id := newIDs[best]
				child.ParentID = &id
			}
		}
		for i, sp := range g {
			sp.ID = newIDs[i]
		}
		r.warnf("Zipkin span %s is shared by %d %s records (one message received %d times): each read as a span of its own", k.id, len(g), strings.ToLower(string(k.kind)), len(g))
	}
}

// distinct drops exact copies of one record (an exporter that retried), keeping the first;
// the processor judges exact copies itself.
func distinct(g []*zipkinmodel.SpanModel) []*zipkinmodel.SpanModel {
	var out []*zipkinmodel.SpanModel
	seen := map[string]bool{}
	for _, sp := range g {
		b, _ := json.Marshal(sp)
		if !seen[string(b)] {
			seen[string(b)] = true
			out = append(out, sp)
		}
	}
	if len(out) < len(g) {
		return nil // exact copies are present: leave the group to the processor
	}
	return out
}

// receiptOf picks the receipt a child span belongs to: same service, preferring the same
// endpoint, then the latest receipt that started at or before the child; -1 if none is in the
// child's service.
func receiptOf(child *zipkinmodel.SpanModel, g []*zipkinmodel.SpanModel) int {
	best, bestScore := -1, -1
	for i, sp := range g {
		if serviceOf(sp) != serviceOf(child) {
			continue
		}
		score := 1
		if sameEndpoint(sp.LocalEndpoint, child.LocalEndpoint) {
			score += 2
		}
		if !sp.Timestamp.After(child.Timestamp) {
			score += 4
		}
		// Among equals the later receipt wins (g is in time order).
		if score >= bestScore && (score > bestScore || !sp.Timestamp.After(child.Timestamp)) {
			best, bestScore = i, score
		}
	}
	return best
}

func serviceOf(sp *zipkinmodel.SpanModel) string {
	if sp.LocalEndpoint == nil {
		return ""
	}
	return sp.LocalEndpoint.ServiceName
}

func sameEndpoint(a, b *zipkinmodel.Endpoint) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.IPv4.Equal(b.IPv4) && a.IPv6.Equal(b.IPv6) && a.Port == b.Port
}

// derivedID returns a span ID derived from the shared one and the receipt's position, not zero
// and not used in the file.
func derivedID(trace zipkinmodel.TraceID, id zipkinmodel.ID, i int, used map[zipkinmodel.ID]bool) zipkinmodel.ID {
	var b [28]byte
	binary.BigEndian.PutUint64(b[0:], trace.High)
	binary.BigEndian.PutUint64(b[8:], trace.Low)
	binary.BigEndian.PutUint64(b[16:], uint64(id))
	for salt := uint32(i); ; salt += 1 << 16 {
		binary.BigEndian.PutUint32(b[24:], salt)
		h := fnv.New64a()
		h.Write(b[:])
		if n := zipkinmodel.ID(h.Sum64()); n != 0 && !used[n] {
			return n
		}
	}
}
