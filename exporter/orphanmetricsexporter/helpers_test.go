package orphanmetricsexporter

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

var (
	t0      = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	traceA  = pcommon.TraceID([16]byte{0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0})
	traceB  = pcommon.TraceID([16]byte{0xb1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	spanSeq byte
)

// testSpan describes one span of a test trace. Zero start/end offsets are
// kept as offsets from t0 unless zeroTimes is set.
type testSpan struct {
	name      string
	traceID   pcommon.TraceID
	start     time.Duration // offset from t0
	end       time.Duration // offset from t0
	zeroStart bool
	kind      ptrace.SpanKind
	attrs     map[string]any
}

type testResource struct {
	service any // string, or another type to test malformed service.name; nil: absent
	spans   []testSpan
}

func buildTraces(t testing.TB, resources ...testResource) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	for _, r := range resources {
		rs := td.ResourceSpans().AppendEmpty()
		if r.service != nil {
			require.NoError(t, rs.Resource().Attributes().FromRaw(map[string]any{"service.name": r.service}))
		}
		ss := rs.ScopeSpans().AppendEmpty()
		for _, s := range r.spans {
			span := ss.Spans().AppendEmpty()
			span.SetName(s.name)
			span.SetKind(s.kind)
			span.SetTraceID(s.traceID)
			spanSeq++
			span.SetSpanID(pcommon.SpanID([8]byte{0xc0, 0, 0, 0, 0, 0, 0, spanSeq}))
			if !s.zeroStart {
				span.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(s.start)))
			}
			span.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(s.end)))
			require.NoError(t, span.Attributes().FromRaw(s.attrs))
		}
	}
	return td
}

func labelString(pairs []*dto.LabelPair) string {
	parts := make([]string, 0, len(pairs))
	for _, p := range pairs {
		parts = append(parts, fmt.Sprintf("%s=%q", p.GetName(), p.GetValue()))
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// freeEndpoint returns a loopback host:port that was free a moment ago.
func freeEndpoint(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

const sec = time.Second

// scenario is one fan-out as the processor would annotate it: a cancelled
// root in "agent", a retried tool call that outlived the root and was
// finally dispatched after it was gone, two model calls (one live, one
// orphaned), and in "tools" an orphaned server span (an edge that dropped
// the cancellation), detached work and a span of an unknown root.
func scenario(t testing.TB) []testResource {
	return []testResource{
		{service: "agent", spans: []testSpan{
			{name: "POST /ask", traceID: traceA, end: 10 * sec, attrs: map[string]any{
				"orphanwatch.liveness": "live", "orphanwatch.root.end_reason": "cancelled",
			}},
			{name: "call_tool", traceID: traceA, start: 1 * sec, end: 3 * sec, attrs: map[string]any{
				"orphanwatch.attempt": 1, "orphanwatch.liveness": "live", "orphanwatch.started_after_gone": false,
			}},
			{name: "call_tool", traceID: traceA, start: 8 * sec, end: 11500 * time.Millisecond, attrs: map[string]any{
				"orphanwatch.attempt": 2, "orphanwatch.liveness": "orphaned",
				"orphanwatch.started_after_gone": false, "orphanwatch.after_gone": 1.5,
			}},
			{name: "call_tool", traceID: traceA, start: 13 * sec, end: 14 * sec, attrs: map[string]any{
				"orphanwatch.attempt": 3, "orphanwatch.liveness": "orphaned",
				"orphanwatch.started_after_gone": true, "orphanwatch.after_gone": 4.0,
				"orphanwatch.run.outcome": "delivered_to_nobody", "orphanwatch.run.attempts": 3, "orphanwatch.run.result": "ok",
			}},
			{name: "chat", traceID: traceA, start: 9 * sec, end: 10250 * time.Millisecond, attrs: map[string]any{
				"orphanwatch.attempt": 1, "orphanwatch.liveness": "orphaned",
				"orphanwatch.started_after_gone": false, "orphanwatch.after_gone": 0.25,
				"orphanwatch.spend.model": "gpt-4o", "orphanwatch.spend.input_tokens": 1000,
				"orphanwatch.spend.output_tokens": 250, "orphanwatch.spend.cost": 0.0125,
				"orphanwatch.run.outcome": "delivered_to_nobody",
				// The processor's copy wins over the raw gen_ai attributes.
				"gen_ai.usage.input_tokens": 999999, "gen_ai.response.model": "ignored",
			}},
			{name: "chat", traceID: traceA, start: 2 * sec, end: 4 * sec, attrs: map[string]any{
				"orphanwatch.attempt": 1, "orphanwatch.liveness": "live", "orphanwatch.started_after_gone": false,
				"orphanwatch.spend.model": "gpt-4o", "orphanwatch.spend.input_tokens": 400,
				"orphanwatch.spend.output_tokens": 100, "orphanwatch.spend.cost": 0.005,
				"orphanwatch.run.outcome": "success",
			}},
		}},
		{service: "tools", spans: []testSpan{
			{name: "GET /search", traceID: traceA, start: 5 * sec, end: 12 * sec, attrs: map[string]any{
				"orphanwatch.liveness": "orphaned", "orphanwatch.started_after_gone": false,
				"orphanwatch.after_gone": 2.0, "orphanwatch.caller.service": "agent",
			}},
			{name: "process job", traceID: traceB, start: 0, end: 60 * sec, attrs: map[string]any{
				"orphanwatch.detached": true, "orphanwatch.attempt": 1,
			}},
			{name: "q", traceID: traceB, start: 0, end: 1 * sec, attrs: map[string]any{
				"orphanwatch.liveness": "unknown", "orphanwatch.attempt": 1, "orphanwatch.run.outcome": "unknown_root",
			}},
			{name: "plain", traceID: traceB, start: 0, end: 1 * sec, attrs: map[string]any{"http.method": "GET"}},
		}},
	}
}
