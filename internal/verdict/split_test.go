package verdict_test

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"pgregory.net/rapid"

	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// The time model's property (memo.go) at the correlator itself, over every scenario of
// testdata/scenarios: the spans of a file, in the order they end (ties in any order), cut into
// any number of releases, each released trace by trace with Release a second after the latest
// end among them (then Finish), give every span, once the verdicts carried for it are applied
// (PartAll: the whole verdict of a span that left deferred or provisional; PartRun: the outcome
// of the run it left open; PartEdge: the edge named after it left), and the cancellation reach
// of abandoned roots raised to what later releases saw (Decision.Reach, as the processor's held
// roots do), exactly the verdict one decision of everything gives (wholeAfterLast: every trace
// released whole, then Finish; Decide of each whole trace, but that keyed runs go on across
// traces, S26).

// scenarioSpans reads a scenario's trace.json into correlator spans: the fields the rules read,
// from the attribute names of the processor's default configuration (a small reader of this
// test's own: the processor's spanread is not importable from here).
func scenarioSpans(t testing.TB, path string) []verdict.Span {
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
	require.NoError(t, err, path)
	var out []verdict.Span
	tdwalk.SpansWithResource(td, func(res pcommon.Resource, sp ptrace.Span) {
		service := ""
		if v, ok := res.Attributes().Get("service.name"); ok {
			service = v.AsString()
		}
		out = append(out, readSpan(service, sp))
	})
	return out
}

func readSpan(service string, sp ptrace.Span) verdict.Span {
	s := verdict.Span{
		TraceID: verdict.TraceID(sp.TraceID()), SpanID: verdict.SpanID(sp.SpanID()),
		ParentID: verdict.SpanID(sp.ParentSpanID()), Service: service, Name: sp.Name(),
		Kind: verdict.Kind(sp.Kind()), Start: int64(sp.StartTimestamp()), End: int64(sp.EndTimestamp()),
		Status: verdict.Status(sp.Status().Code()), GRPCStatus: -1, ResendCount: -1,
		InputTokens: -1, OutputTokens: -1,
	}
	if msg := sp.Status().Message(); msg != "" {
		s.Messages = append(s.Messages, msg)
	}
	for l := range sp.Links().Len() {
		s.Links = append(s.Links, verdict.Link{TraceID: verdict.TraceID(sp.Links().At(l).TraceID()), SpanID: verdict.SpanID(sp.Links().At(l).SpanID())})
	}
	a := sp.Attributes()
	str := func(k string) string {
		if v, ok := a.Get(k); ok {
			return v.AsString()
		}
		return ""
	}
	num := func(k string) (int64, bool) {
		v, ok := a.Get(k)
		if !ok {
			return 0, false
		}
		if v.Type() == pcommon.ValueTypeInt {
			return v.Int(), true
		}
		n, err := strconv.ParseInt(v.AsString(), 10, 64)
		return n, err == nil
	}
	_, s.IsHTTP = a.Get("http.request.method")
	if n, ok := num("http.response.status_code"); ok {
		s.HTTPStatus = int(n)
	} else if n, ok := num("http.status_code"); ok {
		s.HTTPStatus = int(n)
	}
	if n, ok := num("rpc.grpc.status_code"); ok {
		s.GRPCStatus = int(n)
	}
	s.ErrorType = str("error.type")
	if n, ok := num("http.request.resend_count"); ok {
		s.ResendCount = int(n)
	}
	for _, k := range []string{"http.request.header.idempotency-key", "http.request.header.x-idempotency-key", "rpc.grpc.request.metadata.idempotency-key"} {
		if v := str(k); v != "" {
			h := fnv.New64a()
			h.Write([]byte(v))
			s.KeyHash = h.Sum64() | 1
			break
		}
	}
	if v := str("http.request.header.x-deadline"); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			s.Deadline = int64(f * 1e9)
		}
	}
	// The target as the processor's reader builds it (spanread's target): RPC method, messaging
	// destination, host and port with the path, then the tool name.
	switch {
	case str("rpc.method") != "":
		s.Target = verdict.NewTargetHash().Add(str("rpc.service")).Add("/").Add(str("rpc.method"))
	case str("messaging.destination.name") != "":
		s.Target = verdict.NewTargetHash().Add(str("messaging.destination.name"))
	case str("server.address") != "":
		s.Target = verdict.NewTargetHash().Add(str("server.address"))
		if p := str("server.port"); p != "" {
			s.Target = s.Target.Add(":").Add(p)
		}
		path := str("url.path")
		if path == "" {
			path = spanread.URLPath(str("url.full"))
		}
		s.Target = s.Target.Add(path)
	}
	if s.Target == 0 && str("gen_ai.request.model") != "" {
		s.Target = verdict.NewTargetHash().Add(str("gen_ai.request.model"))
	}
	if tool := str("gen_ai.tool.name"); tool != "" {
		if s.Target == 0 {
			s.Target = verdict.NewTargetHash()
		}
		s.Target = s.Target.Add("#").Add(tool)
	}
	s.Operation = str("gen_ai.operation.name")
	_, tool := a.Get("gen_ai.tool.name")
	s.ToolCall = tool
	s.Model = str("gen_ai.response.model")
	if s.Model == "" {
		s.Model = str("gen_ai.request.model")
	}
	if n, ok := num("gen_ai.usage.input_tokens"); ok && n >= 0 {
		s.InputTokens = n
	}
	if n, ok := num("gen_ai.usage.output_tokens"); ok && n >= 0 {
		s.OutputTokens = n
	}
	for e := range sp.Events().Len() {
		ev := sp.Events().At(e)
		if ev.Name() != "exception" {
			continue
		}
		if v, ok := ev.Attributes().Get("exception.type"); ok {
			s.ExceptionTypes = append(s.ExceptionTypes, v.AsString())
		}
		if v, ok := ev.Attributes().Get("exception.message"); ok {
			s.Messages = append(s.Messages, v.AsString())
		}
	}
	return s
}

