package truth

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// world builds spans with chosen times on one TracerProvider per service, all feeding a Book.
type world struct {
	t    *testing.T
	book *Book
	t0   time.Time
	tps  map[string]*sdktrace.TracerProvider
}

func newWorld(t *testing.T) *world {
	return &world{t: t, book: NewBook(), t0: time.Unix(1_767_225_600, 0), tps: map[string]*sdktrace.TracerProvider{}}
}

func (w *world) at(sec float64) time.Time { return w.t0.Add(time.Duration(sec * float64(time.Second))) }

func (w *world) tracer(svc string) trace.Tracer {
	tp, ok := w.tps[svc]
	if !ok {
		tp = sdktrace.NewTracerProvider(
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", svc))),
			sdktrace.WithSpanProcessor(w.book),
		)
		w.tps[svc] = tp
		w.t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	}
	return tp.Tracer("test")
}

// span starts and ends a span of service svc under parent ctx.
func (w *world) span(ctx context.Context, svc, name string, kind trace.SpanKind, from, to float64) (context.Context, trace.Span) {
	ctx, s := w.tracer(svc).Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(w.at(from)))
	s.End(trace.WithTimestamp(w.at(to)))
	return ctx, s
}

// open starts a span that the caller ends with end.
func (w *world) open(ctx context.Context, svc, name string, kind trace.SpanKind, from float64) (context.Context, trace.Span) {
	return w.tracer(svc).Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(w.at(from)))
}

func (w *world) end(s trace.Span, to float64) { s.End(trace.WithTimestamp(w.at(to))) }

func (w *world) attempt(s trace.Span, run string, n int, svc, op string, kind AttemptKind, res Result) {
	w.book.Attempted(Attempt{
		TraceID: s.SpanContext().TraceID(), SpanID: s.SpanContext().SpanID(), RunID: run, Number: n,
		Service: svc, Operation: op, Kind: kind, Result: res,
	})
}

func (w *world) model(s trace.Span, run, svc, model string, in, out int64, res Result) {
	w.book.Attempted(Attempt{
		TraceID: s.SpanContext().TraceID(), SpanID: s.SpanContext().SpanID(), RunID: run, Number: 1,
		Service: svc, Operation: "chat " + model, Kind: KindModel, Result: res,
		Model: model, InputTokens: in, OutputTokens: out,
	})
}

