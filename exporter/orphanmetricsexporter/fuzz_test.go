package orphanmetricsexporter

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// FuzzRecordOTLP feeds arbitrary OTLP protobuf (seeded with the annotated scenario outputs'
// inputs) to the recorder and checks that it does not panic and that what it serves still
// parses as Prometheus text.
func FuzzRecordOTLP(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "scenarios", "s*", "trace.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
		if err != nil {
			f.Fatal(err)
		}
		annotateForFuzz(td)
		p, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(b)
		if err != nil {
			return
		}
		rec, err := NewRecorder(NewDefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		rec.Record(td)
		var buf bytes.Buffer
		if err := rec.WriteText(&buf); err != nil {
			t.Fatalf("writing metrics: %v", err)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		if _, err := parser.TextToMetricFamilies(bytes.NewReader(buf.Bytes())); err != nil {
			t.Fatalf("served text does not parse: %v\n%s", err, buf.String())
		}
	})
}

// annotateForFuzz writes a spread of verdict attributes on the spans so the seeds reach every
// metric.
func annotateForFuzz(td ptrace.Traces) {
	i := 0
	for r := range td.ResourceSpans().Len() {
		rs := td.ResourceSpans().At(r)
		for s := range rs.ScopeSpans().Len() {
			spans := rs.ScopeSpans().At(s).Spans()
			for k := range spans.Len() {
				a := spans.At(k).Attributes()
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
			}
		}
	}
}
