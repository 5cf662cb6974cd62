package scaleout

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"

	"github.com/orphanwatch/orphanwatch/cmd/fanoutsim/sim"
)

// simTraces runs the fan-out simulator once (sim.ShortOptions: seed 7, blind retry loops, a few
// seconds) and returns the OTLP batches it exported, to replay the same traces to every tier.
func simTraces(t *testing.T) []ptrace.Traces {
	t.Helper()
	var mu sync.Mutex
	var out []ptrace.Traces
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		td := ptrace.NewTraces()
		req.Traces().CopyTo(td)
		mu.Lock()
		out = append(out, td)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := ptraceotlp.NewExportResponse().MarshalProto()
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL), otlptracehttp.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	o := sim.ShortOptions(sim.Blind)
	o.Exporter = exp
	o.Log = io.Discard
	if _, err := sim.Run(ctx, o); err != nil {
		t.Fatal(err)
	}
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return out
}