// s2 builds SCENARIOS.md S2 (blind) or, with aware, S3, plus a planner that finishes in time.
func s2(t *testing.T, aware bool) *world {
	w := newWorld(t)
	ctx := context.Background()
	rootCtx, root := w.open(ctx, "gateway", "POST /ask", trace.SpanKindServer, 0)
	w.book.RootStarted(Root{RequestID: 1, TraceID: root.SpanContext().TraceID(), SpanID: root.SpanContext().SpanID(), Service: "gateway"})

	// gateway -> planner: all in time.
	pcCtx, pc := w.open(rootCtx, "gateway", "POST /agent", trace.SpanKindClient, 0.01)
	psCtx, ps := w.open(pcCtx, "planner", "POST /agent", trace.SpanKindServer, 0.02)
	loopCtx, loop := w.open(psCtx, "planner", "retry search", trace.SpanKindInternal, 0.05)
	_, a := w.span(loopCtx, "planner", "POST /search", trace.SpanKindClient, 0.10, 0.30)
	w.attempt(a, "p-search", 1, "planner", "POST /search", KindCall, ResultOK)
	w.end(loop, 0.31)
	_, c := w.span(psCtx, "planner", "chat gpt-4o-mini", trace.SpanKindClient, 0.40, 2.40)
	w.model(c, "p-chat", "planner", "gpt-4o-mini", 1200, 300, ResultOK)
	w.end(ps, 2.45)
	w.end(pc, 2.50)
	w.attempt(pc, "g-planner", 1, "gateway", "POST /agent", KindCall, ResultOK)

	// gateway -> researcher: cancelled at 3.00 when the user leaves.
	rcCtx, rc := w.open(rootCtx, "gateway", "POST /agent", trace.SpanKindClient, 0.01)
	rsCtx, rs := w.open(rcCtx, "researcher", "POST /agent", trace.SpanKindServer, 0.02)
	loopCtx, loop = w.open(rsCtx, "researcher", "retry search", trace.SpanKindInternal, 0.05)
	times := [][2]float64{{0.10, 0.30}, {0.80, 1.00}, {2.00, 2.20}, {4.20, 4.40}}
	n := 4
	if aware {
		n = 3
	}
	for i := 0; i < n; i++ {
		_, a := w.span(loopCtx, "researcher", "POST /search", trace.SpanKindClient, times[i][0], times[i][1])
		res := ResultRetryable
		if i == 3 {
			res = ResultOK
		}
		w.attempt(a, "r-search", i+1, "researcher", "POST /search", KindCall, res)
	}
	if aware {
		w.book.Noticed(loop.SpanContext().SpanID())
		w.end(loop, 3.00)
		w.book.Noticed(rs.SpanContext().SpanID())
		w.end(rs, 3.01)
	} else {
		w.end(loop, 4.41)
		_, c := w.span(rsCtx, "researcher", "chat gpt-4o", trace.SpanKindClient, 4.45, 6.45)
		w.model(c, "r-chat", "researcher", "gpt-4o", 3000, 800, ResultOK)
		_, p := w.span(rsCtx, "researcher", "send agent-results", trace.SpanKindProducer, 6.50, 6.52)
		w.attempt(p, "r-publish", 1, "researcher", "send agent-results", KindPublish, ResultOK)
		w.end(rs, 6.55)
	}
	w.end(rc, 3.00)
	w.attempt(rc, "g-researcher", 1, "gateway", "POST /agent", KindCall, ResultCancelled)
	w.end(root, 3.00)
	w.book.RootEnded(root.SpanContext().TraceID(), 499, true)
	w.book.User(UserOutcome{RequestID: 1, Left: true})
	return w
}

func TestS2Blind(t *testing.T) {
	tr := s2(t, false).book.Compute(Options{})
	want := map[Outcome]int{Success: 3, Cancelled: 1, DeliveredToNobody: 3, RetryableFailure: 0, HardFailure: 0}
	for o, n := range want {
		if tr.Runs[o] != n {
			t.Errorf("runs[%s] = %d, want %d (all %v)", o, tr.Runs[o], n, tr.Runs)
		}
	}
	if tr.DeliveredToNobody[ResultOK] != 3 {
		t.Errorf("delivered_to_nobody ok = %d, want 3", tr.DeliveredToNobody[ResultOK])
	}
	if got := tr.RunsByService["researcher"]["POST /search"][DeliveredToNobody]; got != 1 {
		t.Errorf("researcher search delivered_to_nobody = %d, want 1", got)
	}
	if tr.RunAttempts != 10 || tr.Attempts.Total != 10 {
		t.Errorf("attempts = %d/%d, want 10", tr.RunAttempts, tr.Attempts.Total)
	}
	if tr.Attempts.StartedAfterGone != 3 || tr.Attempts.OutlivedRoot != 0 || tr.Attempts.Live != 7 {
		t.Errorf("attempt liveness = %+v", tr.Attempts)
	}
	o := tr.Orphaned
	if o.ModelCalls != 1 || o.InputTokens != 3000 || o.OutputTokens != 800 {
		t.Errorf("orphaned spend = %+v", o)
	}
	if math.Abs(o.CostUSD-0.0155) > 1e-12 {
		t.Errorf("orphaned cost = %v, want 0.0155", o.CostUSD)
	}
	if math.Abs(o.ModelSeconds-2.0) > 1e-6 || math.Abs(o.ModelSecondsAfterGone-2.0) > 1e-6 {
		t.Errorf("orphaned model seconds = %v / %v, want 2", o.ModelSeconds, o.ModelSecondsAfterGone)
	}
	if tr.Total.ModelCalls != 2 || tr.Total.InputTokens != 4200 {
		t.Errorf("total spend = %+v", tr.Total)
	}
	if tr.Unpropagated["gateway->researcher"] != 1 || len(tr.Unpropagated) != 1 {
		t.Errorf("unpropagated = %v", tr.Unpropagated)
	}
	if tr.OrphanedServerSpans["researcher"] != 1 {
		t.Errorf("orphaned server spans = %v", tr.OrphanedServerSpans)
	}
	if tr.Roots["cancelled"] != 1 || tr.Requests != 1 || tr.Abandoned != 1 {
		t.Errorf("roots %v requests %d abandoned %d", tr.Roots, tr.Requests, tr.Abandoned)
	}
	if tr.Incomplete != 0 {
		t.Errorf("incomplete = %d", tr.Incomplete)
	}
}

