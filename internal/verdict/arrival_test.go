package verdict_test

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Never split by the moment of a decision (DESIGN.md "When verdicts are decided", "Run
// outcomes"; issue 27, item 2): spans replayed as a collector receives them — each arriving
// after it ends (an exporter's delay, each service's spans in the order they end), held a
// while per trace from the first arrival as the processor holds them, released at that moment
// on the collector's clock, with sweeps now and then — give, once the verdicts carried for them
// are applied, exactly the verdicts of one decision after the last span (every trace released
// whole at once, then Finish). Over every scenario and over generated shapes that are the
// reason for the rules of a run's end: loops that outlive their parent by seconds to minutes,
// keyed re-sends after a success, overlapping tries (hedges and parallel work), deliveries
// redelivered after minutes.

// effective gathers every span's verdict from decisions and what they carried.
type effective struct {
	spans []verdict.Span
	out   []verdict.Verdict
}

func newEffective(spans []verdict.Span) *effective {
	return &effective{spans: spans, out: make([]verdict.Verdict, len(spans))}
}

// find is the index of the span a carried verdict names: its Extra (the index) where the record
// was kept, else its identity.
func (e *effective) find(cv *verdict.Carried) int {
	if i, ok := cv.Span.Extra.(int); ok {
		return i
	}
	for i := range e.spans {
		s := &e.spans[i]
		if s.SpanID == cv.Span.SpanID && s.Kind == cv.Span.Kind && s.TraceID == cv.Span.TraceID && s.Start == cv.Span.Start && s.End == cv.Span.End {
			return i
		}
	}
	return -1
}

func (e *effective) carried(t require.TestingT, cs []verdict.Carried) {
	for k := range cs {
		cv := &cs[k]
		i := e.find(cv)
		require.GreaterOrEqual(t, i, 0, "a verdict carried for a span not released: %+v", cv.Span)
		switch cv.Part {
		case verdict.PartAll:
			e.out[i] = cv.Verdict
		case verdict.PartRun:
			require.Empty(t, e.out[i].Outcome, "a second outcome for the run of span %d", i)
			e.out[i].Outcome, e.out[i].RunAttempts, e.out[i].RunOK = cv.Verdict.Outcome, cv.Verdict.RunAttempts, cv.Verdict.RunOK
		case verdict.PartEdge:
			e.out[i].CallerService = cv.Verdict.CallerService
		}
	}
}

func (e *effective) decided(t require.TestingT, idx []int, d verdict.Decision) {
	e.carried(t, d.Carried)
	if !d.Deferred {
		for k, i := range idx {
			if !d.Verdicts[k].Provisional {
				e.out[i] = d.Verdicts[k]
			}
		}
	}
	for _, r := range d.Reach { // the processor holds abandoned roots for this
		for i := range e.spans {
			if e.spans[i].TraceID == e.spans[idx[0]].TraceID && e.spans[i].SpanID == r.SpanID && e.spans[i].ParentID.IsZero() && e.out[i].HasReach {
				e.out[i].ReachHops = max(e.out[i].ReachHops, r.ReachHops)
				e.out[i].OrphanedDepthHops = max(e.out[i].OrphanedDepthHops, r.OrphanedDepthHops)
			}
		}
	}
}

// wholeAfterLast is one decision after the last span: every span observed, every trace released
// whole (traces in the order their first span ended), then Finish. The releases' time is the
// first end, so that no rule of time closes a run before Finish: every run is decided with all
// its attempts present, keyed runs and deliveries across traces included.
func wholeAfterLast(t require.TestingT, spans []verdict.Span) []verdict.Verdict {
	// The one decision runs on the first span's clock, so that every run stays open until
	// Finish: later spans are not in its future (end_in_future), whatever their end.
	cfg := verdict.DefaultConfig()
	cfg.Prices = map[string]verdict.Price{
		"gpt-4o":      {InputPerMillion: 2.50, OutputPerMillion: 10.00},
		"gpt-4o-mini": {InputPerMillion: 0.15, OutputPerMillion: 0.60},
	}
	cfg.FutureTolerance = 100 * 365 * 24 * time.Hour
	c, err := verdict.New(cfg)
	require.NoError(t, err)
	c.Observe(spans)
	e := newEffective(spans)
	order := indexes(len(spans))
	sortByEnd(spans, order, false)
	now := spans[order[0]].End
	for _, g := range byTrace(spans, order) {
		e.decided(t, g, c.Release(nil, pick(spans, g), now, func(k int) any { return g[k] }))
	}
	carried, _ := c.Finish(now)
	e.carried(t, carried)
	return e.out
}

// arrival is a replay's schedule: when each span arrives, and the moments of the sweeps.
type arrival struct {
	at     []int64 // by span index, unix ns
	hold   int64   // how long a trace's spans are held after the first of a batch arrived
	sweeps []int64
}

// drawArrival draws a schedule: each service's exporter hands its spans over in the order they
// end, each some 0 to 5 s after it ended (never before the previous one of its service), and
// the collector holds a trace's spans 0.5 to 5 s from the first arrival of a batch (well within
// ChainWait, decision_wait, as the processor's waits are); up to eight sweeps, each up to 400 s
// after a span arrived (past decision_wait, past run_timeout).
func drawArrival(rt *rapid.T, spans []verdict.Span) arrival {
	a := arrival{at: make([]int64, len(spans))}
	order := rapid.Permutation(indexes(len(spans))).Draw(rt, "ties")
	sortByEnd(spans, order, false)
	last := map[string]int64{}
	for k, i := range order {
		d := int64(rapid.IntRange(0, 50).Draw(rt, fmt.Sprintf("delay%d", k))) * int64(100*time.Millisecond)
		at := max(spans[i].End+d, last[spans[i].Service])
		last[spans[i].Service] = at
		a.at[i] = at
	}
	a.hold = int64(rapid.SampledFrom([]time.Duration{500 * time.Millisecond, 2 * time.Second, 5 * time.Second}).Draw(rt, "hold"))
	for k := range rapid.IntRange(0, 8).Draw(rt, "sweeps") {
		i := rapid.IntRange(0, len(spans)-1).Draw(rt, fmt.Sprintf("sweepAfter%d", k))
		a.sweeps = append(a.sweeps, a.at[i]+int64(rapid.IntRange(0, 400).Draw(rt, fmt.Sprintf("sweep%d", k)))*int64(time.Second))
	}
	return a
}

// replayArrival runs the schedule: spans observed as they arrive; a trace's spans that arrive
// within hold of the first of their batch are released together at that moment; sweeps at
// theirs; Finish after everything.
func replayArrival(t require.TestingT, spans []verdict.Span, a arrival) []verdict.Verdict {
	c := newCorrelator(t)
	e := newEffective(spans)
	type event struct {
		at    int64
		kind  int // 0 arrive, 1 release, 2 sweep (in this order at one moment)
		spans []int
	}
	var evs []event
	order := indexes(len(spans))
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(a.at[x], a.at[y]) })
	type batch struct {
		due   int64
		spans []int
	}
	open := map[verdict.TraceID]*batch{}
	var batches []*batch
	for _, i := range order {
		evs = append(evs, event{at: a.at[i], kind: 0, spans: []int{i}})
		b := open[spans[i].TraceID]
		if b == nil || a.at[i] > b.due {
			b = &batch{due: a.at[i] + a.hold}
			open[spans[i].TraceID] = b
			batches = append(batches, b)
		}
		b.spans = append(b.spans, i)
	}
	for _, b := range batches {
		evs = append(evs, event{at: b.due, kind: 1, spans: b.spans})
	}
	for _, s := range a.sweeps {
		evs = append(evs, event{at: s, kind: 2})
	}
	slices.SortStableFunc(evs, func(x, y event) int { return cmp.Or(cmp.Compare(x.at, y.at), cmp.Compare(x.kind, y.kind)) })
	var now int64
	for _, ev := range evs {
		now = max(now, ev.at)
		switch ev.kind {
		case 0:
			c.Observe(pick(spans, ev.spans))
		case 1:
			g := ev.spans
			e.decided(t, g, c.Release(nil, pick(spans, g), now, func(k int) any { return g[k] }))
		case 2:
			carried, _ := c.Sweep(now)
			e.carried(t, carried)
		}
	}
	carried, _ := c.Finish(now)
	e.carried(t, carried)
	return e.out
}

