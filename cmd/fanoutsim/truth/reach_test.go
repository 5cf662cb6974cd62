package truth

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// stopped starts and ends a span that recorded a stop through its attributes.
func (w *world) stopped(ctx context.Context, svc, name string, kind trace.SpanKind, from, to float64, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	ctx, s := w.tracer(svc).Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(w.at(from)), trace.WithAttributes(attrs...))
	s.End(trace.WithTimestamp(w.at(to)))
	return ctx, s
}

// request opens a gateway root that the caller leaves at 3.0 (HTTP 499), or that passes its
// deadline at 3.0 when deadline is set.
func (w *world) request(id int, deadline bool) (context.Context, func()) {
	rootCtx, root := w.open(context.Background(), "gateway", "POST /ask", trace.SpanKindServer, 0)
	r := Root{RequestID: id, TraceID: root.SpanContext().TraceID(), SpanID: root.SpanContext().SpanID(), Service: "gateway"}
	if deadline {
		r.Deadline = w.at(3.0)
	}
	w.book.RootStarted(r)
	return rootCtx, func() {
		w.end(root, 3.0)
		if deadline {
			w.book.RootEnded(r.TraceID, 504, true)
		} else {
			w.book.RootEnded(r.TraceID, 499, true)
		}
	}
}

// searchVia opens, under rootCtx, the gateway's call to agent (at 0.01; the agent's server
// span at 0.02) and the agent's call to the search tool at `at`; the caller ends them.
func (w *world) searchVia(rootCtx context.Context, agent string, at float64) (cc, as trace.Span, tcCtx context.Context, tc trace.Span) {
	ccCtx, cc := w.open(rootCtx, "gateway", "POST /agent", trace.SpanKindClient, 0.01)
	asCtx, as := w.open(ccCtx, agent, "POST /agent", trace.SpanKindServer, 0.02)
	tcCtx, tc = w.open(asCtx, agent, "POST /search", trace.SpanKindClient, at)
	return cc, as, tcCtx, tc
}

func reachOf(t *testing.T, tr Truth, id int) RequestReach {
	t.Helper()
	for _, r := range tr.CancelReach {
		if r.RequestID == id {
			return r
		}
	}
	t.Fatalf("no reach for request %d in %+v", id, tr.CancelReach)
	return RequestReach{}
}

var (
	errCanceled = attribute.String("error.type", "context canceled")
	errDeadline = attribute.String("error.type", "context deadline exceeded")
	status499   = attribute.Int("http.response.status_code", 499)
)

// Blind: the news stays in the gateway (reach 0); the agent (hop 1) and the tool it calls
// after the caller left (hop 2) are orphaned: depth 2.
func TestReachBlind(t *testing.T) {
	w := newWorld(t)
	rootCtx, endRoot := w.request(1, false)
	cc, as, tcCtx, tc := w.searchVia(rootCtx, "researcher", 4.2)
	w.span(tcCtx, "search-tool", "POST /search", trace.SpanKindServer, 4.21, 4.4)
	w.end(tc, 4.41)
	w.attempt(tc, "r-search", 1, "researcher", "POST /search", KindCall, ResultOK)
	w.end(as, 5.0)
	cc.SetAttributes(errCanceled)
	w.end(cc, 3.0)
	w.attempt(cc, "g", 1, "gateway", "POST /agent", KindCall, ResultCancelled)
	endRoot()

	tr := w.book.Compute(Options{Tolerance: 250 * time.Millisecond})
	r := reachOf(t, tr, 1)
	want := RequestReach{RequestID: 1, TraceID: r.TraceID, RootService: "gateway", EndReason: "cancelled", DepthHops: 2, ReachHops: 0, OrphanedDepthHops: 2}
	if r != want {
		t.Errorf("reach = %+v, want %+v", r, want)
	}
	s := tr.CancelReachByService["gateway"]
	if s == nil || s.Count != 1 || s.ReachSum != 0 || s.OrphanedDepthSum != 2 || s.Reach["0"] != 1 || s.OrphanedDepth["2"] != 1 {
		t.Errorf("summary = %+v", s)
	}
}

