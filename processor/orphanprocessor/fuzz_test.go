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

// checkPassThrough runs td through a processor (decision_wait 0; held until Shutdown; and
// each resource's spans in a release of their own, deferred, carried and kept open between
// releases) and fails unless the spans out equal the spans in, apart from verdicts (attributes,
// carried verdict events, carrier spans).
func checkPassThrough(t *testing.T, td ptrace.Traces) {
	want := canonicalSpans(t, td)
	for _, mode := range []struct {
		wait  time.Duration
		split bool
	}{{0, false}, {time.Hour, false}, {time.Hour, true}} {
		wait := mode.wait
		cfg := createDefaultConfig().(*Config)
		cfg.DecisionWait = wait
		cfg.Limits.MaxSpansPerTrace = 64 // exercise early decisions too
		cfg.Limits.MaxPendingSpans = 16  // and evictions of what waits
		cfg.Limits.MaxOpenRuns = 4
		sink := new(consumertest.TracesSink)
		p, err := newOrphanProcessor(nopSettings(), cfg, sink)
		if err != nil {
			t.Fatal(err)
		}
		in := ptrace.NewTraces()
		td.CopyTo(in)
		batches := []ptrace.Traces{in}
		if mode.split {
			batches = nil
			for i := 0; i < in.ResourceSpans().Len(); i++ {
				b := ptrace.NewTraces()
				in.ResourceSpans().At(i).CopyTo(b.ResourceSpans().AppendEmpty())
				batches = append(batches, b)
			}
		}
		for _, b := range batches {
			if err := p.ConsumeTraces(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			if mode.split {
				if err := p.release(context.Background(), p.due(time.Now().Add(48*time.Hour))); err != nil {
					t.Fatal(err)
				}
				p.sweep(context.Background(), time.Now().Add(time.Duration(len(batches))*time.Second))
			}
		}
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := canonicalSpans(t, sink.AllTraces()...)
		if len(got) != len(want) {
			t.Fatalf("wait %s (split %v): %d spans in, %d out", wait, mode.split, len(want), len(got))
		}
		for i := range got {
			if got[i] != want[i] {
				gd, _ := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces([]byte(got[i]))
				wd, _ := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces([]byte(want[i]))
				gj, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(gd)
				wj, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(wd)
				t.Fatalf("wait %s (split %v): a span changed beyond its verdict attributes:\nin:  %.2000s\nout: %.2000s", wait, mode.split, wj, gj)
			}
		}
	}
}

// FuzzProcessorOTLPJSON feeds arbitrary OTLP/JSON through the processor.
func FuzzProcessorOTLPJSON(f *testing.F) {
	jsons, _ := fuzzSeeds(f)
	fuzzPassThrough(f, jsons, &ptrace.JSONUnmarshaler{})
}

// fuzzPassThrough seeds f with seeds and checks that every input u reads passes through the
// processor (checkPassThrough); inputs u cannot read are skipped.
func fuzzPassThrough(f *testing.F, seeds [][]byte, u ptrace.Unmarshaler) {
	for _, b := range seeds {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		withWatchdog(t, func() {
			td, err := u.UnmarshalTraces(b)
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
	fuzzPassThrough(f, protos, &ptrace.ProtoUnmarshaler{})
}