// byTrace groups span indexes by trace, traces in order of first appearance.
func byTrace(spans []verdict.Span, idx []int) [][]int {
	var order []verdict.TraceID
	groups := map[verdict.TraceID][]int{}
	for _, i := range idx {
		t := spans[i].TraceID
		if _, ok := groups[t]; !ok {
			order = append(order, t)
		}
		groups[t] = append(groups[t], i)
	}
	out := make([][]int, len(order))
	for k, t := range order {
		out[k] = groups[t]
	}
	return out
}

func newCorrelator(t require.TestingT) *verdict.Correlator {
	cfg := verdict.DefaultConfig()
	cfg.Prices = map[string]verdict.Price{
		"gpt-4o":      {InputPerMillion: 2.50, OutputPerMillion: 10.00},
		"gpt-4o-mini": {InputPerMillion: 0.15, OutputPerMillion: 0.60},
	}
	c, err := verdict.New(cfg)
	require.NoError(t, err)
	return c
}

// splitReleases decides the spans in the releases given (span indexes) and returns every span's
// effective verdict.
func splitReleases(t require.TestingT, spans []verdict.Span, releases [][]int) []verdict.Verdict {
	c := newCorrelator(t)
	out := make([]verdict.Verdict, len(spans))
	// A carried verdict names its span by Extra (the index, for records kept to be carried) or
	// by its identity (the first span with it, as the processor's tests apply parts).
	find := func(cv *verdict.Carried) int {
		if i, ok := cv.Span.Extra.(int); ok {
			return i
		}
		for i := range spans {
			s := &spans[i]
			if s.SpanID == cv.Span.SpanID && s.Kind == cv.Span.Kind && s.TraceID == cv.Span.TraceID && s.Start == cv.Span.Start && s.End == cv.Span.End {
				return i
			}
		}
		return -1
	}
	apply := func(carried []verdict.Carried) {
		for k := range carried {
			cv := &carried[k]
			i := find(cv)
			require.GreaterOrEqual(t, i, 0, "a verdict carried for a span not released: %+v", cv.Span)
			applyPart(&out[i], cv)
		}
	}
	var now int64
	for _, rel := range releases {
		now = releaseByTrace(c, spans, rel, now, func(g []int, d verdict.Decision) {
			apply(d.Carried)
			if !d.Deferred {
				for k, i := range g {
					if !d.Verdicts[k].Provisional {
						out[i] = d.Verdicts[k]
					}
				}
			}
			for _, r := range d.Reach { // the processor holds abandoned roots for this
				for i := range spans {
					if spans[i].TraceID == spans[g[0]].TraceID && spans[i].SpanID == r.SpanID && spans[i].ParentID.IsZero() && out[i].HasReach {
						out[i].ReachHops = max(out[i].ReachHops, r.ReachHops)
						out[i].OrphanedDepthHops = max(out[i].OrphanedDepthHops, r.OrphanedDepthHops)
					}
				}
			}
		})
	}
	carried, _ := c.Finish(now)
	apply(carried)
	return out
}