func TestS3Aware(t *testing.T) {
	tr := s2(t, true).book.Compute(Options{Tolerance: 250 * time.Millisecond})
	if tr.Runs[DeliveredToNobody] != 0 || tr.Runs[Cancelled] != 2 || tr.Runs[Success] != 3 {
		t.Errorf("runs = %v", tr.Runs)
	}
	if got := tr.RunsByService["researcher"]["POST /search"][Cancelled]; got != 1 {
		t.Errorf("researcher search cancelled = %d, want 1", got)
	}
	if tr.Orphaned.ModelCalls != 0 || tr.Orphaned.CostUSD != 0 || tr.Attempts.StartedAfterGone != 0 {
		t.Errorf("orphaned = %+v attempts %+v", tr.Orphaned, tr.Attempts)
	}
	// researcher's SERVER span ended 10 ms after the root: live within the tolerance.
	if len(tr.Unpropagated) != 0 || len(tr.OrphanedServerSpans) != 0 {
		t.Errorf("unpropagated %v orphaned server %v", tr.Unpropagated, tr.OrphanedServerSpans)
	}
	// Without tolerance the same span is 10 ms late.
	exact := s2(t, true).book.Compute(Options{})
	if exact.OrphanedServerSpans["researcher"] != 1 {
		t.Errorf("exact: orphaned server spans = %v", exact.OrphanedServerSpans)
	}
}

func TestToleranceOnlyAcrossServices(t *testing.T) {
	w := newWorld(t)
	rootCtx, root := w.open(context.Background(), "gateway", "POST /ask", trace.SpanKindServer, 0)
	w.book.RootStarted(Root{TraceID: root.SpanContext().TraceID(), SpanID: root.SpanContext().SpanID(), Service: "gateway"})
	// Same service, 100 ms late: after the gone time even with a tolerance.
	_, g := w.span(rootCtx, "gateway", "POST /agent", trace.SpanKindClient, 0.5, 1.1)
	w.attempt(g, "g", 1, "gateway", "POST /agent", KindCall, ResultOK)
	// Other service, 100 ms late: within the tolerance.
	_, o := w.span(rootCtx, "coder", "POST /search", trace.SpanKindClient, 0.5, 1.1)
	w.attempt(o, "o", 1, "coder", "POST /search", KindCall, ResultOK)
	w.end(root, 1.0)
	w.book.RootEnded(root.SpanContext().TraceID(), 200, false)
	tr := w.book.Compute(Options{Tolerance: 250 * time.Millisecond})
	if tr.Runs[DeliveredToNobody] != 1 || tr.Runs[Success] != 1 {
		t.Errorf("runs = %v", tr.Runs)
	}
	if tr.RunsByService["gateway"]["POST /agent"][DeliveredToNobody] != 1 {
		t.Errorf("by service = %v", tr.RunsByService)
	}
	if tr.Roots["completed"] != 1 {
		t.Errorf("roots = %v", tr.Roots)
	}
}

