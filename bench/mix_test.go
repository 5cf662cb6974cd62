package bench

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
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
		tdwalk.Spans(td, func(sp ptrace.Span) {
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

// TestSpreadHeld checks the spread mix and the held benchmark's path: every span of the mix
// arrives once, each trace over spreadParts batches with its root in the last, and the
// processor holding traces on its own clock (heldOrphan) writes on every span the verdict the
// processor deciding whole traces at once writes, but for the spans of traces whose root never
// comes (root_missing), which leave deferred after decision_wait.
func TestSpreadHeld(t *testing.T) {
	m := BuildMix(200, tracesPerBatch, mixSeed)
	spread := Spread(m, spreadParts)
	if len(spread) != len(m.Batches)+spreadParts-1 {
		t.Fatalf("%d spread batches from %d", len(spread), len(m.Batches))
	}
	type seen struct{ first, root, batches int }
	traces := map[pcommon.TraceID]*seen{}
	n := 0
	for bi, td := range spread {
		tdwalk.Spans(td, func(sp ptrace.Span) {
			n++
			s := traces[sp.TraceID()]
			if s == nil {
				s = &seen{first: bi, root: -1}
				traces[sp.TraceID()] = s
			}
			s.batches = bi - s.first + 1
			if sp.ParentSpanID().IsEmpty() {
				s.root = bi
			}
		})
	}
	if n != m.Spans {
		t.Fatalf("spread mix has %d spans, want %d", n, m.Spans)
	}
	for id, s := range traces {
		if s.batches != spreadParts {
			t.Errorf("trace %s arrives over %d batches, want %d", id, s.batches, spreadParts)
		}
		if s.root >= 0 && s.root != s.first+spreadParts-1 {
			t.Errorf("trace %s: root in batch %d, not the last of its %d", id, s.root-s.first, spreadParts)
		}
	}

	key := func(sp ptrace.Span) string {
		return sp.TraceID().String() + "/" + sp.SpanID().String() + "/" + strings.ToLower(sp.Kind().String()) + "/" + sp.Name()
	}
	// verdicts: every span's orphanwatch.* attributes, with the outcomes of runs carried for it
	// (an orphanwatch.verdict event naming it: a keyed run left open until its run_timeout).
	verdicts := func(out []ptrace.Traces) (map[string]string, map[string]bool) {
		raws, deferred := map[string][]map[string]any{}, map[string]bool{}
		carried := map[string]map[string]any{}
		for _, td := range out {
			tdwalk.Spans(td, func(sp ptrace.Span) {
				for i := range sp.Events().Len() {
					ev := sp.Events().At(i)
					if ev.Name() != verdict.EventVerdict {
						continue
					}
					a := ev.Attributes()
					if _, part := a.Get(verdict.AttrLiveness); part {
						continue // a whole verdict: its span left deferred, not compared
					}
					get := func(k string) string { v, _ := a.Get(k); return v.AsString() }
					k := get(verdict.AttrEventTraceID) + "/" + get(verdict.AttrEventSpanID) + "/" + get(verdict.AttrEventSpanKind) + "/" + get(verdict.AttrEventSpanName)
					carried[k] = map[string]any{}
					for _, name := range []string{verdict.AttrRunOutcome, verdict.AttrRunAttempts, verdict.AttrRunResult} {
						if v, ok := a.Get(name); ok {
							carried[k][name] = v.AsRaw()
						}
					}
				}
				if _, carrier := sp.Attributes().Get(verdict.AttrCarrier); carrier {
					return
				}
				if _, d := sp.Attributes().Get(verdict.AttrDeferred); d {
					deferred[sp.TraceID().String()] = true
					return
				}
				raw := map[string]any{}
				sp.Attributes().Range(func(k string, val pcommon.Value) bool {
					if strings.HasPrefix(k, "orphanwatch.") {
						raw[k] = val.AsRaw()
					}
					return true
				})
				raws[key(sp)] = append(raws[key(sp)], raw)
			})
		}
		v := map[string]string{}
		for k, rs := range raws {
			for _, raw := range rs {
				for name, x := range carried[k] {
					raw[name] = x
				}
				b, _ := json.Marshal(raw)
				v[k] += string(b)
			}
		}
		return v, deferred
	}
	want, _ := verdicts(annotate(t, m.Batches))
	sink := new(consumertest.TracesSink)
	newHeldOrphan(m).run(t, Clone(spread), sink)
	got, deferred := verdicts(sink.AllTraces())
	for id := range deferred {
		if traces[pcommon.TraceID(mustTraceID(t, id))].root >= 0 {
			t.Errorf("trace %s has a root but left deferred", id)
		}
	}
	if len(deferred) == 0 {
		t.Error("no trace left deferred: the mix has root_missing traces")
	}
	checked := 0
	for k, v := range got {
		checked++
		if want[k] != v {
			t.Errorf("span %s: held %s, at once %s", k, v, want[k])
		}
	}
	if checked < m.Spans*9/10 {
		t.Errorf("only %d of %d spans compared", checked, m.Spans)
	}
}

func mustTraceID(t *testing.T, s string) [16]byte {
	var id [16]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 16 {
		t.Fatalf("bad trace ID %q", s)
	}
	copy(id[:], b)
	return id
}
