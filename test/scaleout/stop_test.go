package scaleout

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
)

// clone copies td with every trace ID (and link to it) and idempotency key made unique to copy i.
func clone(td ptrace.Traces, i int) ptrace.Traces {
	out := ptrace.NewTraces()
	td.CopyTo(out)
	remap := func(id pcommon.TraceID) pcommon.TraceID {
		h := fnv.New64a()
		_, _ = h.Write(id[:])
		_ = binary.Write(h, binary.BigEndian, uint64(i))
		var n [16]byte
		n[0] = 0xc1
		binary.BigEndian.PutUint64(n[8:], h.Sum64())
		binary.BigEndian.PutUint32(n[2:], uint32(i))
		return n
	}
	tdwalk.Spans(out, func(sp ptrace.Span) {
		sp.SetTraceID(remap(sp.TraceID()))
		for l := range sp.Links().Len() {
			sp.Links().At(l).SetTraceID(remap(sp.Links().At(l).TraceID()))
		}
		if v, ok := sp.Attributes().Get(scenarios.AttrIdempotencyKey); ok {
			v.Slice().At(0).SetStr(fmt.Sprintf("%s-%d", v.Slice().At(0).AsString(), i))
		}
	})
	return out
}

// roots and children split a batch into its root spans and the others (the root arrives last).
func part(td ptrace.Traces, roots bool) ptrace.Traces {
	out := ptrace.NewTraces()
	td.CopyTo(out)
	tdwalk.RemoveSpans(out, func(sp ptrace.Span) bool { return sp.ParentSpanID().IsEmpty() != roots })
	return out
}

// traffic is copies of S2 (a cancelled request whose retry loop goes on) and S7 (work across a
// queue), each sent as children first and the root 500 ms later: a bounded load of the given
// number of traces groups sent over about `over`.
type traffic struct {
	children, roots []ptrace.Traces
	spans           int
	perTrace        map[pcommon.TraceID]int
}

func newTraffic(groups int) traffic { return newTrafficFrom(0, groups) }

// newTrafficFrom is newTraffic with copies from..from+groups-1: traces and keys of their own.
func newTrafficFrom(from, groups int) traffic {
	tf := traffic{perTrace: map[pcommon.TraceID]int{}}
	s2, _ := scenarios.S2()
	s7, _ := scenarios.S7()
	for i := from; i < from+groups; i++ {
		src := s2
		if i%4 == 3 {
			src = s7
		}
		c := clone(src, i)
		tf.spans += c.SpanCount()
		tdwalk.Spans(c, func(sp ptrace.Span) { tf.perTrace[sp.TraceID()]++ })
		tf.children = append(tf.children, part(c, false))
		tf.roots = append(tf.roots, part(c, true))
	}
	return tf
}

// play sends the traffic: group i's children at i*step, its roots 500 ms later; at is called
// once, when half the groups have been sent.
func (tf traffic) play(t *testing.T, tr *tier, step time.Duration, at func()) {
	t.Helper()
	start := time.Now()
	rootsFrom := 0
	for i := range tf.children {
		tr.send(t, tf.children[i])
		for rootsFrom < i && time.Since(start) > time.Duration(rootsFrom)*step+500*time.Millisecond {
			tr.send(t, tf.roots[rootsFrom])
			rootsFrom++
		}
		if i == len(tf.children)/2 && at != nil {
			at()
		}
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * step)))
	}
	time.Sleep(500 * time.Millisecond)
	for ; rootsFrom < len(tf.roots); rootsFrom++ {
		tr.send(t, tf.roots[rootsFrom])
	}
}

// delivery is what the trace store got: spans by (trace, span) ID.
type delivery struct {
	unique, total, duplicated int
	tracesIncomplete          int // traces with spans lost (of the traffic's)
}

func measure(tr *tier, tf traffic) delivery {
	var d delivery
	seen := map[[24]byte]int{}
	tr.store.each(func(_ string, sp ptrace.Span) {
		var k [24]byte
		tid, sid := sp.TraceID(), sp.SpanID()
		copy(k[:16], tid[:])
		copy(k[16:], sid[:])
		seen[k]++
	})
	for _, n := range seen {
		d.unique++
		d.total += n
		if n > 1 {
			d.duplicated++
		}
	}
	got := map[pcommon.TraceID]int{}
	for k := range seen {
		got[pcommon.TraceID(k[:16])]++
	}
	for id, n := range tf.perTrace {
		if got[id] < n {
			d.tracesIncomplete++
		}
	}
	return d
}

