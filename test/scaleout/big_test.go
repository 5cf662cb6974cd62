package scaleout

import (
	"strings"
	"testing"
	"time"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// TestHugeTraceThroughTheTier: S13's huge trace (more spans than fit one Kafka message at the
// default max_message_bytes) crosses the front tier whole: the trace store gets every span and
// the members judge every span.
func TestHugeTraceThroughTheTier(t *testing.T) {
	tr := startTier(t, tierOptions{members: 2, keySharing: true})
	td := scenarios.S13HugeTrace()
	n := td.SpanCount()
	tr.send(t, td)
	stored := tr.waitStore(t, n, 60*time.Second)
	got := tr.settle(t, n, 60*time.Second)
	t.Logf("huge trace: %d of %d spans in the trace store, %d judged by the members", stored, n, got)
	if stored != n || got != n {
		t.Fatalf("%d spans stored, %d judged, of %d", stored, got, n)
	}
}

// TestOversizeSpanAtTheFront: a span bigger than the kafka exporter's max_message_bytes (1 MB)
// cannot cross to the members; the other traces of its request do. The trace store, which the
// front sends to directly, gets it too.
func TestOversizeSpanAtTheFront(t *testing.T) {
	tr := startTier(t, tierOptions{members: 2, keySharing: true})
	td, _ := scenarios.S2()
	n := td.SpanCount()
	big := td.ResourceSpans().AppendEmpty()
	td.ResourceSpans().At(0).Resource().CopyTo(big.Resource())
	sp := big.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID([16]byte{0xb1, 0x9})
	sp.SetSpanID([8]byte{1})
	sp.SetName("big")
	sp.SetStartTimestamp(1)
	sp.SetEndTimestamp(2)
	sp.Attributes().PutStr("payload", strings.Repeat("x", 1_500_000))
	tr.send(t, td)
	stored := tr.waitStore(t, n+1, 10*time.Second)
	got := tr.settle(t, n+1, 5*time.Second) // S2 is judged within it; the big span never
	t.Logf("oversize span: %d of %d spans judged (S2 whole, the 1.5 MB span refused by the front's kafka exporter); %d in the trace store", got, n+1, stored)
	if got != n {
		t.Fatalf("%d spans judged, want S2's %d", got, n)
	}
	if stored != n+1 {
		t.Fatalf("%d spans in the trace store, want %d (the big one too)", stored, n+1)
	}
}
