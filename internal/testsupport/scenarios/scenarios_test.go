package scenarios

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

var update = flag.Bool("update", false, "rewrite testdata/scenarios from the code")

const testdataDir = "../../../testdata/scenarios"

// TestGolden fails when the committed files differ from what the code generates.
// Regenerate with: go test ./internal/testsupport/scenarios -update
func TestGolden(t *testing.T) {
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := WriteFiles(testdataDir); err != nil {
			t.Fatal(err)
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		got, err := os.ReadFile(filepath.Join(testdataDir, n))
		if err != nil {
			t.Errorf("%s: %v (run go test ./internal/testsupport/scenarios -update)", n, err)
			continue
		}
		if !bytes.Equal(got, files[n]) {
			t.Errorf("%s differs from the generated content (run go test ./internal/testsupport/scenarios -update)", n)
		}
	}
	// No stale scenario directories.
	entries, err := os.ReadDir(testdataDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			if _, ok := files[e.Name()+"/expected.json"]; !ok {
				t.Errorf("stale directory %s", e.Name())
			}
		}
	}
}

// TestFilesRoundTrip reads the committed files back and compares them with the code.
func TestFilesRoundTrip(t *testing.T) {
	for _, sc := range All() {
		if sc.Dir == "" {
			continue
		}
		td, exp := sc.Build()
		got, err := LoadTraces(filepath.Join(testdataDir, sc.Dir, "trace.json"))
		if err != nil {
			t.Fatalf("%s: %v", sc.ID, err)
		}
		if got.SpanCount() != td.SpanCount() || got.SpanCount() != len(exp.Spans) {
			t.Errorf("%s: %d spans in file, %d built, %d expected", sc.ID, got.SpanCount(), td.SpanCount(), len(exp.Spans))
		}
		var m ptrace.ProtoMarshaler
		a, _ := m.MarshalTraces(td)
		b, _ := m.MarshalTraces(got)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: trace.json does not decode to the built traces", sc.ID)
		}
		ex, err := LoadExpected(filepath.Join(testdataDir, sc.Dir, "expected.json"))
		if err != nil {
			t.Fatalf("%s: %v", sc.ID, err)
		}
		if ex.Scenario != sc.ID || len(ex.Spans) != len(exp.Spans) || len(ex.Metrics) != len(exp.Metrics) {
			t.Errorf("%s: expected.json does not match", sc.ID)
		}
	}
}

type flat struct {
	span    ptrace.Span
	service string
}

func spansOf(td ptrace.Traces) map[string][]flat {
	out := map[string][]flat{}
	for _, r := range flatten(td) {
		k := key(r.span.TraceID(), r.span.SpanID())
		out[k] = append(out[k], flat{r.span, r.service})
	}
	return out
}

// TestExpectedCoversEverySpan: expected.json names every span exactly once (S13's duplicate
// span ID twice), with the right service and name, and only orphanwatch.* attributes.
func TestExpectedCoversEverySpan(t *testing.T) {
	for _, sc := range All() {
		td, exp := sc.Build()
		spans := spansOf(td)
		n := 0
		for _, es := range exp.Spans {
			q := spans[es.TraceID+"/"+es.SpanID]
			if len(q) == 0 {
				t.Errorf("%s: expected span %s/%s not in traces", sc.ID, es.TraceID, es.SpanID)
				continue
			}
			f := q[0]
			spans[es.TraceID+"/"+es.SpanID] = q[1:]
			n++
			if f.service != es.Service || f.span.Name() != es.Name {
				t.Errorf("%s: span %s is %s %q, expected.json says %s %q", sc.ID, es.SpanID, f.service, f.span.Name(), es.Service, es.Name)
			}
			for k := range es.Attributes {
				if len(k) < 12 || k[:12] != "orphanwatch." {
					t.Errorf("%s: span %s: attribute %s is not orphanwatch.*", sc.ID, es.SpanID, k)
				}
			}
		}
		if n != td.SpanCount() {
			t.Errorf("%s: %d spans, %d expectations", sc.ID, td.SpanCount(), n)
		}
	}
}

