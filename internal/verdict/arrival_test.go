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

	"github.com/orphanwatch/orphanwatch/internal/testsupport/shapegen"
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
		b := &shapes{}
		shapegen.Draw(rt, b)
		checkArrival(rt, "shapes", b.spans)
	})
}

// shapeT0 is the generated shapes' time origin (2026-01-01T00:00:00Z).
const shapeT0 = int64(1767225600) * int64(time.Second)

// shapes builds generated traces span by span (a shapegen.Builder: a span's handle is its index).
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

// child adds a span under parent, in its trace.
func (b *shapes) child(parent int, service, name string, kind verdict.Kind, start, end float64) int {
	return b.span(b.spans[parent].TraceID, parent, service, name, kind, start, end)
}

// shapeHash is the hash of key or message n of shape: one a shape.
func shapeHash(shape, n int) uint64 { return uint64(shape+1)<<32 | uint64(n)<<1 | 1 }

func (b *shapes) Root(service, name string, start, end float64, status int) int {
	i := b.span(b.trace(), -1, service, name, verdict.KindServer, start, end)
	b.spans[i].IsHTTP, b.spans[i].HTTPStatus = true, status
	return i
}

func (b *shapes) Internal(parent int, service, name string, start, end float64) int {
	return b.child(parent, service, name, verdict.KindInternal, start, end)
}

func (b *shapes) Call(parent int, service, host string, start, end float64, status int, cancelled bool) int {
	i := b.child(parent, service, "GET", verdict.KindClient, start, end)
	s := &b.spans[i]
	s.IsHTTP, s.HTTPStatus, s.Target = true, status, verdict.NewTargetHash().Add(host+":80/x")
	if cancelled {
		s.HTTPStatus, s.ErrorType, s.Status = 0, "context canceled", verdict.StatusError
	} else if status >= 400 {
		s.Status = verdict.StatusError
	}
	return i
}

func (b *shapes) Key(i, shape, n int) { b.spans[i].KeyHash = shapeHash(shape, n) }

func (b *shapes) Producer(parent int, service, dest string, start, end float64) int {
	return b.child(parent, service, "send "+dest, verdict.KindProducer, start, end)
}

func (b *shapes) Delivery(pub int, service, dest string, shape, n int, start, end float64, failed bool) int {
	d := b.span(b.trace(), -1, service, "process "+dest, verdict.KindConsumer, start, end)
	s := &b.spans[d]
	s.MessageHash = shapeHash(shape, n)
	s.Links = []verdict.Link{{TraceID: b.spans[pub].TraceID, SpanID: b.spans[pub].SpanID}}
	if failed {
		s.Status, s.ErrorType = verdict.StatusError, "CommitFailedException"
	}
	return d
}