// TestS4Deadline: a deadline carried as data makes the gone time earlier than the root's end.
func TestS4Deadline(t *testing.T) {
	w := newWorld(t)
	rootCtx, root := w.open(context.Background(), "gateway", "POST /ask", trace.SpanKindServer, 0)
	w.book.RootStarted(Root{TraceID: root.SpanContext().TraceID(), SpanID: root.SpanContext().SpanID(), Service: "gateway", Deadline: w.at(2.0)})
	ccCtx, cc := w.open(rootCtx, "gateway", "POST /agent", trace.SpanKindClient, 0.01)
	csCtx, cs := w.open(ccCtx, "coder", "POST /agent", trace.SpanKindServer, 0.02)
	_, chat := w.span(csCtx, "coder", "chat gpt-4o-mini", trace.SpanKindClient, 2.5, 3.5)
	w.model(chat, "c-chat", "coder", "gpt-4o-mini", 500, 100, ResultOK)
	w.end(cs, 3.6)
	w.end(cc, 2.0)
	w.attempt(cc, "g-coder", 1, "gateway", "POST /agent", KindCall, ResultCancelled)
	w.end(root, 2.05)
	w.book.RootEnded(root.SpanContext().TraceID(), 504, true)
	tr := w.book.Compute(Options{Tolerance: 250 * time.Millisecond})
	if tr.Roots["deadline_exceeded"] != 1 {
		t.Errorf("roots = %v", tr.Roots)
	}
	if tr.Runs[DeliveredToNobody] != 1 || tr.Runs[Cancelled] != 1 {
		t.Errorf("runs = %v", tr.Runs)
	}
	if tr.Attempts.StartedAfterGone != 1 || tr.Orphaned.InputTokens != 500 || tr.Orphaned.OutputTokens != 100 {
		t.Errorf("attempts %+v orphaned %+v", tr.Attempts, tr.Orphaned)
	}
	if math.Abs(tr.Orphaned.CostUSD-(500*0.15+100*0.60)/1e6) > 1e-12 {
		t.Errorf("cost = %v", tr.Orphaned.CostUSD)
	}
}

// TestOutcomes: retries exhausted in time, hard failure, a cancelled loop after a success stays
// a success, and an attempt whose span never ended is incomplete.
func TestOutcomes(t *testing.T) {
	w := newWorld(t)
	rootCtx, root := w.open(context.Background(), "gateway", "POST /ask", trace.SpanKindServer, 0)
	w.book.RootStarted(Root{TraceID: root.SpanContext().TraceID(), SpanID: root.SpanContext().SpanID(), Service: "gateway"})
	sCtx, s := w.open(rootCtx, "researcher", "POST /agent", trace.SpanKindServer, 0.01)
	loopCtx, loop := w.open(sCtx, "researcher", "retry search", trace.SpanKindInternal, 0.02)
	for i := range 5 {
		_, a := w.span(loopCtx, "researcher", "POST /search", trace.SpanKindClient, float64(i)*0.5, float64(i)*0.5+0.2)
		w.attempt(a, "exhausted", i+1, "researcher", "POST /search", KindCall, ResultRetryable)
	}
	w.end(loop, 3)
	loop2Ctx, loop2 := w.open(sCtx, "researcher", "retry search", trace.SpanKindInternal, 3.05)
	_, h := w.span(loop2Ctx, "researcher", "POST /search", trace.SpanKindClient, 3.1, 3.2)
	w.attempt(h, "hard", 1, "researcher", "POST /search", KindCall, ResultHard)
	w.end(loop2, 3.25)
	// A failed attempt directly under the handler that later noticed the cancellation: the loop
	// around it stopped for the caller, so the run is cancelled.
	_, f := w.span(sCtx, "researcher", "POST /search", trace.SpanKindClient, 3.26, 3.28)
	w.attempt(f, "failed-noticed", 1, "researcher", "POST /search", KindCall, ResultRetryable)
	// The handler noticed a cancellation later, but this model call had succeeded.
	_, c := w.span(sCtx, "researcher", "chat gpt-4o", trace.SpanKindClient, 3.3, 3.5)
	w.model(c, "ok", "researcher", "gpt-4o", 10, 10, ResultOK)
	w.book.Noticed(s.SpanContext().SpanID())
	// Never ended.
	_, never := w.open(sCtx, "researcher", "POST /search", trace.SpanKindClient, 3.6)
	w.attempt(never, "never", 1, "researcher", "POST /search", KindCall, ResultOK)
	w.end(s, 4)
	w.end(root, 6)
	w.book.RootEnded(root.SpanContext().TraceID(), 200, false)
	tr := w.book.Compute(Options{})
	if tr.Runs[RetryableFailure] != 1 || tr.Runs[HardFailure] != 1 || tr.Runs[Success] != 1 || tr.Runs[Cancelled] != 1 {
		t.Errorf("runs = %v", tr.Runs)
	}
	if tr.Incomplete != 1 {
		t.Errorf("incomplete = %d, want 1", tr.Incomplete)
	}
	var buf bytes.Buffer
	if err := tr.WriteSummary(&buf); err != nil || !strings.Contains(buf.String(), "retryable_failure=1") {
		t.Errorf("summary: %v\n%s", err, buf.String())
	}
	if _, err := json.Marshal(tr); err != nil {
		t.Fatal(err)
	}
}