// checkArrival compares a replay with one decision after the last span, span by span.
func checkArrival(rt *rapid.T, name string, spans []verdict.Span) {
	want := wholeAfterLast(rt, spans)
	got := replayArrival(rt, spans, drawArrival(rt, spans))
	for i := range spans {
		require.Equal(rt, comparable(want[i]), comparable(got[i]), "%s: span %x %q (kind %d, %.2f-%.2f s)", name,
			spans[i].SpanID, spans[i].Name, spans[i].Kind, secsOf(spans[i].Start), secsOf(spans[i].End))
	}
}

func secsOf(ns int64) float64 { return float64(ns-shapeT0) / 1e9 }

func TestArrivalEqualsOneDecisionScenarios(t *testing.T) {
	dirs, files := allScenarioSpans(t)
	rapid.Check(t, func(rt *rapid.T) {
		fi := rapid.IntRange(0, len(files)-1).Draw(rt, "scenario")
		checkArrival(rt, filepath.Base(dirs[fi]), files[fi])
	})
}

func TestArrivalEqualsOneDecisionShapes(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var spans []verdict.Span
		b := &shapes{}
		for k := range rapid.IntRange(1, 3).Draw(rt, "shapes") {
			switch rapid.IntRange(0, 3).Draw(rt, fmt.Sprintf("shape%d", k)) {
			case 0:
				b.loopOutlivingParent(rt)
			case 1:
				b.keyedResends(rt)
			case 2:
				b.overlappingTries(rt)
			case 3:
				b.redeliveries(rt)
			}
		}
		spans = b.spans
		checkArrival(rt, "shapes", spans)
	})
}

