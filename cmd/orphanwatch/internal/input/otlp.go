package input

import (
	"encoding/json"
	"fmt"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// otlp converts one OTLP JSON document (TracesData / ExportTraceServiceRequest) with pdata's own
// unmarshaler, the one the collector's OTLP/HTTP receiver uses. When the document as a whole is
// refused (one span with an ID that is not hex, a field of the wrong type), each span is
// converted on its own, so that one bad span does not lose the file.
func (r *Result) otlp(raw json.RawMessage, keys map[string]json.RawMessage) {
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
	if err == nil {
		td.ResourceSpans().MoveAndAppendTo(r.Traces.ResourceSpans())
		return
	}
	r.warnf("OTLP document refused as a whole (%v); spans read one by one", err)
	for _, rsRaw := range list(keys, "resourceSpans", "resource_spans") {
		var rsKeys map[string]json.RawMessage
		if json.Unmarshal(rsRaw, &rsKeys) != nil {
			r.malformed(MalformedNotObject, 1)
			continue
		}
		resource := field(rsKeys, "resource")
		schema := field(rsKeys, "schemaUrl", "schema_url")
		for _, ssRaw := range list(rsKeys, "scopeSpans", "scope_spans", "instrumentationLibrarySpans") {
			var ssKeys map[string]json.RawMessage
			if json.Unmarshal(ssRaw, &ssKeys) != nil {
				r.malformed(MalformedNotObject, 1)
				continue
			}
			scope := field(ssKeys, "scope", "instrumentationLibrary")
			spans := list(ssKeys, "spans")
			// The resource and scope, without spans, to find out whether they are readable.
			head, err := unmarshalOne(resource, schema, scope, nil)
			if err != nil {
				r.malformed(MalformedResource, len(spans))
				r.warnf("resource or scope unreadable: %v", err)
				continue
			}
			rs := head.ResourceSpans().At(0)
			ss := rs.ScopeSpans().At(0)
			for _, sp := range spans {
				one, err := unmarshalOne(resource, schema, scope, sp)
				if err != nil {
					r.malformed(MalformedUnparseable, 1)
					r.warnf("OTLP span dropped: %v", err)
					continue
				}
				one.ResourceSpans().At(0).ScopeSpans().At(0).Spans().MoveAndAppendTo(ss.Spans())
			}
			if ss.Spans().Len() > 0 {
				head.ResourceSpans().MoveAndAppendTo(r.Traces.ResourceSpans())
			}
		}
	}
}

// unmarshalOne builds a document of one resource, one scope and at most one span and reads it.
func unmarshalOne(resource, schema, scope, span json.RawMessage) (ptrace.Traces, error) {
	type scopeSpans struct {
		Scope json.RawMessage   `json:"scope,omitempty"`
		Spans []json.RawMessage `json:"spans"`
	}
	type resourceSpans struct {
		Resource   json.RawMessage `json:"resource,omitempty"`
		SchemaURL  json.RawMessage `json:"schemaUrl,omitempty"`
		ScopeSpans []scopeSpans    `json:"scopeSpans"`
	}
	doc := struct {
		ResourceSpans []resourceSpans `json:"resourceSpans"`
	}{[]resourceSpans{{Resource: resource, SchemaURL: schema, ScopeSpans: []scopeSpans{{Scope: scope, Spans: []json.RawMessage{}}}}}}
	if span != nil {
		doc.ResourceSpans[0].ScopeSpans[0].Spans = []json.RawMessage{span}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return ptrace.Traces{}, err
	}
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
	if err != nil {
		return ptrace.Traces{}, err
	}
	if td.ResourceSpans().Len() != 1 || td.ResourceSpans().At(0).ScopeSpans().Len() != 1 {
		return ptrace.Traces{}, fmt.Errorf("unexpected shape")
	}
	return td, nil
}

// list returns the elements of the first of names that holds a JSON array.
func list(m map[string]json.RawMessage, names ...string) []json.RawMessage {
	for _, n := range names {
		if v, ok := m[n]; ok {
			var out []json.RawMessage
			if json.Unmarshal(v, &out) == nil {
				return out
			}
		}
	}
	return nil
}

// field returns the first of names present and not null.
func field(m map[string]json.RawMessage, names ...string) json.RawMessage {
	for _, n := range names {
		if v, ok := m[n]; ok && string(v) != "null" {
			return v
		}
	}
	return nil
}