// Aware: every hop records the stop at the gone time: reach = the full depth, nothing orphaned.
// The deadline variant reads error.type context deadline exceeded.
func TestReachAware(t *testing.T) {
	for _, deadline := range []bool{false, true} {
		w := newWorld(t)
		rootCtx, endRoot := w.request(7, deadline)
		errAttr := errCanceled
		if deadline {
			errAttr = errDeadline
		}
		cc, as, tcCtx, tc := w.searchVia(rootCtx, "researcher", 2.5)
		w.stopped(tcCtx, "search-tool", "POST /search", trace.SpanKindServer, 2.51, 3.02, status499, errAttr)
		tc.SetAttributes(errAttr)
		w.end(tc, 3.0)
		w.attempt(tc, "r-search", 1, "researcher", "POST /search", KindCall, ResultCancelled)
		as.SetAttributes(errAttr)
		w.end(as, 3.01)
		cc.SetAttributes(errAttr)
		w.end(cc, 3.0)
		w.attempt(cc, "g", 1, "gateway", "POST /agent", KindCall, ResultCancelled)
		endRoot()

		tr := w.book.Compute(Options{})
		r := reachOf(t, tr, 7)
		wantReason := "cancelled"
		if deadline {
			wantReason = "deadline_exceeded"
		}
		if r.ReachHops != 2 || r.OrphanedDepthHops != 0 || r.DepthHops != 2 || r.EndReason != wantReason {
			t.Errorf("deadline=%v: reach = %+v (exact comparison: the stopped spans 10-20 ms late are not orphaned)", deadline, r)
		}
	}
}

// A run at a hop whose outcome is cancelled counts even when no span there recorded a stop.
func TestReachThroughCancelledRun(t *testing.T) {
	w := newWorld(t)
	rootCtx, endRoot := w.request(2, false)
	ccCtx, cc := w.open(rootCtx, "gateway", "POST /agent", trace.SpanKindClient, 0.01)
	asCtx, as := w.open(ccCtx, "coder", "POST /agent", trace.SpanKindServer, 0.02)
	_, a := w.span(asCtx, "coder", "POST /search", trace.SpanKindClient, 2.9, 3.0)
	w.attempt(a, "c-search", 1, "coder", "POST /search", KindCall, ResultCancelled)
	w.end(as, 3.05)
	w.end(cc, 3.0)
	w.attempt(cc, "g", 1, "gateway", "POST /agent", KindCall, ResultCancelled)
	endRoot()
	r := reachOf(t, w.book.Compute(Options{Tolerance: 250 * time.Millisecond}), 2)
	if r.ReachHops != 1 || r.OrphanedDepthHops != 0 || r.DepthHops != 1 {
		t.Errorf("reach = %+v", r)
	}
}

// A stop recorded long after the gone time (beyond the grace) is the work's own timeout, not
// noticing: no reach, and the span is orphaned. Within the tolerance a span of another service
// is not orphaned; a span of the root's own service 1 ms late is, at depth 0.
func TestReachGraceAndTolerance(t *testing.T) {
	w := newWorld(t)
	rootCtx, endRoot := w.request(3, false)
	cc, as, tcCtx, tc := w.searchVia(rootCtx, "planner", 1.0)
	w.stopped(tcCtx, "search-tool", "POST /search", trace.SpanKindServer, 1.01, 4.5, errDeadline)
	w.end(tc, 4.51)
	w.attempt(tc, "p-search", 1, "planner", "POST /search", KindCall, ResultRetryable)
	w.end(as, 3.1) // 100 ms late, other service: within 250 ms
	w.end(cc, 3.001)
	w.attempt(cc, "g", 1, "gateway", "POST /agent", KindCall, ResultOK)
	endRoot()
	tr := w.book.Compute(Options{Tolerance: 250 * time.Millisecond})
	r := reachOf(t, tr, 3)
	if r.ReachHops != 0 || r.OrphanedDepthHops != 2 {
		t.Errorf("reach = %+v", r)
	}
	// With a grace of 2 s the late stop is noticing; the planner's CLIENT span (hop 1, 1.51 s
	// late, no stop) stays orphaned.
	tr = w.book.Compute(Options{Tolerance: 250 * time.Millisecond, Grace: 2 * time.Second})
	r = reachOf(t, tr, 3)
	if r.ReachHops != 2 || r.OrphanedDepthHops != 1 {
		t.Errorf("grace 2s: reach = %+v", r)
	}
}