// handOver is what became of the verdicts of a tier where member `gone` left mid-traffic: the
// spans judged by the member before it left (its last scrape, all that Prometheus keeps of it)
// and by the others, and the spans no member judged.
type handOver struct {
	goneJudged, othersJudged, lost int
	series                         map[string]float64 // the gone member's last scrape plus the others'
}

func verdictsAfter(t *testing.T, tr *tier, gone int, w *watcher, sent int) handOver {
	t.Helper()
	var others []*member
	for i, m := range tr.members {
		if i != gone {
			others = append(others, m)
		}
	}
	var h handOver
	h.othersJudged = tr.settleStable(t, others, 60*time.Second)
	series, tel := w.last()
	h.goneJudged = int(metricSum(tel, "otelcol_exporter_orphanmetrics_spans_judged", ""))
	h.lost = sent - h.goneJudged - h.othersJudged
	h.series = orphanSeriesOf(t, others)
	for k, v := range series {
		h.series[k] += v
	}
	return h
}

// TestMemberStopsMidTraffic: two members; one stops (gracefully: collector shutdown) when half
// the traffic is sent. Its partitions move to the other member after the session timeout
// (static membership: no leave on shutdown). The trace store, fed by the front, gets every
// span; measured against a tier where nobody stops: verdicts lost (counted by the stopped
// member after its last scrape, at shutdown) and the metric series that differ.
func TestMemberStopsMidTraffic(t *testing.T) {
	const groups = 80
	tf := newTraffic(groups)
	step := 50 * time.Millisecond

	ref := startTier(t, tierOptions{members: 2, keySharing: true})
	tf.play(t, ref, step, nil)
	if got := ref.settle(t, tf.spans, 60*time.Second); got != tf.spans {
		t.Fatalf("reference tier: %d of %d spans judged", got, tf.spans)
	}
	want := ref.orphanSeries(t)

	tr := startTier(t, tierOptions{members: 2, keySharing: true})
	w := watch(t, tr.members[1])
	var stopped time.Time
	rebalanced := make(chan time.Duration, 1)
	tf.play(t, tr, step, func() {
		stopped = time.Now()
		go tr.members[1].Stop()
		go func() {
			_ = tr.groupStable(1, 30*time.Second)
			rebalanced <- time.Since(stopped)
		}()
	})
	moved := <-rebalanced
	stored := tr.waitStore(t, tf.spans, 30*time.Second)
	h := verdictsAfter(t, tr, 1, w, tr.frontSent(t, "kafka"))
	d := measure(tr, tf)
	diffs := diff(want, h.series)
	t.Logf("member stop, %d trace groups (%d spans, %d traces): trace store %d spans (%d unique, %d twice, %d traces incomplete); partitions moved %s after the stop; spans judged: stopped member %d (last scrape), survivor %d; verdicts lost %d (%.1f%%)",
		groups, tf.spans, len(tf.perTrace), stored, d.unique, d.duplicated, d.tracesIncomplete, moved.Round(100*time.Millisecond),
		h.goneJudged, h.othersJudged, h.lost, 100*float64(h.lost)/float64(tf.spans))
	t.Logf("series that differ from the tier where nobody stopped: %d\n%s", len(diffs), joinLines(diffs))
	t.Logf("survivor: spans without verdict (root_missing) %v; key look-ups %v",
		metricSum(telemetryOf(t, tr.members[:1], "otelcol_exporter_orphanmetrics_spans_without_verdict"), "otelcol_exporter_orphanmetrics_spans_without_verdict", "reason=root_missing"),
		telemetryOf(t, tr.members[:1], "otelcol_exporter_orphanmetrics_key_lookups"))
	// The front hands every span to the trace store itself: a member that stops costs no span.
	if d.unique != tf.spans || d.duplicated != 0 {
		t.Errorf("trace store: %d of %d spans, %d twice", d.unique, tf.spans, d.duplicated)
	}
	// A graceful stop commits what the member read: nothing is read, hence judged, twice.
	if h.lost < 0 {
		t.Errorf("%d spans judged twice", -h.lost)
	}
}
