package scaleout

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
)

// s7Pair is S7 (trace A: the cancelled request whose PRODUCER span carries key K; trace B: the
// queue consumer whose model calls carry K) with trace IDs and key of its own.
func s7Pair(i int) (a, b ptrace.Traces, ida, idb pcommon.TraceID) {
	td, _ := scenarios.S7()
	var oldA, oldB pcommon.TraceID
	first := true
	tdwalk.Spans(td, func(sp ptrace.Span) {
		if first {
			oldA, first = sp.TraceID(), false
		} else if sp.TraceID() != oldA {
			oldB = sp.TraceID()
		}
	})
	ida, idb = pairID(i, 'a'), pairID(i, 'b')
	key := fmt.Sprintf("pair-%d-key", i)
	tdwalk.Spans(td, func(sp ptrace.Span) {
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
	})
	setKey(td, key)
	a, b = split(td, ida), split(td, idb)
	return a, b, ida, idb
}

// setKey gives every idempotency key in td the value key.
func setKey(td ptrace.Traces, key string) {
	tdwalk.Spans(td, func(sp ptrace.Span) {
		if v, ok := sp.Attributes().Get(scenarios.AttrIdempotencyKey); ok {
			v.Slice().At(0).SetStr(key)
		}
	})
}

func pairID(i int, which byte) pcommon.TraceID {
	var id [16]byte
	id[0], id[1] = 0x57, which
	// Spread the IDs: the partitioner hashes the trace ID (as the front's kafka exporter keys it).
	binary.BigEndian.PutUint64(id[8:], uint64(i)*0x9e3779b97f4a7c15+uint64(which))
	return id
}

// split copies the spans of one trace.
func split(td ptrace.Traces, id pcommon.TraceID) ptrace.Traces {
	out := ptrace.NewTraces()
	td.CopyTo(out)
	tdwalk.RemoveSpans(out, func(sp ptrace.Span) bool { return sp.TraceID() != id })
	return out
}

// runS7 sends pairs of S7 traces, B before A's root (the decision of B is due before A's
// record can exist, so the bounded wait is exercised), through a tier of two members, and
// returns the members' summed series once everything is counted.
func runS7(t *testing.T, keySharing bool, pairs int) (map[string]float64, *tier) {
	t.Helper()
	var as, bs []ptrace.Traces
	for i := range pairs {
		a, b, _, _ := s7Pair(i)
		as, bs = append(as, a), append(bs, b)
	}
	tr := runJobsFirst(t, keySharing, bs, as)
	return tr.orphanSeries(t), tr
}

// runJobsFirst sends the jobs (S7's trace B) through a tier of two members (decision_wait 1s,
// the orphan_keys wait 3s), then, once they are due, the requests (trace A) their consumers
// link to; it returns the tier once the trace store got every span and the members judged
// every span.
func runJobsFirst(t *testing.T, keySharing bool, jobs, requests []ptrace.Traces) *tier {
	t.Helper()
	tr := startTier(t, tierOptions{members: 2, keySharing: keySharing, decisionWait: "1s", keyWait: "3s"})
	total := tr.sendAll(t, jobs)
	time.Sleep(1500 * time.Millisecond) // the jobs are due before their requests arrive
	total += tr.sendAll(t, requests)
	tr.storedAndJudged(t, total)
	return tr
}

// The series of S7's trace B: its two model calls (orphaned when bound to A's root, detached
// when unbound) and its run (delivered to nobody when bound).
const (
	s7Orphaned  = "orphanwatch_model_calls_total{liveness=orphaned,model=gpt-4o,service_name=researcher}"
	s7Detached  = "orphanwatch_model_calls_total{liveness=detached,model=gpt-4o,service_name=researcher}"
	s7Delivered = "orphanwatch_runs_total{operation=chat gpt-4o,outcome=delivered_to_nobody,service_name=researcher}"
)