func TestUsers(t *testing.T) {
	b := NewBook()
	b.User(UserOutcome{RequestID: 1, Status: 200})
	b.User(UserOutcome{RequestID: 2, Left: true})
	b.User(UserOutcome{RequestID: 3, Status: 504})
	b.User(UserOutcome{RequestID: 4, Err: true})
	tr := b.Compute(Options{})
	if tr.Requests != 4 || tr.Answered != 2 || tr.Abandoned != 1 || tr.Failed != 1 || tr.AnswersByStatus["504"] != 1 {
		t.Errorf("%+v", tr)
	}
	for _, o := range Outcomes {
		if _, ok := tr.Runs[o]; !ok {
			t.Errorf("runs lacks %s", o)
		}
	}
}

func TestPrices(t *testing.T) {
	p := DefaultPrices()
	cases := []struct {
		model   string
		in, out int64
		want    float64
		ok      bool
	}{
		{"gpt-4o", 3000, 800, 0.0155, true},
		{"gpt-4o-2024-08-06", 3000, 800, 0.0155, true},
		{"gpt-4o-mini", 1_000_000, 1_000_000, 0.75, true},
		{"gpt-4o-mini-2024-07-18", 1000, 200, 0.00027, true},
		{"claude", 1000, 1000, 0, false},
	}
	for _, c := range cases {
		got, ok := p.Cost(c.model, c.in, c.out)
		if ok != c.ok || math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Cost(%s) = %v, %v; want %v, %v", c.model, got, ok, c.want, c.ok)
		}
	}
}

func TestUnixSeconds(t *testing.T) {
	d := time.Unix(1_767_225_602, 123_456_789)
	s := FormatUnixSeconds(d)
	if s != "1767225602.123456" {
		t.Fatalf("format = %q", s)
	}
	got, ok := ParseUnixSeconds(s)
	if !ok || got.Sub(d.Truncate(time.Microsecond)).Abs() > time.Microsecond {
		t.Fatalf("parse = %v %v", got, ok)
	}
	if s := FormatUnixSeconds(time.Unix(5, 7000)); s != "5.000007" {
		t.Errorf("format small = %q", s)
	}
	for _, bad := range []string{"", "x", "-1", "0", "1e30"} {
		if _, ok := ParseUnixSeconds(bad); ok {
			t.Errorf("ParseUnixSeconds(%q) ok", bad)
		}
	}
}

func TestResultOfHTTPStatus(t *testing.T) {
	for code, want := range map[int]Result{200: ResultOK, 204: ResultOK, 400: ResultHard, 404: ResultHard, 408: ResultRetryable,
		425: ResultRetryable, 429: ResultRetryable, 500: ResultRetryable, 501: ResultHard, 503: ResultRetryable, 499: ResultHard} {
		if got := ResultOfHTTPStatus(code); got != want {
			t.Errorf("ResultOfHTTPStatus(%d) = %s, want %s", code, got, want)
		}
	}
}