// Hops: a SERVER span under a parent of its own service is no hop; a CONSUMER span entering
// another service is. Completed roots get no reach.
func TestReachHopsAndCompletedRoots(t *testing.T) {
	w := newWorld(t)
	rootCtx, endRoot := w.request(4, false)
	inner, _ := w.span(rootCtx, "gateway", "internal dispatch", trace.SpanKindServer, 0.01, 0.02) // same service: hop 0
	pCtx, _ := w.span(inner, "gateway", "send jobs", trace.SpanKindProducer, 0.03, 0.04)
	cCtx, _ := w.span(pCtx, "worker", "process jobs", trace.SpanKindConsumer, 0.05, 3.5) // hop 1, orphaned
	w.span(cCtx, "worker", "chat", trace.SpanKindClient, 0.06, 0.07)
	endRoot()

	done, root := w.open(context.Background(), "gateway", "POST /ask", trace.SpanKindServer, 0)
	w.book.RootStarted(Root{RequestID: 5, TraceID: root.SpanContext().TraceID(), SpanID: root.SpanContext().SpanID(), Service: "gateway"})
	w.span(done, "coder", "POST /agent", trace.SpanKindServer, 0.1, 0.2)
	w.end(root, 1)
	w.book.RootEnded(root.SpanContext().TraceID(), 200, false)

	tr := w.book.Compute(Options{Tolerance: 250 * time.Millisecond})
	if len(tr.CancelReach) != 1 {
		t.Fatalf("cancel reach = %+v, want only request 4", tr.CancelReach)
	}
	r := reachOf(t, tr, 4)
	if r.DepthHops != 1 || r.OrphanedDepthHops != 1 || r.ReachHops != 0 {
		t.Errorf("reach = %+v", r)
	}
}

// The per-service summary adds up like a Prometheus histogram, and the JSON names are stable.
func TestReachSummaryBucketsAndJSON(t *testing.T) {
	s := ReachSummary{Count: 4, ReachSum: 5, OrphanedDepthSum: 2,
		Reach: map[string]int{"0": 1, "2": 2, "1": 1}, OrphanedDepth: map[string]int{"0": 3, "2": 1}}
	for le, want := range map[float64]int{0: 1, 1: 2, 2: 4, 10: 4} {
		if got := s.ReachBucket(le); got != want {
			t.Errorf("reach bucket le=%v: %d, want %d", le, got, want)
		}
	}
	if s.OrphanedDepthBucket(1) != 3 || s.OrphanedDepthBucket(2) != 4 {
		t.Errorf("orphaned buckets %d %d", s.OrphanedDepthBucket(1), s.OrphanedDepthBucket(2))
	}
	b, _ := json.Marshal(Truth{CancelReach: []RequestReach{{RequestID: 1}}, CancelReachByService: map[string]*ReachSummary{"gateway": &s}})
	for _, key := range []string{`"cancel_reach":[{"request_id":1,"trace_id":"","root_service":"","end_reason":"","depth_hops":0,"reach_hops":0,"orphaned_depth_hops":0}]`,
		`"cancel_reach_by_service":{"gateway":{"count":4,"reach_sum":5,"orphaned_depth_sum":2,"reach_hops":{"0":1,"1":1,"2":2},"orphaned_depth_hops":{"0":3,"2":1}}}`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s:\n%s", key, b)
		}
	}
}