// recordsCancel is this test's own reading of "recorded the cancellation": HTTP 499, or an
// error.type or exception.type (attribute or event) that speaks of a cancellation.
func recordsCancel(sp ptrace.Span) bool {
	a := sp.Attributes()
	if v, ok := a.Get(AttrHTTPStatus); ok && v.Int() == 499 {
		return true
	}
	cancel := func(s string) bool {
		s = strings.ToLower(s)
		return strings.Contains(s, "cancel")
	}
	if v, ok := a.Get(AttrErrorType); ok && cancel(v.AsString()) {
		return true
	}
	for i := range sp.Events().Len() {
		if v, ok := sp.Events().At(i).Attributes().Get("exception.type"); ok && cancel(v.AsString()) {
			return true
		}
	}
	return false
}

func num(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	panic(fmt.Sprintf("not a number: %T", v))
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestVerdictsFollowFromTimeline checks the hand-written liveness verdicts against the
// declared gone time: live iff ended by gone (+250 ms across services), after_gone = end -
// gone, started_after_gone = started after gone (and that no expectation depends on whether
// the tolerance applies to the start).
func TestVerdictsFollowFromTimeline(t *testing.T) {
	for _, sc := range All() {
		td, exp := sc.Build()
		spans := spansOf(td)
		for _, es := range exp.Spans {
			l, ok := es.Attributes[VLiveness]
			if !ok || (l != "live" && l != "orphaned") {
				continue
			}
			if _, root := es.Attributes[VRootEndReason]; root {
				continue // a root is live by definition (its end is the gone time or after it)
			}
			gone, ok := exp.Gone[es.TraceID]
			rootService := exp.RootService[es.TraceID]
			if !ok {
				t.Errorf("%s: span %s judged but no gone time declared for its trace", sc.ID, es.SpanID)
				continue
			}
			f := spans[es.TraceID+"/"+es.SpanID][0]
			// Under another root of a trace with several: that root's gone time.
			for p := &f; p != nil; {
				if g, ok := exp.Subtree[p.span.SpanID().String()]; ok {
					gone, rootService = g.Gone, g.Service
					break
				}
				q := spans[es.TraceID+"/"+p.span.ParentSpanID().String()]
				p = nil
				if len(q) > 0 {
					p = &q[0]
				}
			}
			start := float64(int64(f.span.StartTimestamp())-T0Unix*1e9) / 1e9
			end := float64(int64(f.span.EndTimestamp())-T0Unix*1e9) / 1e9
			tol := 0.0
			if f.service != rootService {
				tol = DefaultSkewSec
			}
			// A span that recorded the cancellation itself and ended within the grace (1 s)
			// noticed: live.
			wantLive := end <= gone+tol+1e-12 || recordsCancel(f.span) && end <= gone+1+1e-12
			if (l == "live") != wantLive {
				t.Errorf("%s: span %s %s ends %.3f, gone %.3f, tol %.3f, but expected %s", sc.ID, es.SpanID, f.span.Name(), end, gone, tol, l)
			}
			if l == "orphaned" {
				if ag, ok := es.Attributes[VAfterGone]; !ok || !near(num(ag), end-gone) {
					t.Errorf("%s: span %s after_gone %v, want %.6f", sc.ID, es.SpanID, es.Attributes[VAfterGone], end-gone)
				}
			} else if _, ok := es.Attributes[VAfterGone]; ok {
				t.Errorf("%s: live span %s has after_gone", sc.ID, es.SpanID)
			}
			sag, ok := es.Attributes[VStartedAfterGone].(bool)
			if !ok {
				t.Errorf("%s: span %s lacks started_after_gone", sc.ID, es.SpanID)
			}
			if exact, tolerant := start > gone, start > gone+tol; exact != tolerant || sag != exact {
				t.Errorf("%s: span %s starts %.3f, gone %.3f: started_after_gone %v (exact %v, with tolerance %v)", sc.ID, es.SpanID, start, gone, sag, exact, tolerant)
			}
		}
	}
}

// TestVerdictShape checks the structural rules of docs/verdicts.md on the expectations.
func TestVerdictShape(t *testing.T) {
	for _, sc := range All() {
		td, exp := sc.Build()
		spans := spansOf(td)
		for _, es := range exp.Spans {
			if es.Attributes == nil {
				continue
			}
			f := spans[es.TraceID+"/"+es.SpanID][0]
			a := es.Attributes
			kind := f.span.Kind()
			_, genai := f.span.Attributes().Get(AttrGenAIOperation)
			_, tokens := f.span.Attributes().Get(AttrGenAIInputTokens)
			_, tool := f.span.Attributes().Get(attrToolName)
			_, aiTool := f.span.Attributes().Get("ai.toolCall.name")
			isRootSpan := f.span.ParentSpanID().IsEmpty()
			_, msgID := f.span.Attributes().Get(attrMsgID)
			_, offset := f.span.Attributes().Get(attrKafkaOffset)
			// A delivery of a known message is an attempt, even where it begins its trace; a
			// SERVER span never is (DESIGN.md "Words": attempt, run).
			delivery := kind == Consumer && (msgID || offset)
			isAttempt := delivery || !isRootSpan && kind != Server && (kind == Client || kind == Producer || genai || tokens || tool || aiTool)
			if _, ok := a[VAttempt]; ok != isAttempt {
				t.Errorf("%s: span %s %s: attempt attribute %v, attempt span %v", sc.ID, es.SpanID, es.Name, ok, isAttempt)
			}
			_, o := a[VRunOutcome]
			_, n := a[VRunAttempts]
			_, r := a[VRunResult]
			if o != n || o != r {
				t.Errorf("%s: span %s: run.outcome/attempts/result not together", sc.ID, es.SpanID)
			}
			// The closing attempt's number equals the run's attempt count, unless earlier
			// attempts are missing from the trace: an explicit resend count then numbers it
			// higher (S13's resend_count "1" with no first try); or the run went on after it, the
			// first that succeeded: a redelivery of its message, a re-send of its key (DESIGN.md
			// "Words": run, the final attempt).
			_, keyed := f.span.Attributes().Get(AttrIdempotencyKey)
			if o && num(a[VRunAttempts]) > num(a[VAttempt]) && !raced(spans, f.span) && !delivery && !keyed {
				t.Errorf("%s: span %s: run.attempts %v on attempt %v", sc.ID, es.SpanID, a[VRunAttempts], a[VAttempt])
			}
			_, det := a[VDetached]
			_, liv := a[VLiveness]
			if det == liv {
				t.Errorf("%s: span %s: exactly one of liveness and detached expected", sc.ID, es.SpanID)
			}
			// Every root has an end reason; the root of detached work has "detached".
			why, reason := a[VRootEndReason]
			isRoot := f.span.ParentSpanID().IsEmpty()
			if reason != isRoot || reason && (why == DetachedRoot) != det {
				t.Errorf("%s: span %s: root end reason %v, root %v, detached %v", sc.ID, es.SpanID, why, isRoot, det)
			}
			if _, ok := a[VCallerService]; ok && (a[VLiveness] != "orphaned" || (kind != Server && kind != Consumer)) {
				t.Errorf("%s: span %s: caller.service on a span that is not an orphaned SERVER/CONSUMER", sc.ID, es.SpanID)
			}
			if op, _ := f.span.Attributes().Get(AttrGenAIOperation); genai && op.Str() == "chat" {
				if _, ok := a[VSpendModel]; !ok {
					t.Errorf("%s: model call %s without spend.model", sc.ID, es.SpanID)
				}
			}
		}
	}
}

// deriveMetrics is a minimal reading of the exporter table of docs/verdicts.md, applied to
// the expected verdicts: it cross-checks the hand-written metric values.
func deriveMetrics(td ptrace.Traces, exp Expected) map[string]float64 {
	spans := spansOf(td)
	out := map[string]float64{}
	add := func(name string, v float64, labels ...string) {
		l := map[string]string{}
		for i := 0; i < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		out[name+"{"+LabelKey(l)+"}"] += v
	}
	for _, es := range exp.Spans {
		if es.Attributes == nil {
			continue
		}
		a := es.Attributes
		f := spans[es.TraceID+"/"+es.SpanID][0]
		svc := f.service
		liveness, _ := a[VLiveness].(string)
		if a[VDetached] == true {
			liveness = LDetached
		}
		if o, ok := a[VRunOutcome]; ok {
			add(MRuns, 1, "service_name", svc, "operation", operation(f.span), "outcome", o.(string))
		}
		if _, ok := a[VAttempt]; ok {
			al := liveness
			if liveness == LOrphaned {
				al = LOutlivedRoot
				if a[VStartedAfterGone] == true {
					al = LStartedAfterGone
				}
			}
			add(MAttempts, 1, "service_name", svc, "operation", operation(f.span), "liveness", al)
			// A nested attempt's seconds are the enclosing attempt's.
			if a[VSpendNested] != true {
				d := float64(int64(f.span.EndTimestamp())-int64(f.span.StartTimestamp())) / 1e9
				if ag, ok := a[VAfterGone]; ok && liveness == LOrphaned && num(ag) < d {
					// Only the seconds after the gone time are orphaned.
					add(MSpendSeconds, d-num(ag), "service_name", svc, "liveness", LLive)
					d = num(ag)
				}
				add(MSpendSeconds, d, "service_name", svc, "liveness", liveness)
			}
		}
		if r, ok := a[VRootEndReason]; ok {
			add(MRoots, 1, "service_name", svc, "end_reason", r.(string))
		}
		if m, ok := a[VSpendModel]; ok {
			model := m.(string)
			add(MModelCalls, 1, "service_name", svc, "model", model, "liveness", liveness)
			if v, ok := a[VSpendInput]; ok {
				add(MSpendTokens, num(v), "service_name", svc, "model", model, "direction", "input", "liveness", liveness)
			}
			if v, ok := a[VSpendOutput]; ok {
				add(MSpendTokens, num(v), "service_name", svc, "model", model, "direction", "output", "liveness", liveness)
			}
			if v, ok := a[VSpendCost]; ok {
				add(MSpendCost, num(v), "service_name", svc, "model", model, "liveness", liveness)
			}
		}
		if v, ok := a[VAfterGone]; ok {
			add(MOutliveCount, 1, "service_name", svc)
			add(MOutliveSum, num(v), "service_name", svc)
		}
		if c, ok := a[VCallerService]; ok {
			add(MUnpropagated, 1, "caller_service", c.(string), "callee_service", svc)
		}
		if r, ok := a[VCancelReach]; ok {
			add(MReachCount, 1, "service_name", svc)
			add(MReachSum, num(r), "service_name", svc)
			add(MDepthCount, 1, "service_name", svc)
			add(MDepthSum, num(a[VOrphanedDepth]), "service_name", svc)
		}
	}
	return out
}

// operation is the exporter's operation label (the semantic conventions' span name) for the
// spans the scenarios build: an HTTP CLIENT span is "METHOD host:port", the port left out when
// it is the default of url.full's scheme; the builders name every other span as the
// conventions do already.
func operation(sp ptrace.Span) string {
	a := sp.Attributes()
	m, ok := a.Get(AttrHTTPMethod)
	if old, isOld := a.Get("http.method"); !ok && isOld && sp.Kind() == ptrace.SpanKindClient {
		// The older conventions (Envoy's, Zipkin's): http.method and http.url.
		u, _ := a.Get("http.url")
		host := strings.TrimPrefix(strings.TrimPrefix(u.Str(), "http://"), "https://")
		if i := strings.IndexByte(host, '/'); i >= 0 {
			host = host[:i]
		}
		return old.Str() + " " + host
	}
	if !ok || sp.Kind() != ptrace.SpanKindClient {
		return sp.Name()
	}
	host, _ := a.Get(AttrServerAddress)
	port, _ := a.Get(AttrServerPort)
	u, _ := a.Get(AttrURLFull)
	op := m.Str() + " " + host.Str()
	if p := port.Int(); !(p == 80 && strings.HasPrefix(u.Str(), "http://")) && !(p == 443 && strings.HasPrefix(u.Str(), "https://")) {
		op += ":" + strconv.FormatInt(p, 10)
	}
	return op
}

func TestMetricsFollowFromVerdicts(t *testing.T) {
	for _, sc := range All() {
		td, exp := sc.Build()
		derived := deriveMetrics(td, exp)
		listed := map[string]float64{}
		for _, m := range exp.Metrics {
			k := m.Name + "{" + LabelKey(m.Labels) + "}"
			if _, dup := listed[k]; dup {
				t.Errorf("%s: series %s listed twice", sc.ID, k)
			}
			if m.Value == 0 && !strings.HasSuffix(m.Name, "_sum") { // a histogram's sum may be 0
				t.Errorf("%s: zero series %s listed", sc.ID, k)
			}
			listed[k] = m.Value
		}
		for k, v := range derived {
			if lv, ok := listed[k]; !ok || !near(lv, v) {
				t.Errorf("%s: series %s: listed %v, derived from the verdicts %v", sc.ID, k, lv, v)
			}
		}
		for k, v := range listed {
			if _, ok := derived[k]; !ok {
				t.Errorf("%s: series %s = %v listed but not derived from the verdicts", sc.ID, k, v)
			}
		}
	}
}

// TestS8 checks S8 is S2 shuffled: same verdicts in the same (creation) order, same metrics,
// at least five batches and the root in the last one.
func TestS8(t *testing.T) {
	_, s2 := S2()
	batches, s8 := S8Batches()
	if len(batches) < 5 {
		t.Fatalf("%d batches", len(batches))
	}
	total := 0
	for _, b := range batches {
		total += b.SpanCount()
	}
	if total != len(s2.Spans) {
		t.Errorf("S8 has %d spans, S2 %d", total, len(s2.Spans))
	}
	last := flatten(batches[len(batches)-1])
	if len(last) != 1 || !last[0].span.ParentSpanID().IsEmpty() {
		t.Errorf("last batch is not the root alone")
	}
	for i := range s2.Spans {
		if !reflect.DeepEqual(s2.Spans[i].Attributes, s8.Spans[i].Attributes) || s2.Spans[i].Name != s8.Spans[i].Name {
			t.Errorf("span %d differs between S2 and S8", i)
		}
	}
	if !reflect.DeepEqual(s2.Metrics, s8.Metrics) {
		t.Errorf("metrics differ between S2 and S8")
	}
	td, _ := S8()
	if td.SpanCount() != total {
		t.Errorf("S8() has %d spans", td.SpanCount())
	}
}

func TestS13HugeTrace(t *testing.T) {
	td := S13HugeTrace()
	if td.SpanCount() != S13HugeTraceSpans {
		t.Fatalf("%d spans", td.SpanCount())
	}
	seen := map[pcommon.SpanID]bool{}
	for _, r := range flatten(td) {
		if seen[r.span.SpanID()] {
			t.Fatalf("duplicate span ID %s", r.span.SpanID())
		}
		seen[r.span.SpanID()] = true
		end := int64(r.span.EndTimestamp()) - T0Unix*1e9
		if r.span.EndTimestamp() < r.span.StartTimestamp() || end > Seconds(10) {
			t.Fatalf("span %s out of the root's time", r.span.SpanID())
		}
	}
	// Its IDs must not collide with S13's.
	_, exp := S13()
	id := S13HugeTrace().ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID()
	for _, es := range exp.Spans {
		if es.TraceID == hex.EncodeToString(id[:]) {
			t.Fatal("huge trace ID collides with S13")
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, sc := range All() {
		a, ea := sc.Build()
		b, eb := sc.Build()
		ja, _ := TraceJSON(a)
		jb, _ := TraceJSON(b)
		xa, _ := ea.JSON()
		xb, _ := eb.JSON()
		if !bytes.Equal(ja, jb) || !bytes.Equal(xa, xb) {
			t.Errorf("%s is not deterministic", sc.ID)
		}
	}
}

// raced reports whether a sibling of sp (same parent, same name) started while sp ran: hedged
// tries, whose winner closes the run without being the last to start.
func raced(spans map[string][]flat, sp ptrace.Span) bool {
	for _, fs := range spans {
		for _, f := range fs {
			o := f.span
			if o.ParentSpanID() == sp.ParentSpanID() && o.TraceID() == sp.TraceID() && o.Name() == sp.Name() &&
				o.SpanID() != sp.SpanID() && o.StartTimestamp() > sp.StartTimestamp() && o.StartTimestamp() < sp.EndTimestamp() {
				return true
			}
		}
	}
	return false
}
