package scaleout

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// s7Pair is S7 (trace A: the cancelled request whose PRODUCER span carries key K; trace B: the
// queue consumer whose model calls carry K) with trace IDs and key of its own.
func s7Pair(i int) (a, b ptrace.Traces, ida, idb pcommon.TraceID) {
	td, _ := scenarios.S7()
	var oldA, oldB pcommon.TraceID
	first := true
	eachSpan(td, func(sp ptrace.Span) {
		if first {
			oldA, first = sp.TraceID(), false
		} else if sp.TraceID() != oldA {
			oldB = sp.TraceID()
		}
	})
	ida, idb = pairID(i, 'a'), pairID(i, 'b')
	key := fmt.Sprintf("pair-%d-key", i)
	eachSpan(td, func(sp ptrace.Span) {
		switch sp.TraceID() {
		case oldA:
			sp.SetTraceID(ida)
		case oldB:
			sp.SetTraceID(idb)
		}
		for l := range sp.Links().Len() {
			if sp.Links().At(l).TraceID() == oldA {
				sp.Links().At(l).SetTraceID(ida)
			}
		}
		if v, ok := sp.Attributes().Get(scenarios.AttrIdempotencyKey); ok {
			v.Slice().At(0).SetStr(key)
		}
	})
	a, b = split(td, ida), split(td, idb)
	return a, b, ida, idb
}

func pairID(i int, which byte) pcommon.TraceID {
	var id [16]byte
	id[0], id[1] = 0x57, which
	// Spread the IDs: the partitioner hashes the trace ID (as the front's kafka exporter keys it).
	binary.BigEndian.PutUint64(id[8:], uint64(i)*0x9e3779b97f4a7c15+uint64(which))
	return id
}

func eachSpan(td ptrace.Traces, fn func(ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			sps := sss.At(j).Spans()
			for k := range sps.Len() {
				fn(sps.At(k))
			}
		}
	}
}

// split copies the spans of one trace.
func split(td ptrace.Traces, id pcommon.TraceID) ptrace.Traces {
	out := ptrace.NewTraces()
	td.CopyTo(out)
	out.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(sp ptrace.Span) bool { return sp.TraceID() != id })
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
	return out
}

// s7Result is what happened to the model calls of one pair's trace B.
type s7Result struct {
	memberA, memberB int
	liveness         []string
	detached         int
	outcome          string
}

// runS7 sends pairs of S7 traces, B before A's root (the decision of B is due before A's
// record can exist, so the bounded wait is exercised), through a tier of two members.
func runS7(t *testing.T, keySharing bool, pairs int) ([]s7Result, *tier) {
	t.Helper()
	tr := startTier(t, tierOptions{members: 2, keySharing: keySharing, decisionWait: "1s", keyWait: "3s"})
	ids := make([][2]pcommon.TraceID, pairs)
	as := make([]ptrace.Traces, pairs)
	total := 0
	for i := range pairs {
		a, b, ida, idb := s7Pair(i)
		ids[i] = [2]pcommon.TraceID{ida, idb}
		as[i] = a
		total += a.SpanCount() + b.SpanCount()
		tr.send(t, b)
	}
	time.Sleep(1500 * time.Millisecond) // B is due before A arrives
	for _, a := range as {
		tr.send(t, a)
	}
	if got := tr.waitSpans(t, total, 60*time.Second); got != total {
		t.Fatalf("%d of %d spans exported", got, total)
	}
	res := make([]s7Result, pairs)
	for i := range res {
		res[i].memberA, res[i].memberB = -1, -1
	}
	for mi, m := range tr.members {
		m.sink.each(func(_ string, sp ptrace.Span) {
			for i, id := range ids {
				switch sp.TraceID() {
				case id[0]:
					res[i].memberA = mi
				case id[1]:
					res[i].memberB = mi
					if sp.Name() != "chat gpt-4o" {
						continue
					}
					lv := "" // none: detached
					if v, ok := sp.Attributes().Get("orphanwatch.liveness"); ok {
						lv = v.AsString()
					}
					res[i].liveness = append(res[i].liveness, lv)
					if d, ok := sp.Attributes().Get("orphanwatch.detached"); ok && d.Bool() {
						res[i].detached++
					}
					if o, ok := sp.Attributes().Get("orphanwatch.run.outcome"); ok {
						res[i].outcome = o.AsString()
					}
				}
			}
		})
	}
	return res, tr
}

// TestS7AcrossMembers: trace B (behind a queue, key K) on another member than trace A whose
// root K binds it to. With shared key records B's model calls are orphaned and their run
// delivered to nobody, exactly as on one collector; without them B is unbound detached work.
func TestS7AcrossMembers(t *testing.T) {
	const pairs = 16
	for _, shared := range []bool{true, false} {
		res, tr := runS7(t, shared, pairs)
		splitN := 0
		for i, r := range res {
			if r.memberA < 0 || r.memberB < 0 {
				t.Fatalf("pair %d: spans missing (%+v)", i, r)
			}
			if r.memberA == r.memberB {
				// Same member: with key sharing, B waited (the orphan_keys wait) for a binding and
				// found A's key locally. Without it, B was decided at its decision_wait, before
				// A arrived: unbound, as on one collector with that timing.
				if shared && r.outcome != "delivered_to_nobody" {
					t.Errorf("pair %d on one member: outcome %q", i, r.outcome)
				}
				continue
			}
			splitN++
			switch {
			case shared && (r.outcome != "delivered_to_nobody" || len(r.liveness) != 2 || r.liveness[0] != "orphaned" || r.liveness[1] != "orphaned"):
				t.Errorf("shared keys, pair %d split across members: B's model calls %+v, want orphaned, delivered_to_nobody", i, r)
			case !shared && (r.detached != 2 || r.outcome == "delivered_to_nobody"):
				t.Errorf("no shared keys, pair %d split: B's model calls %+v, want detached (unbound)", i, r)
			}
		}
		if splitN == 0 {
			t.Fatalf("no pair split across the two members: the test shows nothing")
		}
		t.Logf("key sharing %v: %d of %d pairs split across members; key look-ups %v", shared, splitN, pairs,
			tr.telemetry(t, "otelcol_processor_orphan_key_lookups"))
		if shared {
			lk := tr.telemetry(t, "otelcol_processor_orphan_key_lookups")
			if lk["otelcol_processor_orphan_key_lookups{outcome=remote,processor=orphan}"] < float64(splitN) {
				t.Errorf("remote look-ups %v < split pairs %d", lk, splitN)
			}
		}
	}
}
