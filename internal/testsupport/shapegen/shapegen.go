// Package shapegen draws the shapes of traces that are the reason for the rules of a run's end
// (DESIGN.md "When verdicts are decided", "Run outcomes"): loops that outlive their parent by
// seconds to minutes, keyed re-sends after a success, overlapping tries (hedges and parallel
// work), deliveries redelivered after minutes. A Builder makes the drawn spans in a test's own
// form: the verdict tests' records (internal/verdict), the exporter tests' spans
// (internal/orphanmetrics).
package shapegen

import (
	"fmt"

	"pgregory.net/rapid"
)

// Builder makes the spans of the drawn shapes, S being its handle to a span made. Times are in
// seconds after the builder's origin.
type Builder[S any] interface {
	// Root makes the SERVER root of a new trace: an HTTP request named name, answered status.
	Root(service, name string, start, end float64, status int) S
	// Internal makes an INTERNAL span under parent.
	Internal(parent S, service, name string, start, end float64) S
	// Call makes an HTTP CLIENT try (GET host/x) under parent, answered status (an error from
	// 400); when cancelled, a cancellation by its client with no answer.
	Call(parent S, service, host string, start, end float64, status int, cancelled bool) S
	// Key gives the try s idempotency key n of shape (one key a shape).
	Key(s S, shape, n int)
	// Producer makes a PRODUCER span under parent sending to dest.
	Producer(parent S, service, dest string, start, end float64) S
	// Delivery makes the CONSUMER root of a new trace processing message n of shape from dest,
	// linked to the producer; failed, its commit failed.
	Delivery(producer S, service, dest string, shape, n int, start, end float64, failed bool) S
}

// Draw draws one to three shapes into b.
func Draw[S any](rt *rapid.T, b Builder[S]) {
	for k := range rapid.IntRange(1, 3).Draw(rt, "shapes") {
		switch rapid.IntRange(0, 3).Draw(rt, fmt.Sprintf("shape%d", k)) {
		case 0:
			LoopOutlivingParent(rt, b)
		case 1:
			KeyedResends(rt, b, k)
		case 2:
			OverlappingTries(rt, b)
		case 3:
			Redeliveries(rt, b, k)
		}
	}
}

// ask makes the root of a request to ask: HTTP 499 (the caller left), 504 or 200.
func ask[S any](rt *rapid.T, b Builder[S], service string, end float64) S {
	status := rapid.SampledFrom([]int{499, 504, 200}).Draw(rt, "rootStatus")
	return b.Root(service, "POST /ask", 0, end, status)
}

// LoopOutlivingParent: a handler (the attempts' parent) ends with its root at G, while its
// retry loop goes on: tries 0.1 to 5 s long, backoffs of 0.5 s to two minutes, the last maybe
// succeeding; some end before G, one may be in flight at G, the rest after it (by seconds to
// minutes).
func LoopOutlivingParent[S any](rt *rapid.T, b Builder[S]) {
	g := float64(rapid.IntRange(5, 50).Draw(rt, "gone")) / 10
	h := b.Internal(ask(rt, b, "gateway", g), "worker", "handle", 0.01, g)
	t := float64(rapid.IntRange(0, 30).Draw(rt, "firstTry")) / 10
	n := rapid.IntRange(1, 5).Draw(rt, "tries")
	for k := range n {
		d := float64(rapid.IntRange(1, 50).Draw(rt, fmt.Sprintf("try%d", k))) / 10
		status := 503
		if k == n-1 && rapid.Bool().Draw(rt, "lastOK") {
			status = 200
		}
		b.Call(h, "worker", "search", t, t+d, status, false)
		t += d + float64(rapid.SampledFrom([]int{5, 20, 100, 300, 1200}).Draw(rt, fmt.Sprintf("backoff%d", k)))/10
	}
}

// KeyedResends: a client sends one idempotency key in two or three traces, the first try
// succeeding (it never got the answer) or failing, re-sent 10 s to three minutes later; a trace
// may try twice itself.
func KeyedResends[S any](rt *rapid.T, b Builder[S], shape int) {
	key := rapid.IntRange(1, 1<<20).Draw(rt, "key")
	t := 0.0
	for k := range rapid.IntRange(2, 3).Draw(rt, "sends") {
		r := b.Root("shop", "POST /checkout", t, t+2, 200)
		status := rapid.SampledFrom([]int{200, 503, 504}).Draw(rt, fmt.Sprintf("send%d", k))
		b.Key(b.Call(r, "shop", "payments", t+0.1, t+0.9, status, false), shape, key)
		if rapid.Bool().Draw(rt, fmt.Sprintf("again%d", k)) { // the trace's own retry, with the key
			status = rapid.SampledFrom([]int{200, 503}).Draw(rt, fmt.Sprintf("sendAgain%d", k))
			b.Key(b.Call(r, "shop", "payments", t+1.0, t+1.9, status, false), shape, key)
		}
		t += float64(rapid.SampledFrom([]int{10, 60, 180}).Draw(rt, fmt.Sprintf("resend%d", k)))
	}
}

// OverlappingTries: under a parent that awaits them, two tries of one call overlap: one
// succeeds and the other is cancelled by its client before it or within the grace after it
// (a hedge), or both succeed (parallel work).
func OverlappingTries[S any](rt *rapid.T, b Builder[S]) {
	p := b.Internal(ask(rt, b, "gateway", 10), "planner", "plan", 0.01, 9)
	a0 := float64(rapid.IntRange(1, 20).Draw(rt, "aStart")) / 10
	a1 := a0 + float64(rapid.IntRange(5, 30).Draw(rt, "aLen"))/10
	b0 := a0 + float64(rapid.IntRange(1, 10).Draw(rt, "bAfter"))/10
	win := b0 + float64(rapid.IntRange(1, 30).Draw(rt, "bLen"))/10
	switch rapid.IntRange(0, 2).Draw(rt, "race") {
	case 0: // the loser cancelled before the winner finished
		b.Call(p, "planner", "ranker", a0, min(a1, win-0.05), 0, true)
		b.Call(p, "planner", "ranker", b0, win, 200, false)
	case 1: // the loser cancelled within the grace after the winner
		b.Call(p, "planner", "ranker", a0, win-0.1, 200, false)
		b.Call(p, "planner", "ranker", b0, win+0.5, 0, true)
	default: // parallel work: both succeed
		b.Call(p, "planner", "ranker", a0, a1, 200, false)
		b.Call(p, "planner", "ranker", b0, win, 200, false)
	}
}

// Redeliveries: a message produced by a request is delivered in new traces (linked), its
// commit lost: again 30 s to four minutes later.
func Redeliveries[S any](rt *rapid.T, b Builder[S], shape int) {
	pub := b.Producer(b.Root("web", "POST /orders", 0, 0.5, 200), "web", "orders", 0.1, 0.12)
	msg := rapid.IntRange(1, 1<<20).Draw(rt, "message")
	t := 1.0
	for k := range rapid.IntRange(1, 3).Draw(rt, "deliveries") {
		failed := rapid.Bool().Draw(rt, fmt.Sprintf("failed%d", k))
		b.Delivery(pub, "fulfilment", "orders", shape, msg, t, t+1, failed)
		t += float64(rapid.SampledFrom([]int{30, 90, 240}).Draw(rt, fmt.Sprintf("redeliver%d", k)))
	}
}
