package scaleout

import (
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
)

// twoRequests is two S7 pairs that sent one key: request A1 cancelled at 1.00 as in S7 with its
// job B1, and request A2 with its job B2, A2's root completing at 10.00 (200). Each job's
// CONSUMER span links to its own request's PRODUCER span.
func twoRequests(i int) (a1, b1, a2, b2 ptrace.Traces, idb1, idb2, ida1, ida2 pcommon.TraceID) {
	a1, b1, ida1, idb1 = s7Pair(2 * i)
	a2, b2, ida2, idb2 = s7Pair(2*i + 1)
	key := fmt.Sprintf("shared-%d-key", i)
	for _, td := range []ptrace.Traces{a1, b1, a2, b2} {
		tdwalk.Spans(td, func(sp ptrace.Span) {
			if v, ok := sp.Attributes().Get(scenarios.AttrIdempotencyKey); ok {
				v.Slice().At(0).SetStr(key)
			}
		})
	}
	tdwalk.Spans(a2, func(sp ptrace.Span) {
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
	var as []ptrace.Traces
	total := 0
	for i := range quads {
		a1, b1, a2, b2, _, _, _, _ := twoRequests(i)
		as = append(as, a1, a2)
		total += a1.SpanCount() + b1.SpanCount() + a2.SpanCount() + b2.SpanCount()
		tr.send(t, b1)
		tr.send(t, b2)
	}
	time.Sleep(1500 * time.Millisecond) // the jobs are due before their requests arrive
	for _, a := range as {
		tr.send(t, a)
	}
	if got := tr.waitStore(t, total, 60*time.Second); got != total {
		t.Fatalf("%d of %d spans in the trace store", got, total)
	}
	if got := tr.settle(t, total, 60*time.Second); got != total {
		t.Fatalf("%d of %d spans judged", got, total)
	}
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