// shapeT0 is the generated shapes' time origin (2026-01-01T00:00:00Z).
const shapeT0 = int64(1767225600) * int64(time.Second)

// shapes builds generated traces span by span.
type shapes struct {
	spans  []verdict.Span
	traces byte
}

func (b *shapes) trace() verdict.TraceID {
	b.traces++
	return verdict.TraceID{0x5d, b.traces, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b.traces}
}

// span adds a span of trace tr (times in seconds after shapeT0) and returns its index.
func (b *shapes) span(tr verdict.TraceID, parent int, service, name string, kind verdict.Kind, start, end float64) int {
	s := verdict.Span{TraceID: tr, SpanID: verdict.SpanID{tr[1], byte(len(b.spans) >> 8), byte(len(b.spans)), 1}, Service: service, Name: name, Kind: kind,
		Start: shapeT0 + int64(start*1e9), End: shapeT0 + int64(end*1e9), GRPCStatus: -1, ResendCount: -1, InputTokens: -1, OutputTokens: -1}
	if parent >= 0 {
		s.ParentID = b.spans[parent].SpanID
	}
	b.spans = append(b.spans, s)
	return len(b.spans) - 1
}

// call adds an HTTP CLIENT try under parent: status 0 with a cancellation when cancelled.
func (b *shapes) call(parent int, service, host string, start, end float64, status int, cancelled bool) int {
	p := &b.spans[parent]
	i := b.span(p.TraceID, parent, service, "GET", verdict.KindClient, start, end)
	s := &b.spans[i]
	s.IsHTTP, s.HTTPStatus, s.Target = true, status, verdict.NewTargetHash().Add(host+":80/x")
	if cancelled {
		s.HTTPStatus, s.ErrorType, s.Status = 0, "context canceled", verdict.StatusError
	} else if status >= 400 {
		s.Status = verdict.StatusError
	}
	return i
}

// root adds a SERVER root: HTTP 499 (the caller left), 504 or 200.
func (b *shapes) root(rt *rapid.T, service string, end float64) int {
	i := b.span(b.trace(), -1, service, "POST /ask", verdict.KindServer, 0, end)
	b.spans[i].IsHTTP = true
	b.spans[i].HTTPStatus = rapid.SampledFrom([]int{499, 504, 200}).Draw(rt, "rootStatus")
	return i
}

// loopOutlivingParent: a handler (the attempts' parent) ends with its root at G, while its
// retry loop goes on: tries 0.1 to 5 s long, backoffs of 0.5 s to two minutes, the last maybe
// succeeding; some end before G, one may be in flight at G, the rest after it (by seconds to
// minutes).
func (b *shapes) loopOutlivingParent(rt *rapid.T) {
	g := float64(rapid.IntRange(5, 50).Draw(rt, "gone")) / 10
	r := b.root(rt, "gateway", g)
	h := b.span(b.spans[r].TraceID, r, "worker", "handle", verdict.KindInternal, 0.01, g)
	t := float64(rapid.IntRange(0, 30).Draw(rt, "firstTry")) / 10
	n := rapid.IntRange(1, 5).Draw(rt, "tries")
	for k := range n {
		d := float64(rapid.IntRange(1, 50).Draw(rt, fmt.Sprintf("try%d", k))) / 10
		status := 503
		if k == n-1 && rapid.Bool().Draw(rt, "lastOK") {
			status = 200
		}
		b.call(h, "worker", "search", t, t+d, status, false)
		t += d + float64(rapid.SampledFrom([]int{5, 20, 100, 300, 1200}).Draw(rt, fmt.Sprintf("backoff%d", k)))/10
	}
}

