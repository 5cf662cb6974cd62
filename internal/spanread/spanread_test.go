package spanread

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/deadlinefmt"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

func testReader() *Reader {
	return New(Options{
		AttemptAttributes: []string{"retry.attempt"},
		IdempotencyKeys:   []string{"http.request.header.idempotency-key"},
		Deadlines: []DeadlineAttribute{
			{Attribute: "http.request.header.x-deadline", Format: deadlinefmt.FormatUnixSeconds},
			{Attribute: "rpc.grpc.request.metadata.grpc-timeout", Format: deadlinefmt.FormatGRPCTimeout},
		},
		InputTokens:    []string{"gen_ai.usage.input_tokens", "llm.token_count.prompt"},
		OutputTokens:   []string{"gen_ai.usage.output_tokens", "llm.token_count.completion"},
		Models:         []string{"gen_ai.response.model", "gen_ai.request.model"},
		CostAttributes: []string{"gen_ai.usage.cost"},
	})
}

// serviceSpan is a resource of service and its span 2 of trace 1, to be filled in.
func serviceSpan(service string) (pcommon.Resource, ptrace.Span) {
	res := pcommon.NewResource()
	res.Attributes().PutStr("service.name", service)
	sp := ptrace.NewSpan()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{2})
	return res, sp
}

func TestReadSemanticConventions(t *testing.T) {
	res, sp := serviceSpan("researcher")
	sp.SetParentSpanID(pcommon.SpanID{3})
	sp.SetKind(ptrace.SpanKindClient)
	sp.SetStartTimestamp(pcommon.Timestamp(1767225600e9))
	sp.SetEndTimestamp(pcommon.Timestamp(1767225601e9))
	a := sp.Attributes()
	a.PutStr("http.request.method", "GET")
	a.PutInt("http.response.status_code", 503)
	a.PutInt("http.request.resend_count", 2)
	a.PutEmptySlice("http.request.header.idempotency-key").AppendEmpty().SetStr("K-1")
	a.PutEmptySlice("http.request.header.x-deadline").AppendEmpty().SetStr("1767225603")
	a.PutStr("rpc.grpc.request.metadata.grpc-timeout", "2S") // earlier: wins
	a.PutStr("server.address", "search-tool")
	a.PutInt("server.port", 8080)
	a.PutStr("rpc.status_code", "UNAVAILABLE")
	a.PutStr("llm.token_count.prompt", "1200") // alias, as a string
	a.PutDouble("gen_ai.usage.output_tokens", 300)
	a.PutStr("gen_ai.request.model", "gpt-4o-mini")
	ev := sp.Events().AppendEmpty()
	ev.SetName("exception")
	ev.Attributes().PutStr("exception.type", "asyncio.CancelledError")

	var s verdict.Span
	var st Stats
	testReader().Read(res, sp, &s, &st)
	assert.Equal(t, "researcher", s.Service)
	assert.Equal(t, verdict.KindClient, s.Kind)
	assert.True(t, s.IsHTTP)
	assert.Equal(t, 503, s.HTTPStatus)
	assert.Equal(t, 14, s.GRPCStatus)
	assert.Equal(t, 2, s.ResendCount)
	assert.Equal(t, HashKey("K-1"), s.KeyHash)
	assert.NotZero(t, s.KeyHash)
	assert.Equal(t, int64(1767225602e9), s.Deadline)
	assert.Equal(t, verdict.NewTargetHash().Add("search-tool:8080"), s.Target)
	assert.Equal(t, int64(1200), s.InputTokens)
	assert.Equal(t, int64(300), s.OutputTokens)
	assert.Equal(t, "gpt-4o-mini", s.Model)
	assert.Equal(t, []string{"asyncio.CancelledError"}, s.ExceptionTypes)
	assert.Equal(t, Stats{}, st)
}

