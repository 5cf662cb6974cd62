package orphanmetrics

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/recordertest"
)

// TestOperationLabel: the operation label follows the semantic conventions' span-name rules.
func TestOperationLabel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  ptrace.SpanKind
		attrs map[string]any
		want  string
	}{
		{"GET", ptrace.SpanKindClient, map[string]any{"http.request.method": "GET", "url.template": "/search/{q}", "server.address": "tool"}, "GET /search/{q}"},
		{"GET", ptrace.SpanKindClient, map[string]any{"http.request.method": "GET", "server.address": "search-tool", "server.port": 8080}, "GET search-tool:8080"},
		{"GET", ptrace.SpanKindClient, map[string]any{"http.request.method": "GET", "server.address": "api.example.com", "server.port": 443, "url.full": "https://api.example.com/v1"}, "GET api.example.com"},
		{"GET", ptrace.SpanKindClient, map[string]any{"http.request.method": "GET", "server.address": "api.example.com", "server.port": 80, "url.scheme": "https"}, "GET api.example.com:80"},
		{"GET", ptrace.SpanKindClient, map[string]any{"http.request.method": "GET", "server.address": "::1", "server.port": 8080}, "GET [::1]:8080"},
		{"GET", ptrace.SpanKindClient, map[string]any{"http.method": "GET", "net.peer.name": "legacy", "net.peer.port": 9000}, "GET legacy:9000"},
		{"GET", ptrace.SpanKindClient, map[string]any{"http.method": "GET", "http.url": "http://user@old.example:8081/x?y"}, "GET old.example:8081"},
		{"GET", ptrace.SpanKindClient, map[string]any{"http.request.method": "GET", "url.full": "http://[2001:db8::1]:80/x"}, "GET 2001:db8::1"},
		{"POST", ptrace.SpanKindClient, map[string]any{"http.request.method": "POST"}, "POST"},
		{"POST /ask", ptrace.SpanKindServer, map[string]any{"http.request.method": "POST", "http.route": "/ask", "server.address": "gw"}, "POST /ask"},
		{"POST", ptrace.SpanKindServer, map[string]any{"http.request.method": "POST", "server.address": "gw"}, "POST"},
		{"x", ptrace.SpanKindClient, map[string]any{"rpc.system": "grpc", "rpc.service": "vec.Store", "rpc.method": "Query"}, "vec.Store/Query"},
		{"x", ptrace.SpanKindClient, map[string]any{"rpc.system": "grpc", "rpc.service": "vec.Store"}, "x"},
		{"chat", ptrace.SpanKindClient, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-2024-08-06", "server.address": "api.openai.com", "http.request.method": "POST"}, "chat gpt-4o"},
		{"chat", ptrace.SpanKindClient, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.model": "gpt-4o-2024-08-06"}, "chat gpt-4o-2024-08-06"},
		{"execute_tool", ptrace.SpanKindInternal, map[string]any{"gen_ai.operation.name": "execute_tool"}, "execute_tool"},
		{"execute_tool web_search", ptrace.SpanKindInternal, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "web_search", "gen_ai.request.model": "gpt-4o"}, "execute_tool web_search"},
		{"invoke_agent", ptrace.SpanKindInternal, map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage-agent"}, "invoke_agent triage-agent"},
		{"publish", ptrace.SpanKindProducer, map[string]any{"messaging.operation.name": "send", "messaging.operation.type": "publish", "messaging.destination.name": "jobs"}, "send jobs"},
		{"publish", ptrace.SpanKindProducer, map[string]any{"messaging.operation.type": "publish"}, "publish"},
		{"plain name", ptrace.SpanKindInternal, map[string]any{"http.request.method": 7}, "plain name"},
		{"", ptrace.SpanKindInternal, nil, "unknown"},
	} {
		r := newTestRecorder(t, nil)
		attrs := map[string]any{"orphanwatch.attempt": 1, "orphanwatch.liveness": "live", "orphanwatch.run.outcome": "success"}
		for k, v := range tc.attrs {
			attrs[k] = v
		}
		td := recordertest.Build(t, testResource{Service: "svc", Spans: []testSpan{{Name: tc.name, TraceID: traceA, End: sec, Attrs: attrs}}})
		td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SetKind(tc.kind)
		r.Record(td)
		assert.Equal(t, map[string]float64{`{operation="` + tc.want + `",outcome="success",service_name="svc"}`: 1},
			samples(t, r.Gatherer(), "orphanwatch_runs_total"), "%s %v", tc.name, tc.attrs)
		assert.Equal(t, map[string]float64{`{liveness="live",operation="` + tc.want + `",service_name="svc"}`: 1},
			samples(t, r.Gatherer(), "orphanwatch_attempts_total"), "%s %v", tc.name, tc.attrs)
	}
}

// TestOperationLabelBounded: operations built from attributes are limited like span names.
func TestOperationLabelBounded(t *testing.T) {
	r := newTestRecorder(t, func(c *Settings) { c.LabelLimits.PerLabel = map[string]int{labelOperation: 2} })
	var spans []testSpan
	for _, host := range []string{"a", "b", "c", "d", "a"} {
		spans = append(spans, testSpan{Name: "GET", TraceID: traceA, End: sec, Attrs: map[string]any{
			"orphanwatch.attempt": 1, "orphanwatch.liveness": "live", "http.request.method": "GET", "server.address": host,
		}})
	}
	r.Record(recordertest.Build(t, testResource{Service: "svc", Spans: spans}))
	assert.Equal(t, map[string]float64{
		`{liveness="live",operation="GET a",service_name="svc"}`: 2,
		`{liveness="live",operation="GET b",service_name="svc"}`: 1,
		`{liveness="live",operation="other",service_name="svc"}`: 2,
	}, samples(t, r.Gatherer(), "orphanwatch_attempts_total"))
	assert.Equal(t, 2.0, samples(t, r.Gatherer(), "orphanwatch_label_overflow_total")[`{label="operation"}`])
}

// TestCancellationReach: the reach and depth of abandoned roots become histograms by the
// root's service, with exemplars, in the configured buckets.
func TestCancellationReach(t *testing.T) {
	r := newTestRecorder(t, func(c *Settings) { c.HopBuckets = []float64{0, 1, 3} })
	r.Record(recordertest.Build(t, testResource{Service: "gateway", Spans: []testSpan{
		{Name: "POST /ask", TraceID: traceA, End: sec, Attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.root.end_reason": "cancelled",
			"orphanwatch.cancel.reach_hops": 0, "orphanwatch.orphaned.depth_hops": 2,
		}},
		{Name: "POST /ask", TraceID: traceB, End: sec, Attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.root.end_reason": "deadline_exceeded",
			"orphanwatch.cancel.reach_hops": 1, "orphanwatch.orphaned.depth_hops": 0,
		}},
		{Name: "POST /ask", TraceID: traceB, End: sec, Attrs: map[string]any{
			"orphanwatch.liveness": "live", "orphanwatch.root.end_reason": "completed",
		}},
	}}))
	g := r.Gatherer()
	for _, h := range []struct {
		metric        string
		sum           float64
		le0, le1, le3 float64 // the cumulative buckets
	}{
		{"orphanwatch_cancel_reach_hops", 1, 1, 2, 2},   // reach 0 and 1
		{"orphanwatch_orphaned_depth_hops", 2, 1, 1, 2}, // depth 2 and 0
	} {
		assert.Equal(t, map[string]float64{
			`_count{service_name="gateway"}`:         2,
			`_sum{service_name="gateway"}`:           h.sum,
			`_bucket{le="0",service_name="gateway"}`: h.le0,
			`_bucket{le="1",service_name="gateway"}`: h.le1,
			`_bucket{le="3",service_name="gateway"}`: h.le3,
		}, samples(t, g, h.metric), h.metric)
	}
	ex := exemplars(t, g, "orphanwatch_orphaned_depth_hops")[`{service_name="gateway"}`]
	assert.Contains(t, []string{traceA.String(), traceB.String()}, ex[exemplarTraceID])
}
