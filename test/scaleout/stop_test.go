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
	eachSpan(out, func(sp ptrace.Span) {
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
	out.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(sp ptrace.Span) bool { return sp.ParentSpanID().IsEmpty() != roots })
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
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

func newTraffic(groups int) traffic {
	tf := traffic{perTrace: map[pcommon.TraceID]int{}}
	s2, _ := scenarios.S2()
	s7, _ := scenarios.S7()
	for i := range groups {
		src := s2
		if i%4 == 3 {
			src = s7
		}
		c := clone(src, i)
		tf.spans += c.SpanCount()
		eachSpan(c, func(sp ptrace.Span) { tf.perTrace[sp.TraceID()]++ })
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

// delivery counts what the members exported: spans by (trace, span) ID, and the members that
// decided each trace.
type delivery struct {
	unique, total, duplicated int
	tracesSplit               int // traces whose spans two members decided
	tracesIncomplete          int // traces with spans lost (of the traffic's)
	perMember                 []int
}

func measure(tr *tier, tf traffic) delivery {
	var d delivery
	seen := map[[24]byte]int{}
	by := map[pcommon.TraceID]map[int]bool{}
	for mi, m := range tr.members {
		d.perMember = append(d.perMember, m.sink.spans())
		m.sink.each(func(_ string, sp ptrace.Span) {
			var k [24]byte
			tid, sid := sp.TraceID(), sp.SpanID()
			copy(k[:16], tid[:])
			copy(k[16:], sid[:])
			seen[k]++
			if by[tid] == nil {
				by[tid] = map[int]bool{}
			}
			by[tid][mi] = true
		})
	}
	for _, n := range seen {
		d.unique++
		d.total += n
		if n > 1 {
			d.duplicated++
		}
	}
	for _, ms := range by {
		if len(ms) > 1 {
			d.tracesSplit++
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

// TestMemberStopsMidTraffic: two members; one stops (gracefully: collector shutdown) when half
// the traffic is sent. Its partitions move to the other member after the session timeout
// (static membership: no leave on shutdown). Measured against a tier where nobody stops: spans
// lost or duplicated, traces decided by two members (partial data), and the metric series that
// differ.
func TestMemberStopsMidTraffic(t *testing.T) {
	const groups = 80
	tf := newTraffic(groups)
	step := 50 * time.Millisecond

	ref := startTier(t, tierOptions{members: 2, keySharing: true})
	tf.play(t, ref, step, nil)
	if got := ref.waitSpans(t, tf.spans, 60*time.Second); got != tf.spans {
		t.Fatalf("reference tier: %d of %d spans", got, tf.spans)
	}
	time.Sleep(300 * time.Millisecond)
	want := ref.orphanSeries(t)
	if d := diff(want, sinkSeries(t, ref.members)); len(d) > 0 {
		t.Fatalf("series from the trace store differ from the exporter's:\n%s", joinLines(d))
	}

	tr := startTier(t, tierOptions{members: 2, keySharing: true})
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
	// The stopped member's partitions wait for the session timeout (6 s), then move.
	got := tr.waitSpans(t, tf.spans, 60*time.Second)
	took := time.Since(stopped)
	time.Sleep(time.Second) // late duplicates, if any
	d := measure(tr, tf)
	diffs := diff(want, sinkSeries(t, tr.members))
	t.Logf("member stop, %d trace groups (%d spans, %d traces): exported %d spans (%d unique, %d duplicated), the last %s after the stop; partitions moved %s after the stop; spans per member %v; traces decided by both members: %d; traces incomplete: %d",
		groups, tf.spans, len(tf.perTrace), got, d.unique, d.duplicated, took.Round(100*time.Millisecond), (<-rebalanced).Round(100*time.Millisecond), d.perMember, d.tracesSplit, d.tracesIncomplete)
	t.Logf("series that differ from the tier where nobody stopped: %d\n%s", len(diffs), joinLines(diffs))
	t.Logf("survivor telemetry: %v %v %v", telemetryOf(t, tr.members[:1], "otelcol_processor_orphan_traces_root_missing"),
		telemetryOf(t, tr.members[:1], "otelcol_processor_orphan_spans_late"), telemetryOf(t, tr.members[:1], "otelcol_processor_orphan_key_lookups"))
	// A graceful stop decides what the member holds (on partial data where a trace's root had
	// not come) and commits what it marked: nothing is lost, nothing is read twice.
	if d.unique != tf.spans {
		t.Errorf("graceful stop lost spans: %d of %d exported", d.unique, tf.spans)
	}
	if d.duplicated != 0 {
		t.Errorf("graceful stop: %d spans exported twice", d.duplicated)
	}
}
