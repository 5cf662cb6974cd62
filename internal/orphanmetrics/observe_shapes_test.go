package orphanmetrics_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"
	"pgregory.net/rapid"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// The generated shapes of the verdict tests (internal/verdict/arrival_test.go: loops that
// outlive their parent by seconds to minutes, keyed re-sends after a success, overlapping tries,
// deliveries redelivered after minutes), built as spans: observed as they arrive (in the order
// they end, any split), they give the series of the processor's one decision (annotate).

// shapeBuilder builds generated traces as spans.
type shapeBuilder struct{ b *scenarios.Builder }

// call adds an HTTP CLIENT try under parent: a cancellation (no response) when cancelled.
func (sb shapeBuilder) call(parent *scenarios.Span, service, host string, start, end float64, status int, cancelled bool) *scenarios.Span {
	s := parent.Child(service, "GET", scenarios.Client, start, end).
		Set("http.request.method", "GET").Set("server.address", host).Set("url.path", "/x")
	switch {
	case cancelled:
		s.Set("error.type", "context canceled").Error("context canceled")
	case status >= 400:
		s.Set("http.response.status_code", status).Error(fmt.Sprint(status))
	default:
		s.Set("http.response.status_code", status)
	}
	return s
}

// root adds a SERVER root: HTTP 499 (the caller left), 504 or 200.
func (sb shapeBuilder) root(rt *rapid.T, service string, end float64) *scenarios.Span {
	status := rapid.SampledFrom([]int{499, 504, 200}).Draw(rt, "rootStatus")
	s := sb.b.NewTrace().Span(service, "POST /ask", scenarios.Server, 0, end).
		Set("http.request.method", "POST").Set("http.response.status_code", status)
	if status >= 500 {
		s.Error(fmt.Sprint(status))
	}
	return s
}

func (sb shapeBuilder) loopOutlivingParent(rt *rapid.T) {
	g := float64(rapid.IntRange(5, 50).Draw(rt, "gone")) / 10
	r := sb.root(rt, "gateway", g)
	h := r.Child("worker", "handle", scenarios.Internal, 0.01, g)
	t := float64(rapid.IntRange(0, 30).Draw(rt, "firstTry")) / 10
	n := rapid.IntRange(1, 5).Draw(rt, "tries")
	for k := range n {
		d := float64(rapid.IntRange(1, 50).Draw(rt, fmt.Sprintf("try%d", k))) / 10
		status := 503
		if k == n-1 && rapid.Bool().Draw(rt, "lastOK") {
			status = 200
		}
		sb.call(h, "worker", "search", t, t+d, status, false)
		t += d + float64(rapid.SampledFrom([]int{5, 20, 100, 300, 1200}).Draw(rt, fmt.Sprintf("backoff%d", k)))/10
	}
}

func (sb shapeBuilder) keyedResends(rt *rapid.T, shape int) {
	key := fmt.Sprintf("order-%d-%d", shape, rapid.IntRange(1, 1<<20).Draw(rt, "key"))
	t := 0.0
	for k := range rapid.IntRange(2, 3).Draw(rt, "sends") {
		r := sb.b.NewTrace().Span("shop", "POST /checkout", scenarios.Server, t, t+2).
			Set("http.request.method", "POST").Set("http.response.status_code", 200)
		status := rapid.SampledFrom([]int{200, 503, 504}).Draw(rt, fmt.Sprintf("send%d", k))
		sb.call(r, "shop", "payments", t+0.1, t+0.9, status, false).Set("http.request.header.idempotency-key", key)
		if rapid.Bool().Draw(rt, fmt.Sprintf("again%d", k)) {
			status = rapid.SampledFrom([]int{200, 503}).Draw(rt, fmt.Sprintf("sendAgain%d", k))
			sb.call(r, "shop", "payments", t+1.0, t+1.9, status, false).Set("http.request.header.idempotency-key", key)
		}
		t += float64(rapid.SampledFrom([]int{10, 60, 180}).Draw(rt, fmt.Sprintf("resend%d", k)))
	}
}

func (sb shapeBuilder) overlappingTries(rt *rapid.T) {
	r := sb.root(rt, "gateway", 10)
	p := r.Child("planner", "plan", scenarios.Internal, 0.01, 9)
	a0 := float64(rapid.IntRange(1, 20).Draw(rt, "aStart")) / 10
	a1 := a0 + float64(rapid.IntRange(5, 30).Draw(rt, "aLen"))/10
	b0 := a0 + float64(rapid.IntRange(1, 10).Draw(rt, "bAfter"))/10
	win := b0 + float64(rapid.IntRange(1, 30).Draw(rt, "bLen"))/10
	switch rapid.IntRange(0, 2).Draw(rt, "race") {
	case 0:
		sb.call(p, "planner", "ranker", a0, min(a1, win-0.05), 0, true)
		sb.call(p, "planner", "ranker", b0, win, 200, false)
	case 1:
		sb.call(p, "planner", "ranker", a0, win-0.1, 200, false)
		sb.call(p, "planner", "ranker", b0, win+0.5, 0, true)
	default:
		sb.call(p, "planner", "ranker", a0, a1, 200, false)
		sb.call(p, "planner", "ranker", b0, win, 200, false)
	}
}

func (sb shapeBuilder) redeliveries(rt *rapid.T, shape int) {
	r := sb.b.NewTrace().Span("web", "POST /orders", scenarios.Server, 0, 0.5).
		Set("http.request.method", "POST").Set("http.response.status_code", 200)
	pub := r.Child("web", "send orders", scenarios.Producer, 0.1, 0.12).
		Set("messaging.operation.type", "send").Set("messaging.destination.name", "orders")
	msg := fmt.Sprintf("msg-%d-%d", shape, rapid.IntRange(1, 1<<20).Draw(rt, "message"))
	t := 1.0
	for k := range rapid.IntRange(1, 3).Draw(rt, "deliveries") {
		d := sb.b.NewTrace().Span("fulfilment", "process orders", scenarios.Consumer, t, t+1).
			Set("messaging.operation.type", "process").Set("messaging.destination.name", "orders").
			Set("messaging.message.id", msg).Link(pub)
		if rapid.Bool().Draw(rt, fmt.Sprintf("failed%d", k)) {
			d.Set("error.type", "CommitFailedException").Error("commit failed")
		}
		t += float64(rapid.SampledFrom([]int{30, 90, 240}).Draw(rt, fmt.Sprintf("redeliver%d", k)))
	}
}

// TestObserveEqualsAnnotateShapes: the generated shapes, observed as their spans end in any
// split (each batch received a second after its last span ended, the observer ticking on that
// clock: traces decided when their wait is over), give the processor's series of one decision.
func TestObserveEqualsAnnotateShapes(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		sb := shapeBuilder{scenarios.NewBuilder(90)}
		for k := range rapid.IntRange(1, 3).Draw(rt, "shapes") {
			switch rapid.IntRange(0, 3).Draw(rt, fmt.Sprintf("shape%d", k)) {
			case 0:
				sb.loopOutlivingParent(rt)
			case 1:
				sb.keyedResends(rt, k)
			case 2:
				sb.overlappingTries(rt)
			case 3:
				sb.redeliveries(rt, k)
			}
		}
		td := sb.b.Traces()
		want := annotatedSeries(rt, td)
		batches := arrivalSplit(rt, td, true)
		got := observedSeries(rt, batches, zap.NewNop(), false)
		assert.Equal(rt, want, got, "%d spans in %d batches", td.SpanCount(), len(batches))
	})
}
