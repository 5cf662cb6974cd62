package input

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
)

type found struct {
	res  pcommon.Resource
	span ptrace.Span
}

func spansByName(td ptrace.Traces) map[string][]found {
	out := map[string][]found{}
	tdwalk.SpansWithResource(td, func(r pcommon.Resource, sp ptrace.Span) {
		out[sp.Name()] = append(out[sp.Name()], found{r, sp})
	})
	return out
}

func one(t *testing.T, m map[string][]found, name string) found {
	t.Helper()
	require.Len(t, m[name], 1, name)
	return m[name][0]
}

const jaegerTrace = `{
  "_comment": "an extra key, as in the jaeger-ui fixture",
  "traceID": "a1b2c3d4e5f60718",
  "spans": [
    {"traceID": "a1b2c3d4e5f60718", "spanID": "0000000000000001", "operationName": "root", "flags": 1,
     "references": [], "startTime": 1700000000000000, "duration": 1000000,
     "tags": [{"key": "span.kind", "type": "string", "value": "server"},
              {"key": "http.status_code", "type": "int64", "value": 200}],
     "logs": [{"timestamp": 1700000000500000, "fields": [{"key": "event", "type": "string", "value": "exception"},
                                                        {"key": "exception.type", "type": "string", "value": "asyncio.CancelledError"}]}],
     "processID": "p1"},
    {"traceID": "a1b2c3d4e5f60718", "spanID": "0000000000000002", "operationName": "child",
     "references": [{"refType": "CHILD_OF", "traceID": "a1b2c3d4e5f60718", "spanID": "0000000000000001"}],
     "startTime": 1700000000100000, "duration": 200000,
     "tags": [{"key": "span.kind", "type": "string", "value": "client"},
              {"key": "error", "type": "string", "value": "true"},
              {"key": "http.response.status_code", "type": "string", "value": "503"},
              {"key": "gen_ai.usage.input_tokens", "type": "int64", "value": "1840"},
              {"key": "ratio", "type": "float64", "value": "0.5"},
              {"key": "ok", "type": "bool", "value": "false"},
              {"key": "blob", "type": "binary", "value": "AQI="},
              {"key": "weird", "type": "int64", "value": "not a number"},
              {"key": "proto", "vType": "INT64", "vInt64": "7"}],
     "processID": "p2"},
    {"traceID": "a1b2c3d4e5f60718", "spanID": "0000000000000003", "operationName": "follows",
     "references": [{"refType": "FOLLOWS_FROM", "traceID": "a1b2c3d4e5f60718", "spanID": "0000000000000001"}],
     "startTime": 1700000000900000, "duration": 5000000, "tags": [], "processID": "p1"},
    {"traceID": "a1b2c3d4e5f60718", "spanID": "0000000000000004", "operationName": "both",
     "references": [{"refType": "CHILD_OF", "traceID": "a1b2c3d4e5f60718", "spanID": "0000000000000002"},
                    {"refType": "FOLLOWS_FROM", "traceID": "a1b2c3d4e5f60718", "spanID": "0000000000000003"}],
     "startTime": 1700000000150000, "duration": 1000, "tags": [], "processID": "p2"},
    {"traceID": "a1b2c3d4e5f60718", "spanID": "0000000000000005", "operationName": "legacy parent",
     "parentSpanID": "0000000000000001", "startTime": 1700000000150000, "duration": 1000,
     "process": {"serviceName": "inline-svc", "tags": []}},
    {"traceID": "a1b2c3d4e5f60718", "spanID": "xyz", "operationName": "bad id", "startTime": 1, "duration": 1, "processID": "p1"},
    {"traceID": "a1b2c3d4e5f60718", "spanID": "0000000000000006", "operationName": "no start", "duration": 1, "processID": "nope"}
  ],
  "processes": {
    "p1": {"serviceName": "edge", "tags": [{"key": "hostname", "type": "string", "value": "h1"}]},
    "p2": {"serviceName": "agent", "tags": [{"key": "k8s.pod.name", "type": "string", "value": "pod-1"},
                                            {"key": "replicas", "type": "int64", "value": 3}]}
  },
  "warnings": null
}`

