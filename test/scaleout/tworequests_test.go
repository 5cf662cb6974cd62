package scaleout

import (
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// twoRequests is two S7 pairs that sent one key: request A1 cancelled at 1.00 as in S7 with its
// job B1, and request A2 with its job B2, A2's root completing at 10.00 (200). Each job's
// CONSUMER span links to its own request's PRODUCER span.
func twoRequests(i int) (a1, b1, a2, b2 ptrace.Traces, idb1, idb2, ida1, ida2 pcommon.TraceID) {
	a1, b1, ida1, idb1 = s7Pair(2 * i)
	a2, b2, ida2, idb2 = s7Pair(2*i + 1)
	key := fmt.Sprintf("shared-%d-key", i)
	for _, td := range []ptrace.Traces{a1, b1, a2, b2} {
		eachSpan(td, func(sp ptrace.Span) {
			if v, ok := sp.Attributes().Get(scenarios.AttrIdempotencyKey); ok {
				v.Slice().At(0).SetStr(key)
			}
		})
	}
	eachSpan(a2, func(sp ptrace.Span) {
		if sp.ParentSpanID().IsEmpty() {
			sp.SetEndTimestamp(sp.StartTimestamp() + pcommon.Timestamp(10*time.Second))
			sp.Attributes().PutInt(scenarios.AttrHTTPStatus, 200)
		}
	})
	return a1, b1, a2, b2, idb1, idb2, ida1, ida2
}

// TestTwoRequestsOneKeyAcrossMembers: two requests re-send one idempotency key, each with its
// own root; each job binds to its own request's root, on the tier, whichever members hold the
// four traces (key records carry the trace and root span they came from, and a job waits for
// the record of the request it links to). B1's model calls are orphaned (A1 cancelled at 1.00),
// B2's live (A2 answered at 10.00). With records keyed by the key alone, one of the two would
// take the other's root.
func TestTwoRequestsOneKeyAcrossMembers(t *testing.T) {
	const quads = 8
	tr := startTier(t, tierOptions{members: 2, keySharing: true, decisionWait: "1s", keyWait: "3s"})
	type ids struct{ a1, b1, a2, b2 pcommon.TraceID }
	all := make([]ids, quads)
	var as []ptrace.Traces
	total := 0
	for i := range quads {
		a1, b1, a2, b2, idb1, idb2, ida1, ida2 := twoRequests(i)
		all[i] = ids{ida1, idb1, ida2, idb2}
		as = append(as, a1, a2)
		total += a1.SpanCount() + b1.SpanCount() + a2.SpanCount() + b2.SpanCount()
		tr.send(t, b1)
		tr.send(t, b2)
	}
	time.Sleep(1500 * time.Millisecond) // the jobs are due before their requests arrive
	for _, a := range as {
		tr.send(t, a)
	}
	if got := tr.waitSpans(t, total, 60*time.Second); got != total {
		t.Fatalf("%d of %d spans exported", got, total)
	}
	member := map[pcommon.TraceID]int{}
	liveness := map[pcommon.TraceID][]string{}
	for mi, m := range tr.members {
		m.sink.each(func(_ string, sp ptrace.Span) {
			member[sp.TraceID()] = mi
			if sp.Name() != "chat gpt-4o" {
				return
			}
			lv := "" // none: detached, unbound
			if v, ok := sp.Attributes().Get("orphanwatch.liveness"); ok {
				lv = v.AsString()
			}
			liveness[sp.TraceID()] = append(liveness[sp.TraceID()], lv)
		})
	}
	split := 0
	for i, q := range all {
		if member[q.b1] != member[q.a1] || member[q.b2] != member[q.a2] {
			split++
		}
		if got := liveness[q.b1]; len(got) != 2 || got[0] != "orphaned" || got[1] != "orphaned" {
			t.Errorf("quad %d (members A1 %d B1 %d A2 %d B2 %d): B1's model calls %v, want orphaned (bound to A1's root)",
				i, member[q.a1], member[q.b1], member[q.a2], member[q.b2], got)
		}
		if got := liveness[q.b2]; len(got) != 2 || got[0] != "live" || got[1] != "live" {
			t.Errorf("quad %d (members A1 %d B1 %d A2 %d B2 %d): B2's model calls %v, want live (bound to A2's root)",
				i, member[q.a1], member[q.b1], member[q.a2], member[q.b2], got)
		}
	}
	if split == 0 {
		t.Fatal("no job on another member than its request: the test shows nothing of the tier")
	}
	t.Logf("%d of %d quads with a job on another member than its request; key look-ups %v", split, quads,
		tr.telemetry(t, "otelcol_processor_orphan_key_lookups"))
}
