package orphanmetrics

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
)

// FuzzRecordOTLP feeds arbitrary OTLP protobuf (seeded with the annotated scenario outputs'
// inputs) to the recorder and checks that it does not panic and that what it serves still
// parses as Prometheus text.
func FuzzRecordOTLP(f *testing.F) {
	for _, td := range scenarioSeeds(f) {
		annotateForFuzz(td)
		addSeed(f, td)
		// The same verdicts carried as events (time model v2).
		carryForFuzz(td)
		addSeed(f, td)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(b)
		if err != nil {
			return
		}
		rec, err := NewRecorder(NewDefaultSettings())
		if err != nil {
			t.Fatal(err)
		}
		rec.Record(td)
		requireServedParses(t, rec)
	})
}

// annotateForFuzz writes a spread of verdict attributes on the spans so the seeds reach every
// metric.
func annotateForFuzz(td ptrace.Traces) {
	i := 0
	tdwalk.Spans(td, func(sp ptrace.Span) {
		a := sp.Attributes()
		switch i % 4 {
		case 0:
			a.PutStr("orphanwatch.liveness", "orphaned")
			a.PutDouble("orphanwatch.after_gone", 1.5)
			a.PutBool("orphanwatch.started_after_gone", true)
			a.PutStr("orphanwatch.caller.service", "gateway")
		case 1:
			a.PutStr("orphanwatch.liveness", "live")
			a.PutInt("orphanwatch.attempt", 2)
			a.PutStr("orphanwatch.run.outcome", "delivered_to_nobody")
		case 2:
			a.PutBool("orphanwatch.detached", true)
			a.PutStr("orphanwatch.root.end_reason", "cancelled")
		case 3:
			a.PutStr("orphanwatch.liveness", "unknown")
			a.PutStr("orphanwatch.spend.model", "gpt-4o")
			a.PutInt("orphanwatch.spend.input_tokens", 100)
			a.PutDouble("orphanwatch.spend.cost", 0.01)
		}
		i++
	})
}

// carryForFuzz moves the verdict attributes of every other span of a resource into an
// orphanwatch.verdict event on the resource's first span and marks the span deferred; every
// third event has malformed identity attributes.
func carryForFuzz(td ptrace.Traces) {
	n := 0
	for r := range td.ResourceSpans().Len() {
		rs := td.ResourceSpans().At(r)
		svc, _ := rs.Resource().Attributes().Get("service.name")
		for s := range rs.ScopeSpans().Len() {
			spans := rs.ScopeSpans().At(s).Spans()
			for k := 1; k < spans.Len(); k += 2 {
				span := spans.At(k)
				e := spans.At(0).Events().AppendEmpty()
				e.SetName("orphanwatch.verdict")
				e.SetTimestamp(span.EndTimestamp())
				ea := e.Attributes()
				span.Attributes().RemoveIf(func(name string, v pcommon.Value) bool {
					if !strings.HasPrefix(name, "orphanwatch.") {
						return false
					}
					v.CopyTo(ea.PutEmpty(name))
					return true
				})
				span.Attributes().PutBool("orphanwatch.verdict.deferred", true)
				if n++; n%3 == 0 {
					ea.PutInt("orphanwatch.span.trace_id", 1)
					ea.PutStr("orphanwatch.span.span_id", "zz")
					ea.PutStr("orphanwatch.span.kind", "SERVER")
					ea.PutDouble("orphanwatch.span.start_time_unix_nano", 1.5)
					continue
				}
				ea.PutStr("orphanwatch.span.trace_id", span.TraceID().String())
				ea.PutStr("orphanwatch.span.span_id", span.SpanID().String())
				ea.PutStr("orphanwatch.span.name", span.Name())
				ea.PutStr("orphanwatch.span.kind", strings.ToLower(span.Kind().String()))
				ea.PutInt("orphanwatch.span.start_time_unix_nano", int64(span.StartTimestamp()))
				if svc.Type() == pcommon.ValueTypeStr {
					ea.PutStr("service.name", svc.Str())
				}
			}
		}
	}
}

// FuzzObserveOTLP feeds arbitrary OTLP protobuf (seeded with the scenarios) to observe mode:
// it must not panic, must owe nothing after Shutdown, and what it serves must still parse as
// Prometheus text.
func FuzzObserveOTLP(f *testing.F) {
	for _, td := range scenarioSeeds(f) {
		addSeed(f, td)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(b)
		if err != nil {
			return
		}
		cfg := NewDefaultSettings()
		rec, err := NewRecorder(cfg)
		if err != nil {
			t.Fatal(err)
		}
		obs, err := NewObserving(cfg, rec, zap.NewNop(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		obs.Consume(td)
		obs.Shutdown()
		if obs.Observer().Owed() {
			t.Fatal("owes verdicts after Shutdown")
		}
		requireServedParses(t, rec)
	})
}

// scenarioSeeds reads the scenarios' inputs (testdata/scenarios/s*/trace.json).
func scenarioSeeds(f *testing.F) []ptrace.Traces {
	f.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "scenarios", "s*", "trace.json"))
	var out []ptrace.Traces
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, td)
	}
	return out
}

// addSeed adds td, as OTLP protobuf, to the seed corpus.
func addSeed(f *testing.F, td ptrace.Traces) {
	f.Helper()
	p, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(p)
}

// requireServedParses fails the test unless what rec serves parses as Prometheus text.
func requireServedParses(t *testing.T, rec *Recorder) {
	t.Helper()
	var buf bytes.Buffer
	if err := rec.WriteText(&buf); err != nil {
		t.Fatalf("writing metrics: %v", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := parser.TextToMetricFamilies(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("served text does not parse: %v\n%s", err, buf.String())
	}
}