// applyPart writes the part of a carried verdict that it carries into v.
func applyPart(v *verdict.Verdict, cv *verdict.Carried) {
	switch cv.Part {
	case verdict.PartAll:
		*v = cv.Verdict
	case verdict.PartRun:
		v.Outcome, v.RunAttempts, v.RunOK = cv.Verdict.Outcome, cv.Verdict.RunAttempts, cv.Verdict.RunOK
	case verdict.PartEdge:
		v.CallerService = cv.Verdict.CallerService
	}
}

// releaseByTrace observes one release (span indexes into spans) and releases its spans trace by
// trace, each span's Extra its index; use gets each trace's indexes and decision. It returns the
// release's time (see releaseSpans).
func releaseByTrace(c *verdict.Correlator, spans []verdict.Span, rel []int, now int64, use func(g []int, d verdict.Decision)) int64 {
	in, now := releaseSpans(spans, rel, now)
	c.Observe(in)
	for _, g := range byTrace(spans, rel) {
		use(g, c.Release(nil, pick(spans, g), now, func(k int) any { return g[k] }))
	}
	return now
}

// comparable is a verdict without the marks of a decision in progress.
func comparable(v verdict.Verdict) verdict.Verdict {
	v.EdgePending, v.Provisional = false, false
	return v
}

func TestReleaseAnySplitEqualsOneDecide(t *testing.T) {
	dirs, files := allScenarioSpans(t)
	rapid.Check(t, func(rt *rapid.T) {
		fi := rapid.IntRange(0, len(files)-1).Draw(rt, "scenario")
		spans := files[fi]
		want := wholeAfterLast(rt, spans) // Decide of each trace, but for keyed runs across traces (S26): one run
		order := rapid.Permutation(indexes(len(spans))).Draw(rt, "ties")
		sortByEnd(spans, order, false)
		releases := drawReleases(rt, order)
		got := splitReleases(rt, spans, releases)
		for i := range spans {
			require.Equal(rt, comparable(want[i]), comparable(got[i]), "%s span %x %q (kind %d), %d releases",
				filepath.Base(dirs[fi]), spans[i].SpanID, spans[i].Name, spans[i].Kind, len(releases))
		}
	})
}

// sortByEnd sorts order, indexes into spans, stably by endOrder.
func sortByEnd(spans []verdict.Span, order []int, rootsFirst bool) {
	slices.SortStableFunc(order, func(a, b int) int { return endOrder(&spans[a], &spans[b], rootsFirst) })
}

// endOrder orders two spans by their end, the roots first when rootsFirst.
func endOrder(x, y *verdict.Span, rootsFirst bool) int {
	if xr, yr := x.ParentID.IsZero(), y.ParentID.IsZero(); rootsFirst && xr != yr {
		if xr {
			return -1
		}
		return 1
	}
	return cmp.Compare(x.End, y.End)
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// drawReleases cuts order (span indexes in the order they end) into a drawn number of releases
// at drawn places, each release a non-empty run of order.
func drawReleases(rt *rapid.T, order []int) [][]int {
	nb := rapid.IntRange(1, len(order)).Draw(rt, "releases")
	cuts := map[int]bool{}
	for len(cuts) < nb-1 {
		cuts[rapid.IntRange(1, len(order)-1).Draw(rt, fmt.Sprintf("cut%d", len(cuts)))] = true
	}
	var releases [][]int
	var cur []int
	for k, i := range order {
		if cuts[k] {
			releases = append(releases, cur)
			cur = nil
		}
		cur = append(cur, i)
	}
	return append(releases, cur)
}

// releaseSpans is the spans of one release (indexes into spans), and the release's time: now,
// or a second after the latest end among them if that is later.
func releaseSpans(spans []verdict.Span, rel []int, now int64) ([]verdict.Span, int64) {
	in := pick(spans, rel)
	for _, i := range rel {
		now = max(now, spans[i].End+int64(time.Second))
	}
	return in, now
}

// pick is the spans at the given indexes, in their order.
func pick(spans []verdict.Span, idx []int) []verdict.Span {
	out := make([]verdict.Span, len(idx))
	for k, i := range idx {
		out[k] = spans[i]
	}
	return out
}

// allScenarioSpans is every scenario's directory (testdata/scenarios/s*) and its spans
// (trace.json), in the same order.
func allScenarioSpans(t *testing.T) ([]string, [][]verdict.Span) {
	dirs, err := filepath.Glob("../../testdata/scenarios/s*")
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	files := make([][]verdict.Span, len(dirs))
	for i, d := range dirs {
		files[i] = scenarioSpans(t, filepath.Join(d, "trace.json"))
	}
	return dirs, files
}
