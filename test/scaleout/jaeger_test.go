package scaleout

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jaegertracing/jaeger-idl/proto-gen/api_v2"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/translator/jaeger"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// TestJaegerThroughTheFront: spans sent to the front tier's jaeger receiver (Jaeger's gRPC
// collector API) reach the trace store and the members, and are judged: S2's cancelled root and its run delivered
// to nobody.
func TestJaegerThroughTheFront(t *testing.T) {
	tr := startTier(t, tierOptions{members: 2, keySharing: true})
	td, _ := scenarios.S2()
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", tr.jaeger), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := api_v2.NewCollectorServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, b := range jaeger.ProtoFromTraces(td) {
		if _, err := client.PostSpans(ctx, &api_v2.PostSpansRequest{Batch: *b}); err != nil {
			t.Fatal(err)
		}
	}
	n := td.SpanCount()
	if got := tr.waitStore(t, n, 30*time.Second); got != n {
		t.Fatalf("%d of %d spans in the trace store", got, n)
	}
	judgedN := tr.settle(t, n, 30*time.Second)
	if judgedN != n {
		t.Errorf("%d of %d spans judged", judgedN, n)
	}
	sum := tr.orphanSeries(t)
	for _, k := range []string{
		"orphanwatch_roots_total{end_reason=cancelled,service_name=gateway}",
		"orphanwatch_runs_total{operation=chat gpt-4o,outcome=delivered_to_nobody,service_name=researcher}",
	} {
		if sum[k] != 1 {
			t.Errorf("%s = %v, want 1", k, sum[k])
		}
	}
	t.Logf("Jaeger gRPC in: %d spans, %d judged, %d series", n, judgedN, len(sum))
}