// TestS7AcrossMembers: trace B (behind a queue, key K) on another member than trace A whose
// root K binds it to, for some of the pairs. With shared key records every B's model calls are
// orphaned and its run delivered to nobody, exactly as on one collector (bound through another
// member's record: key_lookups{outcome="remote"}); without them every B is unbound detached
// work (decided at its decision_wait, before A arrived, on its own member or not).
func TestS7AcrossMembers(t *testing.T) {
	const pairs = 16
	for _, shared := range []bool{true, false} {
		sum, tr := runS7(t, shared, pairs)
		lk := tr.telemetry(t, "otelcol_exporter_orphanmetrics_key_lookups")
		remote := metricSum(lk, "otelcol_exporter_orphanmetrics_key_lookups", "outcome=remote")
		t.Logf("key sharing %v: B's model calls orphaned %v, detached %v, runs delivered to nobody %v; key look-ups %v",
			shared, sum[s7Orphaned], sum[s7Detached], sum[s7Delivered], lk)
		if shared {
			if sum[s7Orphaned] != 2*pairs || sum[s7Delivered] != pairs || sum[s7Detached] != 0 {
				t.Errorf("shared keys: orphaned %v (want %d), delivered_to_nobody %v (want %d), detached %v (want 0)",
					sum[s7Orphaned], 2*pairs, sum[s7Delivered], pairs, sum[s7Detached])
			}
			if remote == 0 {
				t.Fatal("no B bound through another member's record: no pair was split, the test shows nothing of the tier")
			}
			if missed := metricSum(lk, "otelcol_exporter_orphanmetrics_key_lookups", "outcome=missed"); missed != 0 {
				t.Errorf("%v keys missed", missed)
			}
			continue
		}
		if sum[s7Detached] != 2*pairs || sum[s7Orphaned] != 0 || sum[s7Delivered] != 0 {
			t.Errorf("no shared keys: detached %v (want %d), orphaned %v, delivered_to_nobody %v (want 0)",
				sum[s7Detached], 2*pairs, sum[s7Orphaned], sum[s7Delivered])
		}
	}
}

// twoRequests is two S7 pairs that sent one key: request A1 cancelled at 1.00 as in S7 with its
// job B1, and request A2 with its job B2, A2's root completing at 10.00 (200). Each job's
// CONSUMER span links to its own request's PRODUCER span.
func twoRequests(i int) (a1, b1, a2, b2 ptrace.Traces) {
	a1, b1, _, _ = s7Pair(2 * i)
	a2, b2, _, _ = s7Pair(2*i + 1)
	key := fmt.Sprintf("shared-%d-key", i)
	for _, td := range []ptrace.Traces{a1, b1, a2, b2} {
		setKey(td, key)
	}
	tdwalk.Spans(a2, func(sp ptrace.Span) {
		if sp.ParentSpanID().IsEmpty() {
			sp.SetEndTimestamp(sp.StartTimestamp() + pcommon.Timestamp(10*time.Second))
			sp.Attributes().PutInt(scenarios.AttrHTTPStatus, 200)
		}
	})
	return a1, b1, a2, b2
}

// TestTwoRequestsOneKeyAcrossMembers: two requests re-send one idempotency key, each with its
// own root; each job binds to its own request's root, on the tier, whichever members hold the
// four traces (key records carry the trace and root span they came from, and a job waits for
// the record of the request it links to). B1's model calls are orphaned (A1 cancelled at 1.00),
// B2's live (A2 answered at 10.00). With records keyed by the key alone, one of the two would
// take the other's root.
func TestTwoRequestsOneKeyAcrossMembers(t *testing.T) {
	const quads = 8
	var as, bs []ptrace.Traces
	for i := range quads {
		a1, b1, a2, b2 := twoRequests(i)
		as, bs = append(as, a1, a2), append(bs, b1, b2)
	}
	tr := runJobsFirst(t, true, bs, as)
	sum := tr.orphanSeries(t)
	lk := tr.telemetry(t, "otelcol_exporter_orphanmetrics_key_lookups")
	live := "orphanwatch_model_calls_total{liveness=live,model=gpt-4o,service_name=researcher}"
	// B1's two model calls orphaned (A1 cancelled at 1.00), B2's two live (A2 answered at 10.00).
	if sum[s7Orphaned] != 2*quads || sum[live] != 2*quads || sum[s7Delivered] != quads || sum[s7Detached] != 0 {
		t.Errorf("model calls orphaned %v (want %d, B1's), live %v (want %d, B2's), detached %v (want 0); runs delivered to nobody %v (want %d, B1's)",
			sum[s7Orphaned], 2*quads, sum[live], 2*quads, sum[s7Detached], sum[s7Delivered], quads)
	}
	if metricSum(lk, "otelcol_exporter_orphanmetrics_key_lookups", "outcome=remote") == 0 {
		t.Fatal("no job bound through another member's record: the test shows nothing of the tier")
	}
	t.Logf("%d quads; key look-ups %v", quads, lk)
}
