package sim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// flakyExporter stores spans in an in-memory exporter but fails some export calls: every
// failEvery-th call loses its spans, and the first call with more than one span is a partial
// success that stores all but one (the wording of the OTLP exporters). It counts what it lost.
type flakyExporter struct {
	*tracetest.InMemoryExporter
	failEvery int
	delay     time.Duration

	mu                 sync.Mutex
	calls              int
	failed, rejected   int
	partialSuccessSent bool
}

func (e *flakyExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	time.Sleep(e.delay)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	switch {
	case e.failEvery > 0 && e.calls%e.failEvery == 0:
		e.failed += len(spans)
		return errors.New("rpc error: code = Unavailable desc = connection refused")
	case e.failEvery > 0 && !e.partialSuccessSent && len(spans) > 1:
		e.partialSuccessSent = true
		e.rejected++
		_ = e.InMemoryExporter.ExportSpans(ctx, spans[1:])
		return fmt.Errorf("OTLP partial success: %s (%d spans rejected)", "span 0 is malformed", 1)
	}
	return e.InMemoryExporter.ExportSpans(ctx, spans)
}

// TestExportCountsEverySpan: with an exporter that takes everything, every span that ended was
// exported, nothing is lost and Run reports no loss.
func TestExportCountsEverySpan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a short simulation")
	}
	exp := tracetest.NewInMemoryExporter()
	tr, err := runBounded(shortOptions(Blind, exp))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	e := tr.Export
	if e == nil {
		t.Fatal("no export counts")
	}
	n := len(exp.GetSpans())
	if n == 0 || e.Ended != n || e.Exported != n || e.Lost() != 0 || !e.Complete() {
		t.Errorf("export %s, want ended = exported = %d spans the exporter received, nothing lost", e, n)
	}
}

// TestExportFailuresAreFlagged: spans in failed export calls, and spans a partial success
// rejected, are counted as lost, and Run says so with SpansLostError: a comparison with the
// collector must not report a verdict mismatch then.
func TestExportFailuresAreFlagged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a short simulation")
	}
	exp := &flakyExporter{InMemoryExporter: tracetest.NewInMemoryExporter(), failEvery: 3}
	o := shortOptions(Blind, nil)
	o.Exporter = exp
	tr, lost := runLost(t, o, "")
	e := tr.Export
	if e == nil || lost.Export != *e {
		t.Fatalf("error counts %+v, truth %+v", lost.Export, e)
	}
	exp.mu.Lock()
	failed, rejected, calls := exp.failed, exp.rejected, exp.calls
	exp.mu.Unlock()
	received := len(exp.GetSpans())
	t.Logf("export %s; %d calls", e, calls)
	if failed == 0 || rejected != 1 {
		t.Fatalf("the exporter failed %d spans and rejected %d: the test shows nothing", failed, rejected)
	}
	if e.Failed != failed || e.Rejected != rejected || e.Exported != received || e.Dropped != 0 {
		t.Errorf("export %s, want failed=%d rejected=%d exported=%d dropped=0", e, failed, rejected, received)
	}
	if e.Ended != received+failed+rejected || e.Lost() != failed+rejected || e.Errors == 0 || e.Complete() {
		t.Errorf("export %s: want ended = %d received + %d failed + %d rejected, all of them but the received lost", e, received, failed, rejected)
	}
}

// TestExportQueueDropsAreFlagged: a BatchSpanProcessor whose queue is full drops the spans that
// end meanwhile, without telling anyone; the simulator counts them (ended, never handed to the
// exporter) and flags the run.
func TestExportQueueDropsAreFlagged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a short simulation")
	}
	exp := &flakyExporter{InMemoryExporter: tracetest.NewInMemoryExporter(), delay: 300 * time.Millisecond}
	o := shortOptions(Blind, nil)
	o.Exporter = exp
	o.ExportQueueSize = 1
	tr, _ := runLost(t, o, " (a queue of 1 behind a slow exporter)")
	e := tr.Export
	received := len(exp.GetSpans())
	t.Logf("export %s", e)
	if e.Dropped == 0 || e.Exported != received || e.Failed != 0 || e.Dropped != e.Ended-received || e.Lost() != e.Dropped {
		t.Errorf("export %s, want exported = %d received, the %d others dropped", e, received, e.Ended-received)
	}
}
