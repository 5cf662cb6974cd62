package bench

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestMix checks the benchmark mix is what the docs say: about 40 spans a trace, every kind of
// trace present, and the orphan processor finds orphaned work in it. No timing is asserted.
func TestMix(t *testing.T) {
	m := BuildMix(400, tracesPerBatch, mixSeed)
	per := float64(m.Spans) / float64(m.Traces)
	if per < 35 || per > 45 {
		t.Errorf("%.1f spans per trace, want about 40", per)
	}
	for _, s := range MixShares {
		if m.ByKind[s.Kind] == 0 {
			t.Errorf("no %s traces", s.Kind)
		}
	}
	if m.Retries == 0 || m.ModelCalls == 0 {
		t.Errorf("retries %d, model calls %d", m.Retries, m.ModelCalls)
	}
	out := annotate(t, m.Batches)
	counts := map[string]int{}
	n := 0
	for _, td := range out {
		n += td.SpanCount()
		forEachSpan(td, func(sp ptrace.Span) {
			if v, ok := sp.Attributes().Get("orphanwatch.liveness"); ok {
				counts["liveness="+v.Str()]++
			}
			if v, ok := sp.Attributes().Get("orphanwatch.run.outcome"); ok {
				counts["outcome="+v.Str()]++
			}
		})
	}
	if n != m.Spans {
		t.Errorf("processor passed on %d spans, want %d", n, m.Spans)
	}
	for _, k := range []string{"liveness=live", "liveness=orphaned", "liveness=unknown", "outcome=success",
		"outcome=delivered_to_nobody", "outcome=cancelled", "outcome=retryable_failure", "outcome=unknown_root"} {
		if counts[k] == 0 {
			t.Errorf("no span with %s in %v", k, counts)
		}
	}
	t.Logf("%d traces, %d spans (%.1f a trace), kinds %v, %d retries, %d model calls; verdicts %v",
		m.Traces, m.Spans, per, m.ByKind, m.Retries, m.ModelCalls, counts)
}

func forEachSpan(td ptrace.Traces, f func(ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				f(spans.At(k))
			}
		}
	}
}
