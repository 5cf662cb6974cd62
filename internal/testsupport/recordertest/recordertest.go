// Package recordertest holds what the tests of the orphan metrics recorder share, in
// internal/orphanmetrics and in the orphanmetrics exporter: traces built from a short description
// of their spans, the fan-out the processor would have annotated (FanOut), and the label format
// the tests compare series by.
package recordertest

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

var (
	// T0 is the time every Span's offsets count from.
	T0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// TraceA and TraceB are the two trace IDs of FanOut.
	TraceA = pcommon.TraceID([16]byte{0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0})
	TraceB = pcommon.TraceID([16]byte{0xb1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})

	// spanSeq numbers the spans Build writes: their span IDs are 0xc0 0 0 0 0 0 0 spanSeq.
	spanSeq atomic.Uint32
)

// Span describes one span of a test trace. Start and End are offsets from T0; ZeroStart leaves
// the start timestamp unset (0) instead.
type Span struct {
	Name      string
	TraceID   pcommon.TraceID
	Start     time.Duration // offset from T0
	End       time.Duration // offset from T0
	ZeroStart bool
	Kind      ptrace.SpanKind
	Attrs     map[string]any
}

// Resource is one resource of a test trace and its spans.
type Resource struct {
	Service any // string, or another type to test malformed service.name; nil: absent
	Spans   []Span
}

// Build writes the resources as ptrace.Traces, one ScopeSpans a resource, the spans in order.
// Every span gets a new span ID (0xc0 0 0 0 0 0 0 n, n counting up and wrapping at 256).
func Build(t testing.TB, resources ...Resource) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	for _, r := range resources {
		rs := td.ResourceSpans().AppendEmpty()
		if r.Service != nil {
			require.NoError(t, rs.Resource().Attributes().FromRaw(map[string]any{"service.name": r.Service}))
		}
		ss := rs.ScopeSpans().AppendEmpty()
		for _, s := range r.Spans {
			span := ss.Spans().AppendEmpty()
			span.SetName(s.Name)
			span.SetKind(s.Kind)
			span.SetTraceID(s.TraceID)
			span.SetSpanID(pcommon.SpanID([8]byte{0xc0, 0, 0, 0, 0, 0, 0, byte(spanSeq.Add(1))}))
			if !s.ZeroStart {
				span.SetStartTimestamp(pcommon.NewTimestampFromTime(T0.Add(s.Start)))
			}
			span.SetEndTimestamp(pcommon.NewTimestampFromTime(T0.Add(s.End)))
			require.NoError(t, span.Attributes().FromRaw(s.Attrs))
		}
	}
	return td
}

const sec = time.Second

// FanOut is one fan-out as the processor would annotate it: a cancelled root in "agent", a
// retried tool call that outlived the root and was finally dispatched after it was gone, two
// model calls (one live, one orphaned), and in "tools" an orphaned server span (an edge that
// dropped the cancellation), detached work and a span of an unknown root.
func FanOut() []Resource {
	return []Resource{
		{Service: "agent", Spans: []Span{
			{Name: "POST /ask", TraceID: TraceA, End: 10 * sec, Attrs: map[string]any{
				"orphanwatch.liveness": "live", "orphanwatch.root.end_reason": "cancelled",
			}},
			{Name: "call_tool", TraceID: TraceA, Start: 1 * sec, End: 3 * sec, Attrs: map[string]any{
				"orphanwatch.attempt": 1, "orphanwatch.liveness": "live", "orphanwatch.started_after_gone": false,
			}},
			{Name: "call_tool", TraceID: TraceA, Start: 8 * sec, End: 11500 * time.Millisecond, Attrs: map[string]any{
				"orphanwatch.attempt": 2, "orphanwatch.liveness": "orphaned",
				"orphanwatch.started_after_gone": false, "orphanwatch.after_gone": 1.5,
			}},
			{Name: "call_tool", TraceID: TraceA, Start: 13 * sec, End: 14 * sec, Attrs: map[string]any{
				"orphanwatch.attempt": 3, "orphanwatch.liveness": "orphaned",
				"orphanwatch.started_after_gone": true, "orphanwatch.after_gone": 4.0,
				"orphanwatch.run.outcome": "delivered_to_nobody", "orphanwatch.run.attempts": 3, "orphanwatch.run.result": "ok",
			}},
			{Name: "chat", TraceID: TraceA, Start: 9 * sec, End: 10250 * time.Millisecond, Attrs: map[string]any{
				"orphanwatch.attempt": 1, "orphanwatch.liveness": "orphaned",
				"orphanwatch.started_after_gone": false, "orphanwatch.after_gone": 0.25,
				"orphanwatch.spend.model": "gpt-4o", "orphanwatch.spend.input_tokens": 1000,
				"orphanwatch.spend.output_tokens": 250, "orphanwatch.spend.cost": 0.0125,
				"orphanwatch.run.outcome": "delivered_to_nobody",
				// The processor's copy wins over the raw gen_ai attributes.
				"gen_ai.usage.input_tokens": 999999, "gen_ai.response.model": "ignored",
			}},
			{Name: "chat", TraceID: TraceA, Start: 2 * sec, End: 4 * sec, Attrs: map[string]any{
				"orphanwatch.attempt": 1, "orphanwatch.liveness": "live", "orphanwatch.started_after_gone": false,
				"orphanwatch.spend.model": "gpt-4o", "orphanwatch.spend.input_tokens": 400,
				"orphanwatch.spend.output_tokens": 100, "orphanwatch.spend.cost": 0.005,
				"orphanwatch.run.outcome": "success",
			}},
		}},
		{Service: "tools", Spans: []Span{
			{Name: "GET /search", TraceID: TraceA, Start: 5 * sec, End: 12 * sec, Attrs: map[string]any{
				"orphanwatch.liveness": "orphaned", "orphanwatch.started_after_gone": false,
				"orphanwatch.after_gone": 2.0, "orphanwatch.caller.service": "agent",
			}},
			{Name: "process job", TraceID: TraceB, Start: 0, End: 60 * sec, Attrs: map[string]any{
				"orphanwatch.detached": true, "orphanwatch.attempt": 1,
			}},
			{Name: "q", TraceID: TraceB, Start: 0, End: 1 * sec, Attrs: map[string]any{
				"orphanwatch.liveness": "unknown", "orphanwatch.attempt": 1, "orphanwatch.run.outcome": "unknown_root",
			}},
			{Name: "plain", TraceID: TraceB, Start: 0, End: 1 * sec, Attrs: map[string]any{"http.method": "GET"}},
		}},
	}
}

// LabelString writes label pairs as `{name="value",...}`, sorted by name.
func LabelString(pairs []*dto.LabelPair) string {
	parts := make([]string, 0, len(pairs))
	for _, p := range pairs {
		parts = append(parts, fmt.Sprintf("%s=%q", p.GetName(), p.GetValue()))
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// FreeEndpoint returns a loopback host:port that was free a moment ago.
func FreeEndpoint(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
