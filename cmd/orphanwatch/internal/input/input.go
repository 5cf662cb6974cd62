// Package input reads trace dumps in the formats engineers hold them in (OTLP JSON, also as
// JSON lines written by the collector's file exporter; the Jaeger UI's "Download JSON" trace
// object and the Jaeger query API's {"data": [...]}; Zipkin v2 and v1 JSON arrays) and turns them
// into pdata with the collector ecosystem's own translators.
//
// A file that cannot be read as any of these formats is an error. Spans that are malformed
// inside a readable file are dropped only when they cannot be represented in pdata at all (an
// ID that is not hex, a span that is not a JSON object); they are counted by reason in
// [Result.Malformed]. Every other oddity (zero IDs, missing times, end before start) is left
// for the orphan processor to judge and count, as it would in a collector.
package input

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Formats reported in [Result.Format].
const (
	FormatOTLP     = "otlp-json"
	FormatOTLPLine = "otlp-json-lines"
	FormatJaeger   = "jaeger-json"
	FormatZipkinV2 = "zipkin-v2-json"
	FormatZipkinV1 = "zipkin-v1-json"
)

// Reasons a span was dropped while converting (keys of [Result.Malformed]).
const (
	MalformedNotObject   = "not_a_json_object"    // an element of a span list that is not an object
	MalformedUnparseable = "unparseable_span"     // the translator refused the span (bad ID, wrong field type)
	MalformedTraceID     = "invalid_trace_id"     // a trace ID that is not 1-32 hex digits
	MalformedSpanID      = "invalid_span_id"      // a span ID that is not 1-16 hex digits (or zero, in Zipkin)
	MalformedParentID    = "invalid_parent_id"    // a parent span ID that is not 1-16 hex digits
	MalformedResource    = "unparseable_resource" // OTLP: the resource or scope of these spans could not be read
)

// MaxSize is the largest input read, after decompression (1 GiB).
const MaxSize = 1 << 30

// Result is what was read from one input.
type Result struct {
	// Format is one of the Format* constants; for mixed JSON lines, the formats joined by "+".
	Format string
	// Traces holds the spans read, in pdata.
	Traces ptrace.Traces
	// Spans is the number of spans in Traces.
	Spans int
	// Malformed counts spans dropped while converting, by reason.
	Malformed map[string]int
	// Warnings are notes on recoverable problems (fixed IP addresses, unknown tag types, ...),
	// each at most once with a count.
	Warnings []string

	warn map[string]int
}

func newResult() *Result {
	return &Result{Traces: ptrace.NewTraces(), Malformed: map[string]int{}, warn: map[string]int{}}
}

func (r *Result) malformed(reason string, n int) {
	if n > 0 {
		r.Malformed[reason] += n
	}
}

func (r *Result) warnf(format string, args ...any) {
	r.warn[fmt.Sprintf(format, args...)]++
}

func (r *Result) finish() {
	r.Spans = r.Traces.SpanCount()
	keys := make([]string, 0, len(r.warn))
	for k := range r.warn {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if n := r.warn[k]; n > 1 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s (%d times)", k, n))
		} else {
			r.Warnings = append(r.Warnings, k)
		}
	}
}

// ReadAll reads an input (plain or gzip-compressed) completely, refusing more than MaxSize.
func ReadAll(r io.Reader) ([]byte, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		return readLimited(zr)
	}
	return readLimited(br)
}

func readLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxSize)
	}
	return b, nil
}

// ErrEmpty is returned for an input with nothing but white space.
var ErrEmpty = errors.New("the input is empty")

// ErrNoSpans is returned for an input in a known format that holds no span.
var ErrNoSpans = errors.New("no spans in the input")

// Parse detects the format of data and converts it. The error says what is wrong with the
// input as a whole; it never names the input (the caller does).
func Parse(data []byte) (*Result, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 byte order mark
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, ErrEmpty
	}
	first := bytes.TrimSpace(data)[0]
	if first != '{' && first != '[' {
		return nil, fmt.Errorf("not JSON: expected an OTLP JSON object, a Jaeger JSON trace or a Zipkin JSON array, found %s", describeStart(data))
	}
	res := newResult()
	dec := json.NewDecoder(bytes.NewReader(data))
	var formats []string
	docs := 0
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if docs == 0 {
				return nil, fmt.Errorf("not valid JSON: %w", jsonErrorAt(data, dec, err))
			}
			// A truncated last line of a JSON lines file (a file exporter still writing):
			// the documents before it are kept.
			res.warnf("JSON document %d is not valid JSON and was skipped: %v", docs+1, jsonErrorAt(data, dec, err))
			break
		}
		docs++
		f, err := res.document(raw, docs)
		if err != nil {
			if docs == 1 && !dec.More() {
				return nil, err
			}
			return nil, fmt.Errorf("JSON document %d: %w", docs, err)
		}
		if len(formats) == 0 || formats[len(formats)-1] != f {
			formats = append(formats, f)
		}
	}
	res.Format = strings.Join(dedup(formats), "+")
	if docs > 1 && res.Format == FormatOTLP {
		res.Format = FormatOTLPLine
	}
	res.finish()
	if res.Spans == 0 {
		n := 0
		for _, c := range res.Malformed {
			n += c
		}
		if n > 0 {
			return res, fmt.Errorf("%w: all %d spans are malformed (%s)", ErrNoSpans, n, FormatCounts(res.Malformed))
		}
		return res, fmt.Errorf("%w (read as %s)", ErrNoSpans, res.Format)
	}
	return res, nil
}