func TestJaeger(t *testing.T) {
	res, err := Parse([]byte(jaegerTrace))
	require.NoError(t, err)
	assert.Equal(t, FormatJaeger, res.Format)
	assert.Equal(t, map[string]int{MalformedSpanID: 1}, res.Malformed)
	assert.Equal(t, 6, res.Spans)
	m := spansByName(res.Traces)

	root := one(t, m, "root")
	wantTrace := pcommon.TraceID{0, 0, 0, 0, 0, 0, 0, 0, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x07, 0x18}
	assert.Equal(t, wantTrace, root.span.TraceID(), "64-bit trace IDs are left-padded")
	assert.Equal(t, pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, 1}, root.span.SpanID())
	assert.True(t, root.span.ParentSpanID().IsEmpty())
	assert.Equal(t, ptrace.SpanKindServer, root.span.Kind())
	assert.Equal(t, int64(1700000000000000000), int64(root.span.StartTimestamp()), "microseconds")
	assert.Equal(t, int64(1700000001000000000), int64(root.span.EndTimestamp()))
	svc, _ := root.res.Attributes().Get("service.name")
	assert.Equal(t, "edge", svc.Str())
	host, ok := root.res.Attributes().Get("host.name")
	require.True(t, ok, "process tags become resource attributes (hostname as host.name)")
	assert.Equal(t, "h1", host.Str())
	require.Equal(t, 1, root.span.Events().Len())
	assert.Equal(t, "exception", root.span.Events().At(0).Name())
	et, _ := root.span.Events().At(0).Attributes().Get("exception.type")
	assert.Equal(t, "asyncio.CancelledError", et.Str())

	child := one(t, m, "child")
	assert.Equal(t, root.span.SpanID(), child.span.ParentSpanID())
	assert.Equal(t, ptrace.SpanKindClient, child.span.Kind())
	assert.Equal(t, ptrace.StatusCodeError, child.span.Status().Code(), `error="true" typed as a string is the error flag`)
	_, hasErr := child.span.Attributes().Get("error")
	assert.False(t, hasErr, "consumed by the translator as the status")
	attrs := child.span.Attributes()
	get := func(k string) pcommon.Value {
		v, ok := attrs.Get(k)
		require.True(t, ok, k)
		return v
	}
	assert.Equal(t, int64(1840), get("gen_ai.usage.input_tokens").Int(), "int64 given as a string")
	assert.Equal(t, 0.5, get("ratio").Double())
	assert.False(t, get("ok").Bool())
	assert.Equal(t, []byte{1, 2}, get("blob").Bytes().AsRaw())
	assert.Equal(t, "not a number", get("weird").Str(), "kept as a string")
	assert.Equal(t, int64(7), get("proto").Int(), "protobuf JSON form of a tag")
	code, ok := attrs.Get("http.response.status_code")
	if !ok { // older translator feature gates write the v0 name
		code, ok = attrs.Get("http.status_code")
	}
	require.True(t, ok, "the translator's HTTP status attribute")
	assert.Equal(t, "503", code.AsString())
	pod, _ := child.res.Attributes().Get("k8s.pod.name")
	assert.Equal(t, "pod-1", pod.Str())
	rep, _ := child.res.Attributes().Get("replicas")
	assert.Equal(t, int64(3), rep.Int())

	follows := one(t, m, "follows")
	assert.True(t, follows.span.ParentSpanID().IsEmpty(), "FOLLOWS_FROM is not a parent")
	require.Equal(t, 1, follows.span.Links().Len(), "FOLLOWS_FROM is a span link")
	l := follows.span.Links().At(0)
	assert.Equal(t, root.span.SpanID(), l.SpanID())
	assert.Equal(t, wantTrace, l.TraceID())
	rt, _ := l.Attributes().Get("opentracing.ref_type")
	assert.Equal(t, "follows_from", rt.Str())
	_, marker := follows.span.Attributes().Get(noParentTag)
	assert.False(t, marker, "the marker tag does not leak")

	both := one(t, m, "both")
	assert.Equal(t, child.span.SpanID(), both.span.ParentSpanID(), "CHILD_OF wins")
	require.Equal(t, 1, both.span.Links().Len())
	assert.Equal(t, follows.span.SpanID(), both.span.Links().At(0).SpanID())

	legacy := one(t, m, "legacy parent")
	assert.Equal(t, root.span.SpanID(), legacy.span.ParentSpanID(), "parentSpanID of older exports")
	inl, _ := legacy.res.Attributes().Get("service.name")
	assert.Equal(t, "inline-svc", inl.Str(), "a span's inline process")

	noStart := one(t, m, "no start")
	assert.Zero(t, noStart.span.StartTimestamp(), "left for the processor to count")
	assert.Contains(t, strings.Join(res.Warnings, "\n"), `unknown processID "nope"`)
}