// keyedResends: a client sends one idempotency key in two or three traces, the first try
// succeeding (it never got the answer) or failing, re-sent 10 s to three minutes later; a trace
// may try twice itself.
func (b *shapes) keyedResends(rt *rapid.T) {
	key := uint64(b.traces+1)<<32 | uint64(rapid.IntRange(1, 1<<20).Draw(rt, "key"))<<1 | 1 // one key a shape
	t := 0.0
	for k := range rapid.IntRange(2, 3).Draw(rt, "sends") {
		r := b.span(b.trace(), -1, "shop", "POST /checkout", verdict.KindServer, t, t+2)
		b.spans[r].IsHTTP, b.spans[r].HTTPStatus = true, 200
		status := rapid.SampledFrom([]int{200, 503, 504}).Draw(rt, fmt.Sprintf("send%d", k))
		i := b.call(r, "shop", "payments", t+0.1, t+0.9, status, false)
		b.spans[i].KeyHash = key
		if rapid.Bool().Draw(rt, fmt.Sprintf("again%d", k)) { // the trace's own retry, with the key
			status = rapid.SampledFrom([]int{200, 503}).Draw(rt, fmt.Sprintf("sendAgain%d", k))
			i = b.call(r, "shop", "payments", t+1.0, t+1.9, status, false)
			b.spans[i].KeyHash = key
		}
		t += float64(rapid.SampledFrom([]int{10, 60, 180}).Draw(rt, fmt.Sprintf("resend%d", k)))
	}
}

// overlappingTries: under a parent that awaits them, two tries of one call overlap: one
// succeeds and the other is cancelled by its client before it or within the grace after it
// (a hedge), or both succeed (parallel work).
func (b *shapes) overlappingTries(rt *rapid.T) {
	r := b.root(rt, "gateway", 10)
	p := b.span(b.spans[r].TraceID, r, "planner", "plan", verdict.KindInternal, 0.01, 9)
	a0 := float64(rapid.IntRange(1, 20).Draw(rt, "aStart")) / 10
	a1 := a0 + float64(rapid.IntRange(5, 30).Draw(rt, "aLen"))/10
	b0 := a0 + float64(rapid.IntRange(1, 10).Draw(rt, "bAfter"))/10
	win := b0 + float64(rapid.IntRange(1, 30).Draw(rt, "bLen"))/10
	switch rapid.IntRange(0, 2).Draw(rt, "race") {
	case 0: // the loser cancelled before the winner finished
		b.call(p, "planner", "ranker", a0, min(a1, win-0.05), 0, true)
		b.call(p, "planner", "ranker", b0, win, 200, false)
	case 1: // the loser cancelled within the grace after the winner
		b.call(p, "planner", "ranker", a0, win-0.1, 200, false)
		b.call(p, "planner", "ranker", b0, win+0.5, 0, true)
	default: // parallel work: both succeed
		b.call(p, "planner", "ranker", a0, a1, 200, false)
		b.call(p, "planner", "ranker", b0, win, 200, false)
	}
}

// redeliveries: a message produced by a request is delivered in new traces (linked), its
// commit lost: again 30 s to four minutes later.
func (b *shapes) redeliveries(rt *rapid.T) {
	r := b.span(b.trace(), -1, "web", "POST /orders", verdict.KindServer, 0, 0.5)
	b.spans[r].IsHTTP, b.spans[r].HTTPStatus = true, 200
	pub := b.span(b.spans[r].TraceID, r, "web", "send orders", verdict.KindProducer, 0.1, 0.12)
	msg := uint64(b.traces)<<32 | uint64(rapid.IntRange(1, 1<<20).Draw(rt, "message"))<<1 | 1 // one message a shape
	t := 1.0
	for k := range rapid.IntRange(1, 3).Draw(rt, "deliveries") {
		d := b.span(b.trace(), -1, "fulfilment", "process orders", verdict.KindConsumer, t, t+1)
		s := &b.spans[d]
		s.MessageHash = msg
		s.Links = []verdict.Link{{TraceID: b.spans[pub].TraceID, SpanID: b.spans[pub].SpanID}}
		if rapid.Bool().Draw(rt, fmt.Sprintf("failed%d", k)) {
			s.Status, s.ErrorType = verdict.StatusError, "CommitFailedException"
		}
		t += float64(rapid.SampledFrom([]int{30, 90, 240}).Draw(rt, fmt.Sprintf("redeliver%d", k)))
	}
}