func TestReadCountsBadValues(t *testing.T) {
	sp := ptrace.NewSpan()
	a := sp.Attributes()
	a.PutEmptyMap("http.request.resend_count") // wrong type
	a.PutInt("gen_ai.usage.input_tokens", -5)  // negative
	a.PutBool("gen_ai.usage.output_tokens", true)
	a.PutStr("http.request.header.x-deadline", "tomorrow")
	a.PutDouble("gen_ai.usage.cost", -1)
	var s verdict.Span
	var st Stats
	testReader().Read(pcommon.NewResource(), sp, &s, &st)
	assert.Equal(t, -1, s.ResendCount)
	assert.Equal(t, int64(-1), s.InputTokens)
	assert.Equal(t, int64(-1), s.OutputTokens)
	assert.Zero(t, s.Deadline)
	assert.False(t, s.HasCost)
	assert.Equal(t, 1, st[BadTokenCount])
	assert.Equal(t, 1, st[BadDeadline])
	assert.Equal(t, 3, st[BadAttributeType]) // resend_count, output tokens, cost
}

// TestReadOnePassEqualsGet: the one-pass read (few names) and the Get per name read (more names
// than a view holds) find the same values, including the first of two attributes with one key.
func TestReadOnePassEqualsGet(t *testing.T) {
	few := testReader()
	o := few.o
	o.AttemptAttributes = []string{"retry.attempt"}
	for i := range maxSlots {
		o.AttemptAttributes = append(o.AttemptAttributes, "unused.attempt."+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	many := New(o)
	require.Nil(t, many.byLen, "the wide reader must take the Get path")
	require.NotNil(t, few.byLen)

	sp := ptrace.NewSpan()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{2})
	a := sp.Attributes()
	a.PutStr("http.request.method", "POST")
	a.PutStr("rpc.service", "vectors.Search")
	a.PutStr("rpc.method", "Query")
	a.PutInt("retry.attempt", 3)
	a.PutStr("gen_ai.usage.input_tokens", "12.5") // not integral: counted
	a.PutInt("llm.token_count.prompt", 40)
	a.PutStr("error.type", "context canceled")
	a.PutStr("rpc.status_code", "cancelled")
	// A second attribute with the key of the first (hostile input): Get finds the first.
	sl := a.PutEmptySlice("http.request.header.idempotency-key")
	sl.AppendEmpty().SetStr("K-2")
	var s1, s2 verdict.Span
	var st1, st2 Stats
	res := pcommon.NewResource()
	few.Read(res, sp, &s1, &st1)
	many.Read(res, sp, &s2, &st2)
	assert.Equal(t, s2, s1)
	assert.Equal(t, st2, st1)
	assert.Equal(t, 3, s1.Attempt)
	assert.Equal(t, int64(40), s1.InputTokens)
	assert.Equal(t, verdict.NewTargetHash().Add("vectors.Search/Query"), s1.Target)
	assert.Equal(t, 1, s1.GRPCStatus)
	assert.Equal(t, HashKey("K-2"), s1.KeyHash)
	assert.Equal(t, s1.KeyHash, few.KeyHash(sp), "KeyHash finds the key Read finds")

	// Two attributes with one key (hostile input): both read the first, as Get does.
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[
		{"traceId":"01000000000000000000000000000000","spanId":"0200000000000000","attributes":[
		{"key":"error.type","value":{"stringValue":"first"}},
		{"key":"error.type","value":{"stringValue":"second"}}]}]}]}]}`))
	require.NoError(t, err)
	sp = td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	require.Equal(t, 2, sp.Attributes().Len())
	few.Read(res, sp, &s1, &st1)
	many.Read(res, sp, &s2, &st2)
	assert.Equal(t, "first", s1.ErrorType)
	assert.Equal(t, s2, s1)

	// A span carrying every name read (more than a view keeps): the rest are looked up again.
	sp = ptrace.NewSpan()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{2})
	for i, name := range few.names {
		sp.Attributes().PutInt(name, int64(i+1))
	}
	require.Greater(t, len(few.names), maxFound)
	few.Read(res, sp, &s1, &st1)
	many.Read(res, sp, &s2, &st2)
	assert.Equal(t, s2, s1)
	assert.Equal(t, st2, st1)
}

// TestReadEmptyAttributeKey: an attribute with an empty key (found by the fuzzer) is ignored.
func TestReadEmptyAttributeKey(t *testing.T) {
	sp := ptrace.NewSpan()
	sp.Attributes().PutStr("", "x")
	sp.Attributes().PutInt("http.response.status_code", 503)
	var s verdict.Span
	var st Stats
	testReader().Read(pcommon.NewResource(), sp, &s, &st)
	assert.Equal(t, 503, s.HTTPStatus)
}

func TestReadNewerConventionsAndMessages(t *testing.T) {
	res, sp := serviceSpan("proxy")
	sp.SetStartTimestamp(pcommon.Timestamp(1767225600e9))
	sp.SetEndTimestamp(pcommon.Timestamp(1767225601e9))
	sp.Status().SetMessage("context canceled")
	a := sp.Attributes()
	a.PutStr("rpc.system", "grpc")
	a.PutStr("rpc.response.status_code", "UNAVAILABLE") // the current RPC conventions: a string
	a.PutStr("openinference.span.kind", "LLM")
	a.PutStr("gen_ai.tool.name", "web_search")
	ev := sp.Events().AppendEmpty()
	ev.SetName("exception")
	ev.Attributes().PutStr("exception.type", "*errors.errorString")
	ev.Attributes().PutStr("exception.message", "context canceled")

	var s verdict.Span
	var st Stats
	testReader().Read(res, sp, &s, &st)
	assert.Equal(t, 14, s.GRPCStatus)
	assert.Equal(t, "chat", s.Operation, "an OpenInference LLM span is a model operation")
	assert.True(t, s.ToolCall)
	assert.Equal(t, []string{"context canceled", "context canceled"}, s.Messages, "status message and exception message")
	assert.Equal(t, []string{"*errors.errorString"}, s.ExceptionTypes)

	sp.Attributes().PutStr("rpc.response.status_code", "-32601") // JSON-RPC: not a gRPC code
	sp.Attributes().Remove("openinference.span.kind")
	sp.Attributes().PutStr("llm.request.type", "embedding")
	st = Stats{}
	testReader().Read(res, sp, &s, &st)
	assert.Equal(t, -1, s.GRPCStatus)
	assert.Equal(t, Stats{}, st, "another RPC system's status code is not a malformed gRPC code")
	assert.Equal(t, "embeddings", s.Operation)
}

// TestReadArraysOfOneValue: every configured attribute reads an array of one value as that
// value (captured headers are string arrays: http.request.header.x-retry-attempt = ["3"]); an
// array of two values is not a value and is counted.
func TestReadArraysOfOneValue(t *testing.T) {
	sp := ptrace.NewSpan()
	sp.SetStartTimestamp(pcommon.Timestamp(1767225600e9))
	sp.SetEndTimestamp(pcommon.Timestamp(1767225601e9))
	a := sp.Attributes()
	one := func(k, v string) { a.PutEmptySlice(k).AppendEmpty().SetStr(v) }
	one("retry.attempt", "3")
	one("http.response.status_code", "503")
	one("rpc.grpc.status_code", "14")
	one("gen_ai.usage.input_tokens", "1200")
	a.PutEmptySlice("gen_ai.usage.output_tokens").AppendEmpty().SetInt(300)
	one("gen_ai.request.model", "gpt-4o")
	one("gen_ai.usage.cost", "0.25")
	one("rpc.grpc.request.metadata.grpc-timeout", "2S")
	var s verdict.Span
	var st Stats
	testReader().Read(pcommon.NewResource(), sp, &s, &st)
	assert.Equal(t, 3, s.Attempt)
	assert.Equal(t, 503, s.HTTPStatus)
	assert.Equal(t, 14, s.GRPCStatus)
	assert.Equal(t, int64(1200), s.InputTokens)
	assert.Equal(t, int64(300), s.OutputTokens)
	assert.Equal(t, "gpt-4o", s.Model)
	assert.True(t, s.HasCost)
	assert.InDelta(t, 0.25, s.Cost, 1e-12)
	assert.Equal(t, int64(1767225602e9), s.Deadline)
	assert.Equal(t, Stats{}, st)

	two := ptrace.NewSpan()
	sl := two.Attributes().PutEmptySlice("retry.attempt")
	sl.AppendEmpty().SetStr("2")
	sl.AppendEmpty().SetStr("3")
	s, st = verdict.Span{}, Stats{}
	testReader().Read(pcommon.NewResource(), two, &s, &st)
	assert.Zero(t, s.Attempt)
	assert.Equal(t, 1, st[BadAttributeType])
}

// TestTargetNamesTheEndpoint: the target of a call is its host and port with the path (url.path,
// else the path of url.full), the RPC method, or the tool name (DESIGN.md "Words": run): two
// endpoints of one host are two operations, one endpoint with another query is the same.
func TestTargetNamesTheEndpoint(t *testing.T) {
	read := func(attrs map[string]any) verdict.TargetHash {
		sp := ptrace.NewSpan()
		sp.SetTraceID(pcommon.TraceID{1})
		sp.SetSpanID(pcommon.SpanID{2})
		sp.SetKind(ptrace.SpanKindClient)
		require.NoError(t, sp.Attributes().FromRaw(attrs))
		var s verdict.Span
		var st Stats
		testReader().Read(pcommon.NewResource(), sp, &s, &st)
		return s.Target
	}
	host := verdict.NewTargetHash().Add("search-tool:8080")
	search := read(map[string]any{"server.address": "search-tool", "server.port": 8080, "url.full": "http://search-tool:8080/search?q=a"})
	assert.Equal(t, host.Add("/search"), search)
	assert.Equal(t, search, read(map[string]any{"server.address": "search-tool", "server.port": 8080, "url.full": "http://search-tool:8080/search?q=b#x"}))
	assert.NotEqual(t, search, read(map[string]any{"server.address": "search-tool", "server.port": 8080, "url.full": "http://search-tool:8080/fetch"}))
	assert.Equal(t, host.Add("/v1/x"), read(map[string]any{"server.address": "search-tool", "server.port": "8080", "url.path": "/v1/x", "url.full": "http://search-tool:8080/other"}))
	assert.Equal(t, host, read(map[string]any{"server.address": "search-tool", "server.port": 8080, "url.full": "http://search-tool:8080?q=1"}))
	assert.Equal(t, verdict.NewTargetHash().Add("mcp:80/mcp#web_search"),
		read(map[string]any{"server.address": "mcp", "server.port": 80, "url.path": "/mcp", "gen_ai.tool.name": "web_search"}))
	assert.Equal(t, verdict.NewTargetHash().Add("#fetch_page"), read(map[string]any{"gen_ai.tool.name": "fetch_page"}))
	assert.Equal(t, verdict.NewTargetHash().Add("vectors.Search/Query"), read(map[string]any{"rpc.service": "vectors.Search", "rpc.method": "Query", "server.address": "vectors"}))
	assert.NotEqual(t, read(map[string]any{"rpc.service": "vectors.Search", "rpc.method": "Query"}), read(map[string]any{"rpc.service": "vectors.Search", "rpc.method": "Upsert"}))

	for u, want := range map[string]string{"http://h/a/b?c": "/a/b", "https://h:1": "", "h/a": "", "http://h?x=/y": "", "grpc://h#/z": "", "http://u@h/p#f": "/p"} {
		assert.Equal(t, want, URLPath(u), u)
	}
}