func TestJaegerWrappers(t *testing.T) {
	inner := `{"traceID":"01","spans":[{"traceID":"01","spanID":"01","operationName":"a","startTime":1,"duration":1,"processID":"p"}],"processes":{"p":{"serviceName":"s"}}}`
	for name, doc := range map[string]string{
		"query API":  `{"data":[` + inner + `,` + strings.ReplaceAll(inner, `"01"`, `"02"`) + `],"total":0,"limit":0,"offset":0,"errors":null}`,
		"array":      `[` + inner + `,` + strings.ReplaceAll(inner, `"01"`, `"02"`) + `]`,
		"JSON lines": inner + "\n" + strings.ReplaceAll(inner, `"01"`, `"02"`) + "\n",
	} {
		res, err := Parse([]byte(doc))
		require.NoError(t, err, name)
		assert.Equal(t, FormatJaeger, res.Format, name)
		assert.Equal(t, 2, res.Spans, name)
	}
}

func TestOTLP(t *testing.T) {
	doc := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"s"}}]},"scopeSpans":[{"scope":{"name":"sc"},"spans":[
	 {"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0000000000000001","name":"a","kind":"SPAN_KIND_CLIENT","flags":256,"startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}`
	res, err := Parse([]byte(doc))
	require.NoError(t, err)
	assert.Equal(t, FormatOTLP, res.Format)
	a := one(t, spansByName(res.Traces), "a")
	assert.Equal(t, ptrace.SpanKindClient, a.span.Kind(), "enum string kinds")

	// A bad span among good ones: the document is read span by span.
	bad := strings.Replace(doc, `"spans":[`, `"spans":[{"traceId":"zz","spanId":"0000000000000009","name":"bad"},`, 1)
	res, err = Parse([]byte(bad))
	require.NoError(t, err)
	assert.Equal(t, map[string]int{MalformedUnparseable: 1}, res.Malformed)
	m := spansByName(res.Traces)
	a = one(t, m, "a")
	sn, _ := a.res.Attributes().Get("service.name")
	assert.Equal(t, "s", sn.Str(), "resource kept")
	assert.Empty(t, m["bad"])

	// JSON lines from the file exporter, with a truncated last line.
	lines := doc + "\n" + strings.ReplaceAll(doc, `"name":"a"`, `"name":"b"`) + "\n" + doc[:40]
	res, err = Parse([]byte(lines))
	require.NoError(t, err)
	assert.Equal(t, FormatOTLPLine, res.Format)
	assert.Equal(t, 2, res.Spans)
	assert.Contains(t, strings.Join(res.Warnings, "\n"), "JSON document 3 is not valid JSON")

	// Jaeger query API v3 answers in OTLP JSON.
	res, err = Parse([]byte(`{"result":` + doc + `}`))
	require.NoError(t, err)
	assert.Equal(t, FormatOTLP, res.Format)
	assert.Equal(t, 1, res.Spans)
}

func TestZipkin(t *testing.T) {
	doc := `[
	 {"traceId":"0000000000000001","id":"0000000000000001","name":"root","kind":"SERVER","timestamp":1000000,"duration":100,"localEndpoint":{"serviceName":"a","ipv4":"10.0.0.04"}},
	 {"traceId":"0000000000000001","id":"0000000000000002","parentId":"0000000000000001","name":"send","kind":"CLIENT","timestamp":1000010,"localEndpoint":{"serviceName":"a"}},
	 {"traceId":"0000000000000001","id":"0000000000000002","parentId":"0000000000000001","name":"receive","kind":"SERVER","shared":true,"timestamp":1000050,"localEndpoint":{"serviceName":"b","ipv4":"10.0.0.1","port":80}},
	 {"traceId":"0000000000000001","id":"0000000000000002","parentId":"0000000000000001","name":"receive","kind":"SERVER","shared":true,"timestamp":1000070,"localEndpoint":{"serviceName":"b","ipv4":"10.0.0.2","port":80}},
	 {"traceId":"0000000000000001","id":"0000000000000003","parentId":"0000000000000002","name":"work@1","timestamp":1000055,"duration":5,"localEndpoint":{"serviceName":"b","ipv4":"10.0.0.1","port":80}},
	 {"traceId":"0000000000000001","id":"0000000000000004","parentId":"0000000000000002","name":"work@2","timestamp":1000075,"duration":5,"localEndpoint":{"serviceName":"b","ipv4":"10.0.0.2","port":80}},
	 {"traceId":"0000000000000001","id":"0000000000000005","parentId":"0000000000000001","name":"err","timestamp":1000020,"duration":5,"localEndpoint":{"serviceName":"a"},"tags":{"error":""}}
	]`
	res, err := Parse([]byte(doc))
	require.NoError(t, err)
	assert.Equal(t, FormatZipkinV2, res.Format)
	assert.Empty(t, res.Malformed)
	m := spansByName(res.Traces)
	root := one(t, m, "root")
	ip, _ := root.span.Attributes().Get("network.local.address")
	assert.Equal(t, "10.0.0.4", ip.Str(), "leading zeros in an IPv4 address")
	send := one(t, m, "send")
	assert.Equal(t, send.span.StartTimestamp(), send.span.EndTimestamp(), "no duration: ends when it starts")
	require.Len(t, m["receive"], 2)
	r1, r2 := m["receive"][0].span, m["receive"][1].span
	if r1.StartTimestamp() > r2.StartTimestamp() {
		r1, r2 = r2, r1
	}
	assert.NotEqual(t, send.span.SpanID(), r1.SpanID(), "several receipts of one shared span are split")
	assert.NotEqual(t, r1.SpanID(), r2.SpanID())
	assert.Equal(t, send.span.SpanID(), r1.ParentSpanID(), "a receipt is the child of the client half")
	assert.Equal(t, r1.SpanID(), one(t, m, "work@1").span.ParentSpanID(), "children follow their receipt")
	assert.Equal(t, r2.SpanID(), one(t, m, "work@2").span.ParentSpanID())
	assert.Equal(t, ptrace.StatusCodeError, one(t, m, "err").span.Status().Code(), "an empty error tag is an error")

	// A single shared server half is left as the zipkin receiver leaves it.
	pair := `[
	 {"traceId":"01","id":"02","name":"call","kind":"CLIENT","timestamp":10,"duration":5,"localEndpoint":{"serviceName":"a"}},
	 {"traceId":"01","id":"02","name":"call","kind":"SERVER","shared":true,"timestamp":11,"duration":3,"localEndpoint":{"serviceName":"b"}}]`
	res, err = Parse([]byte(pair))
	require.NoError(t, err)
	calls := spansByName(res.Traces)["call"]
	require.Len(t, calls, 2)
	assert.Equal(t, calls[0].span.SpanID(), calls[1].span.SpanID())
}

func TestZipkinV1(t *testing.T) {
	doc := `[{"traceId":"0000000000000001","id":"0000000000000001","name":"get","timestamp":1000000,"duration":100,
	 "annotations":[{"timestamp":1000000,"value":"sr","endpoint":{"serviceName":"svc","ipv4":"10.0.0.1"}},{"timestamp":1000100,"value":"ss","endpoint":{"serviceName":"svc","ipv4":"10.0.0.1"}}],
	 "binaryAnnotations":[{"key":"http.status_code","value":"200","endpoint":{"serviceName":"svc"}}]}]`
	res, err := Parse([]byte(doc))
	require.NoError(t, err)
	assert.Equal(t, FormatZipkinV1, res.Format)
	assert.Equal(t, 1, res.Spans)
}

func TestGzip(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(`[{"traceId":"01","id":"02","name":"x","timestamp":10,"duration":5}]`))
	require.NoError(t, zw.Close())
	data, err := ReadAll(&b)
	require.NoError(t, err)
	res, err := Parse(data)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Spans)
}

func TestParseErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "the input is empty",
		"\xef\xbb\xbf  ":                "the input is empty",
		"PK\x03\x04":                    "not JSON",
		`{"resourceSpans": [`:           "unexpected end of input",
		`{"a": 1}`:                      "unknown JSON format",
		`[{"a": 1}]`:                    "unknown JSON format",
		`{"data": {"x": 1}}`:            `"data" is not an array of Jaeger traces`,
		`[]`:                            "no spans in the input",
		`{"traceID": "1", "spans": []}`: "no spans in the input",
	} {
		_, err := Parse([]byte(in))
		if assert.Error(t, err, "%q", in) {
			assert.Contains(t, err.Error(), want, "%q", in)
		}
	}
}