// document converts one top-level JSON value and returns its format.
func (r *Result) document(raw json.RawMessage, n int) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch raw[0] {
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return "", err
		}
		return r.array(raw, elems)
	case '{':
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(raw, &keys); err != nil {
			return "", err
		}
		return r.object(raw, keys)
	}
	return "", fmt.Errorf("expected a JSON object or array, found %s", describeStart(raw))
}

func (r *Result) object(raw json.RawMessage, keys map[string]json.RawMessage) (string, error) {
	switch {
	case has(keys, "resourceSpans", "resource_spans"):
		r.otlp(raw, keys)
		return FormatOTLP, nil
	case has(keys, "result"):
		// Jaeger query API v3 (/api/v3/traces): {"result": {"resourceSpans": [...]}}.
		var inner map[string]json.RawMessage
		if err := json.Unmarshal(keys["result"], &inner); err == nil && has(inner, "resourceSpans", "resource_spans") {
			r.otlp(keys["result"], inner)
			return FormatOTLP, nil
		}
	case has(keys, "data"):
		// Jaeger query API (/api/traces): {"data": [trace, ...], "errors": [...]}.
		var traces []json.RawMessage
		if err := json.Unmarshal(keys["data"], &traces); err != nil {
			return "", fmt.Errorf(`"data" is not an array of Jaeger traces: %w`, err)
		}
		if e := keys["errors"]; len(e) > 0 && string(e) != "null" && string(e) != "[]" {
			r.warnf("the Jaeger query answer carries errors: %s", truncate(string(e), 200))
		}
		for i, t := range traces {
			if err := r.jaegerTrace(t); err != nil {
				return "", fmt.Errorf("data[%d]: %w", i, err)
			}
		}
		return FormatJaeger, nil
	case has(keys, "spans") && has(keys, "traceID", "processes"):
		if err := r.jaegerTrace(raw); err != nil {
			return "", err
		}
		return FormatJaeger, nil
	}
	return "", fmt.Errorf("unknown JSON format: an object with keys %s (expected resourceSpans for OTLP, traceID/spans/processes for a Jaeger trace, or data for a Jaeger query answer)", keyList(keys))
}

func (r *Result) array(raw json.RawMessage, elems []json.RawMessage) (string, error) {
	kind := ""
	for _, e := range elems {
		var keys map[string]json.RawMessage
		if json.Unmarshal(e, &keys) != nil {
			continue
		}
		switch {
		case has(keys, "resourceSpans", "resource_spans"):
			kind = FormatOTLP
		case has(keys, "spans") && has(keys, "traceID", "processes"):
			kind = FormatJaeger
		case has(keys, "traceId") && has(keys, "id"):
			kind = FormatZipkinV2
			if zipkinV1(keys) {
				kind = FormatZipkinV1
			}
		}
		if kind != "" {
			break
		}
	}
	switch kind {
	case FormatOTLP:
		for _, e := range elems {
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(e, &keys); err != nil {
				return "", fmt.Errorf("an element of the array is not an OTLP JSON object: %w", err)
			}
			r.otlp(e, keys)
		}
	case FormatJaeger:
		for i, e := range elems {
			if err := r.jaegerTrace(e); err != nil {
				return "", fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case FormatZipkinV1:
		r.zipkinV1(raw, elems)
	case FormatZipkinV2, "":
		if kind == "" && len(elems) > 0 {
			return "", errors.New("unknown JSON format: an array whose elements are not Zipkin spans (traceId, id), Jaeger traces or OTLP documents")
		}
		r.zipkinV2(elems)
		kind = FormatZipkinV2
	}
	return kind, nil
}

// zipkinV1 tells a Zipkin v1 span (annotations with endpoints, binaryAnnotations) from a v2 one.
func zipkinV1(keys map[string]json.RawMessage) bool {
	if has(keys, "binaryAnnotations") {
		return true
	}
	if has(keys, "localEndpoint", "remoteEndpoint", "kind", "tags") {
		return false
	}
	var anns []map[string]json.RawMessage
	if json.Unmarshal(keys["annotations"], &anns) == nil {
		for _, a := range anns {
			if has(a, "endpoint") {
				return true
			}
		}
	}
	return false
}

func has(m map[string]json.RawMessage, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

func keyList(m map[string]json.RawMessage) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, fmt.Sprintf("%q", k))
	}
	sort.Strings(keys)
	if len(keys) > 8 {
		keys = append(keys[:8], "...")
	}
	if len(keys) == 0 {
		return "(none)"
	}
	return strings.Join(keys, ", ")
}

func dedup(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// FormatCounts renders counts by reason as "a=1, b=2", sorted by reason.
func FormatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func describeStart(data []byte) string {
	data = bytes.TrimSpace(data)
	if len(data) > 16 {
		data = data[:16]
	}
	return fmt.Sprintf("%q", data)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// jsonErrorAt adds the line and column of a decoding error.
func jsonErrorAt(data []byte, dec *json.Decoder, err error) error {
	off := dec.InputOffset()
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		off += se.Offset
	case errors.Is(err, io.ErrUnexpectedEOF):
		off = int64(len(bytes.TrimRight(data, " \t\r\n")))
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line := bytes.Count(data[:off], []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(data[:off], '\n')
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("line %d, column %d: unexpected end of input (truncated file?)", line, col)
	}
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}
