package orphanprocessor

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// fuzzSeeds returns the scenario traces and the hostile batch, as OTLP JSON and protobuf.
func fuzzSeeds(f *testing.F) (jsons, protos [][]byte) {
	files, _ := filepath.Glob(filepath.Join(scenarioDir, "s*", "trace.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		jsons = append(jsons, b)
	}
	hb := hostileBatch()
	// Keep the seed small: drop the 1 MB attribute.
	hb.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		sp := rs.ScopeSpans().At(0).Spans().At(0)
		_, big := sp.Attributes().Get("payload")
		return big
	})
	if b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(hb); err == nil {
		jsons = append(jsons, b)
	}
	for _, j := range jsons {
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(j)
		if err != nil {
			continue
		}
		if b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td); err == nil {
			protos = append(protos, b)
		}
	}
	return jsons, protos
}

// checkPassThrough runs td through a processor (decision_wait 0, and once more held until
// Shutdown) and fails unless the spans out equal the spans in, apart from verdicts.
func checkPassThrough(t *testing.T, td ptrace.Traces) {
	want := canonicalSpans(t, td)
	for _, wait := range []time.Duration{0, time.Hour} {
		cfg := createDefaultConfig().(*Config)
		cfg.DecisionWait = wait
		cfg.Limits.MaxSpansPerTrace = 64 // exercise early decisions too
		sink := new(consumertest.TracesSink)
		p, err := newOrphanProcessor(nopSettings(), cfg, sink)
		if err != nil {
			t.Fatal(err)
		}
		in := ptrace.NewTraces()
		td.CopyTo(in)
		if err := p.ConsumeTraces(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := canonicalSpans(t, sink.AllTraces()...)
		if len(got) != len(want) {
			t.Fatalf("wait %s: %d spans in, %d out", wait, len(want), len(got))
		}
		for i := range got {
			if got[i] != want[i] {
				gd, _ := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces([]byte(got[i]))
				wd, _ := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces([]byte(want[i]))
				gj, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(gd)
				wj, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(wd)
				t.Fatalf("wait %s: a span changed beyond its verdict attributes:\nin:  %.2000s\nout: %.2000s", wait, wj, gj)
			}
		}
	}
}

// FuzzProcessorOTLPJSON feeds arbitrary OTLP/JSON through the processor.
func FuzzProcessorOTLPJSON(f *testing.F) {
	jsons, _ := fuzzSeeds(f)
	for _, b := range jsons {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		withWatchdog(t, func() {
			td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
			if err != nil {
				return
			}
			checkPassThrough(t, td)
		})
	})
}

// withWatchdog fails with every goroutine's stack if f runs longer than 20 s: the fuzzer
// itself has no time limit per input, and a hang would otherwise look like a slow fuzzer.
func withWatchdog(t *testing.T, f func()) {
	done := make(chan struct{})
	timer := time.AfterFunc(20*time.Second, func() {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		panic("input took longer than 20s:\n" + string(buf[:n]))
	})
	defer timer.Stop()
	f()
	close(done)
}

// FuzzProcessorOTLPProto feeds arbitrary OTLP protobuf through the processor.
func FuzzProcessorOTLPProto(f *testing.F) {
	_, protos := fuzzSeeds(f)
	for _, b := range protos {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		withWatchdog(t, func() {
			td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(b)
			if err != nil {
				return
			}
			checkPassThrough(t, td)
		})
	})
}
