package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/cmd/orphanwatch/internal/analyze"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

const scenarioDir = "../../testdata/scenarios"

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// analyzeJSON runs `analyze --format json --spans` and decodes the report.
func analyzeJSON(t *testing.T, files ...string) *analyze.Report {
	t.Helper()
	r := runCLI(t, "", append([]string{"analyze", "--format", "json", "--spans"}, files...)...)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	var rep analyze.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	return &rep
}

// expectedCounts derives the verdict counts from the exact per-span verdicts of expected.json.
type counts struct {
	runs                     map[string]int
	roots                    map[string]int
	live, orphaned, started  int
	unknown, detached        int
	orphanedIn, orphanedOut  int64
	liveIn, liveOut          int64
	orphanedCost, liveCost   float64
	edges                    map[string]int
	maxRunAttempts           int
	orphanedCalls, liveCalls int
}

func newCounts() counts {
	return counts{runs: map[string]int{}, roots: map[string]int{}, edges: map[string]int{}}
}

func (c *counts) add(service string, v map[string]any) {
	num := func(k string) float64 {
		f, _ := v[k].(float64)
		if i, ok := v[k].(int64); ok {
			f = float64(i)
		}
		return f
	}
	if o, ok := v[scenarios.VRunOutcome].(string); ok {
		c.runs[o]++
		c.maxRunAttempts = max(c.maxRunAttempts, int(num(scenarios.VRunAttempts)))
	}
	if r, ok := v[scenarios.VRootEndReason].(string); ok {
		c.roots[r]++
	}
	if d, _ := v[scenarios.VDetached].(bool); d {
		c.detached++
	}
	l, _ := v[scenarios.VLiveness].(string)
	switch l {
	case "live":
		c.live++
	case "orphaned":
		c.orphaned++
		if s, _ := v[scenarios.VStartedAfterGone].(bool); s {
			c.started++
		}
	case "unknown":
		c.unknown++
	}
	if caller, ok := v[scenarios.VCallerService].(string); ok {
		c.edges[caller+"->"+service]++
	}
	if _, ok := v[scenarios.VSpendModel]; ok {
		switch l {
		case "orphaned":
			c.orphanedCalls++
			c.orphanedIn += int64(num(scenarios.VSpendInput))
			c.orphanedOut += int64(num(scenarios.VSpendOutput))
			c.orphanedCost += num(scenarios.VSpendCost)
		case "live":
			c.liveCalls++
			c.liveIn += int64(num(scenarios.VSpendInput))
			c.liveOut += int64(num(scenarios.VSpendOutput))
			c.liveCost += num(scenarios.VSpendCost)
		}
	}
}

func reportCounts(rep *analyze.Report) counts {
	c := newCounts()
	for _, tr := range rep.Traces {
		for _, s := range tr.SpanVerdicts {
			c.add(s.Service, s.Verdict)
		}
	}
	return c
}

func spend(rep *analyze.Report, cat string) analyze.Spend {
	if s := rep.Summary.Spend[cat]; s != nil {
		return *s
	}
	return analyze.Spend{}
}

// TestScenarios runs every testdata/scenarios/*/trace.json through `analyze --format json`
// and compares with expected.json: the exact verdict of every span, the counts the report
// derives (runs by outcome, roots, liveness, orphaned tokens and cost, edges), and the
// --metrics output against the expected metric series.
func TestScenarios(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(scenarioDir, "s*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			exp, err := scenarios.LoadExpected(filepath.Join(dir, "expected.json"))
			require.NoError(t, err)
			rep := analyzeJSON(t, filepath.Join(dir, "trace.json"))

			// Every span's verdict, exactly.
			got := map[string]analyze.SpanVerdict{}
			for _, tr := range rep.Traces {
				for _, s := range tr.SpanVerdicts {
					got[tr.TraceID+"/"+s.SpanID+"/"+s.Name] = s
				}
			}
			want := newCounts()
			for _, es := range exp.Spans {
				if es.TraceID == "00000000000000000000000000000000" {
					continue // no trace: passed on unjudged, not part of any trace's report
				}
				s, ok := got[es.TraceID+"/"+es.SpanID+"/"+es.Name]
				if !assert.True(t, ok, "span %s %s not in the report", es.SpanID, es.Name) {
					continue
				}
				if es.Attributes == nil { // malformed: nothing but possibly liveness=unknown
					for k, v := range s.Verdict {
						assert.True(t, k == scenarios.VLiveness && v == "unknown", "malformed span %s carries %s=%v", es.Name, k, v)
					}
					want.add(es.Service, s.Verdict)
					continue
				}
				want.add(es.Service, es.Attributes)
				assertVerdict(t, es.Name+" "+es.SpanID, es.Attributes, s.Verdict)
			}
			have := reportCounts(rep)
			assert.Equal(t, want.runs, have.runs, "runs by outcome")
			assert.Equal(t, want.runs, nonZero(rep.Summary.Runs), "summary runs by outcome")
			assert.Equal(t, want.roots, have.roots, "roots by end reason")
			for reason, n := range want.roots {
				assert.Equal(t, n, rep.Summary.Roots[reason], "summary roots %s", reason)
			}
			assert.Equal(t, want.live, rep.Summary.Liveness.Live, "live spans")
			assert.Equal(t, want.orphaned, rep.Summary.Liveness.Orphaned, "orphaned spans")
			assert.Equal(t, want.started, rep.Summary.Liveness.StartedAfterGone, "started after gone")
			assert.Equal(t, want.unknown, rep.Summary.Liveness.Unknown, "unknown spans")
			assert.Equal(t, want.detached, rep.Summary.Liveness.Detached, "detached spans")
			orph, live := spend(rep, "orphaned"), spend(rep, "live")
			assert.Equal(t, want.orphanedCalls, orph.ModelCalls, "orphaned model calls")
			assert.Equal(t, want.orphanedIn, orph.InputTokens, "orphaned input tokens")
			assert.Equal(t, want.orphanedOut, orph.OutputTokens, "orphaned output tokens")
			assert.InDelta(t, want.orphanedCost, orph.Cost, 1e-9, "orphaned cost")
			assert.Equal(t, want.liveIn, live.InputTokens, "live input tokens")
			assert.Equal(t, want.liveOut, live.OutputTokens, "live output tokens")
			assert.InDelta(t, want.liveCost, live.Cost, 1e-9, "live cost")
			edges := map[string]int{}
			for _, e := range rep.Summary.Edges {
				edges[e.Caller+"->"+e.Callee] += e.Spans
			}
			assert.Equal(t, want.edges, edges, "unpropagated edges")
			orphanedListed := 0
			for _, tr := range rep.Traces {
				orphanedListed += len(tr.Orphaned)
			}
			assert.Equal(t, want.orphaned, orphanedListed, "orphaned spans listed")

			// --metrics prints what the exporter would serve: exactly the expected series.
			m := runCLI(t, "", "analyze", "--metrics", filepath.Join(dir, "trace.json"))
			require.Equal(t, 0, m.code, m.stderr)
			assertMetrics(t, exp.Metrics, m.stdout)
		})
	}
}

func nonZero(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func assertVerdict(t *testing.T, what string, want, got map[string]any) {
	t.Helper()
	var wk, gk []string
	for k := range want {
		wk = append(wk, k)
	}
	for k := range got {
		gk = append(gk, k)
	}
	sort.Strings(wk)
	sort.Strings(gk)
	if !assert.Equal(t, wk, gk, "%s: verdict attributes", what) {
		return
	}
	for k, w := range want {
		g := got[k]
		if i, ok := w.(int); ok { // verdicts built in Go hold ints; JSON gives float64
			w = float64(i)
		}
		switch w := w.(type) {
		case float64:
			gf, ok := g.(float64)
			if assert.True(t, ok, "%s: %s is %T", what, k, g) {
				assert.InDelta(t, w, gf, 1e-9, "%s: %s", what, k)
			}
		default:
			assert.Equal(t, w, g, "%s: %s", what, k)
		}
	}
}

// contractMetrics are the exporter's series that expected.json lists (every non-zero one).
var contractMetrics = map[string]bool{
	scenarios.MRuns: true, scenarios.MAttempts: true, scenarios.MRoots: true,
	scenarios.MSpendSeconds: true, scenarios.MSpendTokens: true, scenarios.MSpendCost: true,
	scenarios.MModelCalls: true, scenarios.MOutliveCount: true, scenarios.MOutliveSum: true,
	scenarios.MUnpropagated: true,
}

func assertMetrics(t *testing.T, want []scenarios.ExpectedMetric, text string) {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err)
	got := map[string]float64{}
	key := func(name string, labels map[string]string) string {
		var ks []string
		for k, v := range labels {
			ks = append(ks, k+"="+v)
		}
		sort.Strings(ks)
		return name + "{" + strings.Join(ks, ",") + "}"
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			switch {
			case m.GetCounter() != nil:
				got[key(name, l)] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				got[key(name+"_count", l)] = float64(m.GetHistogram().GetSampleCount())
				got[key(name+"_sum", l)] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	wantKeys := map[string]bool{}
	for _, w := range want {
		k := key(w.Name, w.Labels)
		wantKeys[k] = true
		assert.InDelta(t, w.Value, got[k], 1e-9, "metric %s", k)
	}
	for k, v := range got {
		name := k[:strings.IndexByte(k, '{')]
		if contractMetrics[name] && v != 0 {
			assert.True(t, wantKeys[k], "unexpected series %s = %v", k, v)
		}
	}
}

// TestS2Story checks the seed's story in S2 by name.
func TestS2Story(t *testing.T) {
	rep := analyzeJSON(t, filepath.Join(scenarioDir, "s02_caller_leaves", "trace.json"))
	require.Len(t, rep.Traces, 1)
	tr := rep.Traces[0]
	requireRoot(t, tr, "POST /ask", "cancelled")
	require.NotNil(t, tr.Root.GoneAfterStart)
	assert.InDelta(t, 3.0, *tr.Root.GoneAfterStart, 1e-9)
	var search []analyze.RunReport
	for _, r := range tr.NotableRuns {
		if r.Outcome == "delivered_to_nobody" && r.Service == "researcher" && r.Name == "GET search-tool:8080" {
			search = append(search, r)
		}
	}
	require.Len(t, search, 1, "one delivered_to_nobody search run")
	assert.Equal(t, 4, search[0].Attempts)
	assert.Equal(t, "ok", search[0].Result)
	orph := tr.Spend["orphaned"]
	require.NotNil(t, orph)
	assert.Equal(t, int64(3000), orph.InputTokens)
	assert.Equal(t, int64(800), orph.OutputTokens)
	assert.InDelta(t, 0.0155, orph.Cost, 1e-12)
	require.NotNil(t, orph.Models["gpt-4o"])
	assert.Equal(t, 1, orph.Models["gpt-4o"].ModelCalls)
	assert.Equal(t, []analyze.Edge{{Caller: "gateway", Callee: "researcher", Spans: 1}}, tr.Edges)
	// The orphaned SERVER span names the edge and how long it outlived the root.
	var server *analyze.SpanReport
	for i := range tr.Orphaned {
		if tr.Orphaned[i].Kind == "SERVER" && tr.Orphaned[i].Service == "researcher" {
			server = &tr.Orphaned[i]
		}
	}
	require.NotNil(t, server)
	assert.Equal(t, "gateway", server.CallerService)
	assert.InDelta(t, 3.55, server.AfterGone, 1e-9)
	assert.False(t, server.StartedAfterGone)

	text := runCLI(t, "", "analyze", filepath.Join(scenarioDir, "s02_caller_leaves", "trace.json"))
	require.Equal(t, 0, text.code, text.stderr)
	for _, want := range []string{
		"end       cancelled; gone at +3.000s",
		"researcher  GET search-tool:8080   delivered_to_nobody  4",
		"gateway -> researcher",
		"orphaned 3000 in / 800 out",
		"orphaned $0.0155",
	} {
		assert.Contains(t, text.stdout, want)
	}
}

// TestJSONLinesShuffled feeds S2 as JSON lines, one batch per line in shuffled order with the
// root last (S8), as the file exporter would have written them: the verdicts are S2's.
func TestJSONLinesShuffled(t *testing.T) {
	batches, exp := scenarios.S8Batches()
	var lines bytes.Buffer
	for _, b := range batches {
		raw, err := (&ptrace.JSONMarshaler{}).MarshalTraces(b)
		require.NoError(t, err)
		lines.Write(raw)
		lines.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "s8.jsonl")
	require.NoError(t, os.WriteFile(path, lines.Bytes(), 0o600))
	rep := analyzeJSON(t, path)
	assert.Equal(t, "otlp-json-lines", rep.Files[0].Format)
	got := map[string]map[string]any{}
	for _, tr := range rep.Traces {
		for _, s := range tr.SpanVerdicts {
			got[s.SpanID] = s.Verdict
		}
	}
	for _, es := range exp.Spans {
		assertVerdict(t, es.Name+" "+es.SpanID, es.Attributes, got[es.SpanID])
	}

	// The same lines on standard input.
	r := runCLI(t, lines.String(), "analyze", "--format", "json", "-")
	require.Equal(t, 0, r.code, r.stderr)
	var rep2 analyze.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep2))
	assert.Equal(t, "<stdin>", rep2.Files[0].Name)
	assert.Equal(t, rep.Summary.Runs, rep2.Summary.Runs)
	assert.Equal(t, rep.Summary.Liveness, rep2.Summary.Liveness)
}

// Real trace files from other projects (../shared/testdata-real, see its SOURCES.md).
const (
	realJaegerGenAI = "jaeger-ui_genai-agent-mcp-subagent_jaeger.json"
	realVercel      = "genai-interlingua_vercel-aisdk-toolcall-after-root_otlp.json"
	realOpenLLMetry = "genai-interlingua_openllmetry-workflow-chat-child-first_otlp.json"
	realCheckout    = "otel-desktop-viewer_checkout-payment-declined-fanout_otlp.json"
	realKafka       = "zipkin-lens_messaging-kafka-async-errors_zipkin2.json"
	realSmartThings = "zipkin-lens_smartthings-oauth-real-401s_zipkin2.json"
)

func realFile(t *testing.T, name string) string {
	t.Helper()
	dir := e2e.RealTestdata()
	if dir == "" {
		t.Skip("../shared/testdata-real is absent")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is absent", name)
	}
	return p
}

func single(t *testing.T, rep *analyze.Report) analyze.TraceReport {
	t.Helper()
	require.Len(t, rep.Traces, 1)
	return rep.Traces[0]
}

// realTrace analyzes the real file name, which must hold a single trace, and returns it.
func realTrace(t *testing.T, name string) analyze.TraceReport {
	t.Helper()
	return single(t, analyzeJSON(t, realFile(t, name)))
}

// requireRoot requires tr's root to be the span name, which ended with endReason.
func requireRoot(t *testing.T, tr analyze.TraceReport, name, endReason string, msgAndArgs ...any) {
	t.Helper()
	require.NotNil(t, tr.Root)
	assert.Equal(t, name, tr.Root.Name)
	assert.Equal(t, endReason, tr.Root.EndReason, msgAndArgs...)
}

// TestRealFiles states, for each real file, the verdicts DESIGN.md implies.
func TestRealFiles(t *testing.T) {
	t.Run("jaeger genai: all live, tokens counted, same-name siblings not merged", func(t *testing.T) {
		rep := analyzeJSON(t, realFile(t, realJaegerGenAI))
		assert.Equal(t, "jaeger-json", rep.Files[0].Format)
		tr := single(t, rep)
		assert.Equal(t, "4a1b2c3d4e5f60718293a4b5c6d7e8f9", tr.TraceID)
		assert.Equal(t, 57, tr.Spans)
		require.NotNil(t, tr.Root)
		assert.Equal(t, "POST /api/graphql", tr.Root.Name)
		assert.Equal(t, "api-edge", tr.Root.Service)
		assert.Equal(t, "SERVER", tr.Root.Kind)
		assert.Equal(t, "completed", tr.Root.EndReason)
		assert.InDelta(t, 44.0, tr.Root.Duration, 1e-9)
		assert.Equal(t, analyze.Liveness{Live: 57}, tr.Liveness, "everything ends before the root")
		assert.Empty(t, tr.Orphaned)
		live := tr.Spend["live"]
		require.NotNil(t, live)
		assert.Equal(t, 5, live.ModelCalls)
		assert.Equal(t, int64(8280), live.InputTokens)
		assert.Equal(t, int64(1180), live.OutputTokens)
		assert.Equal(t, 4, live.Models["model-a"].ModelCalls)
		assert.Equal(t, 1, live.Models["model-b"].ModelCalls)
		assert.Nil(t, tr.Spend["orphaned"])
		assert.Zero(t, tr.Runs["delivered_to_nobody"])
		// chat model-a x4, execute_tool list_dashboards x3 and search_traces x3 under one
		// agent are sequential work, not retries: every run has one attempt.
		names := map[string]int{}
		for _, s := range tr.SpanVerdicts {
			if n, ok := s.Verdict[scenarios.VRunAttempts]; ok {
				assert.EqualValues(t, 1, n, "%s: run attempts", s.Name)
			}
			if a, ok := s.Verdict[scenarios.VAttempt]; ok {
				assert.EqualValues(t, 1, a, "%s: attempt", s.Name)
			}
			names[s.Name]++
		}
		assert.Equal(t, 4, names["chat model-a"])
		assert.Equal(t, 3, names["execute_tool list_dashboards"])
		assert.Equal(t, 3, names["execute_tool search_traces"])
	})
	t.Run("vercel: the tool call is orphaned, tokens counted once", func(t *testing.T) {
		tr := realTrace(t, realVercel)
		requireRoot(t, tr, "ai.generateText", "completed")
		require.Len(t, tr.Orphaned, 1)
		o := tr.Orphaned[0]
		assert.Equal(t, "ai.toolCall", o.Name)
		assert.Equal(t, "ticket-triage", o.Service)
		assert.True(t, o.StartedAfterGone, "starts 10 ms after the root ended")
		assert.InDelta(t, 0.18, o.AfterGone, 1e-6)
		assert.Empty(t, o.Model, "the tool call carries no tokens")
		assert.Equal(t, analyze.Liveness{Live: 2, Orphaned: 1, StartedAfterGone: 1}, tr.Liveness)
		live := tr.Spend["live"]
		require.NotNil(t, live)
		assert.Equal(t, 1, live.ModelCalls, "usage on ai.generateText and doGenerate is one call")
		assert.Equal(t, int64(412), live.InputTokens)
		assert.Equal(t, int64(27), live.OutputTokens)
		assert.InDelta(t, (0.15*412+0.60*27)/1e6, live.Cost, 1e-12, "gpt-4o-mini-2024-07-18 priced as gpt-4o-mini")
		// The INTERNAL tool call is work like any call (an attempt): its 0.17 s after the
		// gone time are orphaned spend seconds; it carries no tokens.
		orph := tr.Spend["orphaned"]
		require.NotNil(t, orph)
		assert.InDelta(t, 0.17, orph.AttemptSeconds, 1e-6)
		assert.Zero(t, orph.ModelCalls)
		assert.Zero(t, orph.InputTokens+orph.OutputTokens)
	})
	t.Run("openllmetry: child listed first, 412/27 live", func(t *testing.T) {
		tr := realTrace(t, realOpenLLMetry)
		requireRoot(t, tr, "support_triage.workflow", "completed")
		assert.Equal(t, analyze.Liveness{Live: 2}, tr.Liveness)
		live := tr.Spend["live"]
		require.NotNil(t, live)
		assert.Equal(t, 1, live.ModelCalls)
		assert.Equal(t, int64(412), live.InputTokens)
		assert.Equal(t, int64(27), live.OutputTokens)
		assert.Empty(t, tr.Orphaned)
	})
	t.Run("checkout: the negative control, nothing orphaned", func(t *testing.T) {
		tr := realTrace(t, realCheckout)
		requireRoot(t, tr, "POST /api/v2/orders", "error", "status ERROR, HTTP 402")
		assert.Equal(t, analyze.Liveness{Live: 6}, tr.Liveness)
		assert.Empty(t, tr.Orphaned)
		assert.Equal(t, map[string]int{"hard_failure": 1}, tr.Runs)
		require.Len(t, tr.NotableRuns, 1)
		assert.Equal(t, "stripe/create-charge", tr.NotableRuns[0].Name)
		assert.Equal(t, "payment-service", tr.NotableRuns[0].Service)
	})
	t.Run("kafka zipkin: messaging is detached, nothing orphaned", func(t *testing.T) {
		rep := analyzeJSON(t, realFile(t, realKafka))
		assert.Equal(t, "zipkin-v2-json", rep.Files[0].Format)
		tr := single(t, rep)
		assert.Equal(t, 28, tr.Spans)
		require.NotNil(t, tr.Root)
		assert.Equal(t, "poll", tr.Root.Name)
		assert.Equal(t, "CONSUMER", tr.Root.Kind)
		assert.True(t, tr.Root.Detached)
		assert.Equal(t, "detached", tr.Root.EndReason, "DESIGN: the root of detached work ends detached")
		assert.Equal(t, analyze.Liveness{Detached: 28}, tr.Liveness)
		assert.Empty(t, tr.Orphaned)
		assert.Zero(t, tr.Runs["delivered_to_nobody"])
	})
	t.Run("smartthings zipkin: redirect chain and Kafka receipts, nothing orphaned", func(t *testing.T) {
		rep := analyzeJSON(t, realFile(t, realSmartThings))
		assert.Equal(t, 175, rep.Files[0].Spans)
		assert.Empty(t, rep.Files[0].Malformed, "leading-zero IPv4 addresses are read, not dropped")
		tr := single(t, rep)
		require.NotNil(t, tr.Root)
		assert.Equal(t, "get /oauth/authorize", tr.Root.Name)
		assert.Equal(t, "datamgmt", tr.Root.Service)
		assert.Equal(t, "completed", tr.Root.EndReason)
		assert.Zero(t, tr.Liveness.Orphaned)
		assert.Empty(t, tr.Orphaned)
		assert.Zero(t, tr.Runs["delivered_to_nobody"])
		assert.Empty(t, tr.Edges)
		assert.Zero(t, rep.Summary.Processor.WithoutVerdict["duplicate_span_id"], "the five Kafka receipts sharing one span ID are split, not duplicates")
		// The 401 from the auth service is a hard failure of stlogin's post.
		assert.Equal(t, 1, tr.Runs["hard_failure"])
	})
	t.Run("all files together: only the vercel tool call is orphaned", func(t *testing.T) {
		files := []string{realFile(t, realJaegerGenAI), realFile(t, realVercel), realFile(t, realOpenLLMetry),
			realFile(t, realCheckout), realFile(t, realKafka), realFile(t, realSmartThings)}
		rep := analyzeJSON(t, files...)
		assert.Equal(t, 6, rep.Summary.Files)
		assert.Equal(t, 6, rep.Summary.Traces)
		assert.Equal(t, 3+2+57+6+28+175, rep.Summary.Spans)
		assert.Equal(t, 1, rep.Summary.Liveness.Orphaned)
		assert.Equal(t, map[string]int{"completed": 4, "error": 1, "detached": 1}, nonZero(rep.Summary.Roots))
		assert.Empty(t, rep.Summary.Edges)
		assert.Zero(t, rep.Summary.OrphanedTokenShare)

		m := runCLI(t, "", append([]string{"analyze", "--metrics"}, files...)...)
		require.Equal(t, 0, m.code, m.stderr)
		for _, want := range []string{
			`orphanwatch_outlive_seconds_count{service_name="ticket-triage"} 1`,
			`orphanwatch_spend_tokens_total{direction="input",liveness="live",model="model-a",service_name="coding-agent"} 7360`,
			`orphanwatch_roots_total{end_reason="error",service_name="api-gateway"} 1`,
		} {
			assert.True(t, strings.Contains(m.stdout, want), "--metrics lacks %s", want)
		}
		assert.False(t, strings.Contains(m.stdout, `orphanwatch_unpropagated_total{`), "no unpropagated edge")

		r := runCLI(t, "", append([]string{"analyze", "--fail-on-orphaned"}, files...)...)
		assert.Equal(t, exitOrphaned, r.code)
	})
}

// TestErrors: unreadable input is an error naming the file; other files are still reported.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	good := filepath.Join(scenarioDir, "s01_happy_fanout", "trace.json")
	cases := []struct {
		name, file, want string
	}{
		{"missing", filepath.Join(dir, "nope.json"), "nope.json: no such file"},
		{"empty", write("empty.json", ""), "empty.json: the input is empty"},
		{"blank", write("blank.json", " \n\t\n"), "blank.json: the input is empty"},
		{"garbage", write("garbage.json", "\x00\x01garbage"), "garbage.json: not JSON"},
		{"text", write("text.txt", "hello world"), "text.txt: not JSON"},
		{"truncated", write("trunc.json", `{"resourceSpans": [{"scopeSpans": [`), "trunc.json: not valid JSON: line 1, column 36: unexpected end of input"},
		{"unknown object", write("obj.json", `{"hello": "world"}`), `obj.json: unknown JSON format: an object with keys "hello"`},
		{"unknown array", write("arr.json", `[1, 2, 3]`), "arr.json: unknown JSON format"},
		{"no spans otlp", write("none.json", `{"resourceSpans": []}`), "none.json: no spans in the input (read as otlp-json)"},
		{"no spans zipkin", write("none2.json", `[]`), "none2.json: no spans in the input (read as zipkin-v2-json)"},
		{"no spans jaeger", write("none3.json", `{"data": []}`), "none3.json: no spans in the input (read as jaeger-json)"},
		{"all spans malformed", write("bad.json", `[{"traceId": "xyz", "id": "1"}]`), "bad.json: no spans in the input: all 1 spans are malformed (invalid_trace_id=1)"},
		{"directory", dir, "is a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, "", "analyze", c.file)
			assert.Equal(t, exitInput, r.code)
			assert.Contains(t, r.stderr, c.want)
			assert.Empty(t, r.stdout)

			// With a readable file beside it: the readable one is reported, the status says
			// something was wrong.
			r = runCLI(t, "", "analyze", "--format", "json", c.file, good)
			assert.Equal(t, exitInput, r.code)
			assert.Contains(t, r.stderr, c.want)
			var rep analyze.Report
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
			assert.Equal(t, 1, rep.Summary.Files)
		})
	}
	t.Run("empty stdin", func(t *testing.T) {
		r := runCLI(t, "", "analyze", "-")
		assert.Equal(t, exitInput, r.code)
		assert.Contains(t, r.stderr, "<stdin>: the input is empty")
	})
}

func TestUsage(t *testing.T) {
	good := filepath.Join(scenarioDir, "s01_happy_fanout", "trace.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "Usage:"},
		{[]string{"analyse"}, "no input"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"analyze", "--format", "xml", good}, "--format must be text or json"},
		{[]string{"analyze", "--nope", good}, "flag provided but not defined"},
		{[]string{"analyze", "-", "-"}, "more than once"},
		{[]string{"analyze", "--prices", "/nonexistent/prices.yaml", good}, "/nonexistent/prices.yaml"},
		{[]string{"analyze", "--config", "/nonexistent/c.yaml", good}, "/nonexistent/c.yaml"},
	} {
		r := runCLI(t, "", c.args...)
		assert.Equal(t, exitUsage, r.code, "%v", c.args)
		assert.Contains(t, r.stderr, c.want, "%v", c.args)
	}
	r := runCLI(t, "", "version")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "orphanwatch ")
	r = runCLI(t, "", "help")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "-prices")

	// Flags after the file names, and "--".
	r = runCLI(t, "", "analyze", good, "--format", "json")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.True(t, json.Valid([]byte(r.stdout)))
	r = runCLI(t, "", "analyze", "--format", "json", "--", good)
	assert.Equal(t, 0, r.code, r.stderr)
}

// TestMalformedSpansAreNotFatal: spans that cannot be represented are dropped and counted;
// spans the processor cannot judge are counted by the processor; the file is still analysed.
func TestMalformedSpansAreNotFatal(t *testing.T) {
	dir := t.TempDir()
	otlp := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[
	 {"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0000000000000001","name":"root","kind":2,"startTimeUnixNano":"1000000000","endTimeUnixNano":"2000000000"},
	 {"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"not-hex!","parentSpanId":"0000000000000001","name":"bad id","startTimeUnixNano":"1000000000","endTimeUnixNano":"1500000000"},
	 {"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0000000000000003","parentSpanId":"0000000000000001","name":"late","kind":3,"startTimeUnixNano":"1500000000","endTimeUnixNano":"2500000000"},
	 {"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0000000000000004","parentSpanId":"0000000000000001","name":"backwards","startTimeUnixNano":"1500000000","endTimeUnixNano":"1400000000"}
	]}]}]}`
	p := filepath.Join(dir, "otlp.json")
	require.NoError(t, os.WriteFile(p, []byte(otlp), 0o600))
	rep := analyzeJSON(t, p)
	assert.Equal(t, map[string]int{"unparseable_span": 1}, rep.Files[0].Malformed)
	assert.Equal(t, 3, rep.Files[0].Spans)
	assert.Equal(t, 1, rep.Summary.Liveness.Orphaned, "the good late span is still judged")
	assert.Equal(t, int64(1), rep.Summary.Processor.WithoutVerdict["end_before_start"])

	zipkin := `[
	 {"traceId":"00000000000000aa","id":"0000000000000001","name":"root","kind":"SERVER","timestamp":1000000,"duration":1000000,"localEndpoint":{"serviceName":"a"}},
	 {"traceId":"00000000000000aa","id":"zz","parentId":"0000000000000001","name":"bad","timestamp":1000000,"duration":10},
	 {"traceId":"00000000000000aa","id":"0000000000000002","parentId":"0000000000000001","name":"call","kind":"CLIENT","timestamp":1100000,"duration":2000000,"localEndpoint":{"serviceName":"a"},"tags":{"http.status_code":"200"}},
	 {"traceId":"00000000000000aa","id":"0000000000000003","parentId":"0000000000000001","name":"no duration","kind":"CLIENT","timestamp":1200000,"localEndpoint":{"serviceName":"a","ipv4":"010.0.0.01"}},
	 "not a span"
	]`
	p = filepath.Join(dir, "zipkin.json")
	require.NoError(t, os.WriteFile(p, []byte(zipkin), 0o600))
	rep = analyzeJSON(t, p)
	assert.Equal(t, map[string]int{"invalid_span_id": 1, "not_a_json_object": 1}, rep.Files[0].Malformed)
	tr := single(t, rep)
	assert.Equal(t, "000000000000000000000000000000aa", tr.TraceID, "64-bit trace IDs are left-padded")
	assert.Equal(t, 1, tr.Liveness.Orphaned)
	assert.Equal(t, 1, tr.Liveness.Unknown, "a span without duration: when it ended is unknown")
	assert.Equal(t, "call", tr.Orphaned[0].Name)
	assert.InDelta(t, 1.1, tr.Orphaned[0].AfterGone, 1e-9)
}

// TestPricesAndConfig: the price table comes from --prices or the collector config.
func TestPricesAndConfig(t *testing.T) {
	dir := t.TempDir()
	s2 := filepath.Join(scenarioDir, "s02_caller_leaves", "trace.json")
	prices := filepath.Join(dir, "prices.yaml")
	require.NoError(t, os.WriteFile(prices, []byte("gpt-4o: {input_per_million: 5, output_per_million: 20}\n"), 0o600))
	r := runCLI(t, "", "analyze", "--format", "json", "--prices", prices, s2)
	require.Equal(t, 0, r.code, r.stderr)
	var rep analyze.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.InDelta(t, 0.031, rep.Summary.Spend["orphaned"].Cost, 1e-12)
	// The table replaces the default one; gpt-4o-mini now matches "gpt-4o" by prefix.
	assert.InDelta(t, 3*(1200*5+300*20)/1e6, rep.Summary.Spend["live"].Cost, 1e-12)

	pricesJSON := filepath.Join(dir, "prices.json")
	require.NoError(t, os.WriteFile(pricesJSON, []byte(`{"prices": {"gpt-4o": {"input_per_million": 1, "output_per_million": 1}}}`), 0o600))
	r = runCLI(t, "", "analyze", "--format", "json", "--prices", pricesJSON, s2)
	require.Equal(t, 0, r.code, r.stderr)
	rep = analyze.Report{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.InDelta(t, 0.0038, rep.Summary.Spend["orphaned"].Cost, 1e-12)

	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("gpt-4o: {input_per_million: -1, output_per_million: 1}\n"), 0o600))
	r = runCLI(t, "", "analyze", "--prices", bad, s2)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "must not be negative")
	typo := filepath.Join(dir, "typo.yaml")
	require.NoError(t, os.WriteFile(typo, []byte("gpt-4o: {input_per_milion: 1}\n"), 0o600))
	r = runCLI(t, "", "analyze", "--prices", typo, s2)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "input_per_milion")

	// A collector configuration: the orphan processor's section and the exporter's namespace.
	collector := filepath.Join(dir, "collector.yaml")
	require.NoError(t, os.WriteFile(collector, []byte(`
receivers: {otlp: {protocols: {http: {}}}}
processors:
  orphan:
    decision_wait: 10s
    clock_skew_tolerance: 0s
    prices:
      gpt-4o: {input_per_million: 10, output_per_million: 10}
exporters:
  orphanmetrics: {namespace: team_orphans}
`), 0o600))
	r = runCLI(t, "", "analyze", "--format", "json", "--config", collector, s2)
	require.Equal(t, 0, r.code, r.stderr)
	rep = analyze.Report{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.InDelta(t, 0.038, rep.Summary.Spend["orphaned"].Cost, 1e-12)
	r = runCLI(t, "", "analyze", "--metrics", "--config", collector, s2)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "team_orphans_runs_total{")

	// An observing collector's configuration (the shipped default): the rules are the
	// exporter's.
	observing := filepath.Join(dir, "observing.yaml")
	require.NoError(t, os.WriteFile(observing, []byte(`
receivers: {otlp: {protocols: {http: {}}}}
processors: {batch: {}}
exporters:
  orphanmetrics:
    namespace: team_orphans
    decision_wait: 10s
    prices:
      gpt-4o: {input_per_million: 10, output_per_million: 10}
`), 0o600))
	r = runCLI(t, "", "analyze", "--format", "json", "--config", observing, s2)
	require.Equal(t, 0, r.code, r.stderr)
	rep = analyze.Report{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.InDelta(t, 0.038, rep.Summary.Spend["orphaned"].Cost, 1e-12, "the exporter's price table")

	badCfg := filepath.Join(dir, "badcfg.yaml")
	require.NoError(t, os.WriteFile(badCfg, []byte("processors: {orphan: {no_such_key: 1}}\n"), 0o600))
	r = runCLI(t, "", "analyze", "--config", badCfg, s2)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "no_such_key")
}

// TestDeadlineGone: the gone time the report shows is the processor's (here a deadline before
// the root's end), not merely the root's end.
func TestDeadlineGone(t *testing.T) {
	const t0 = 1767225600
	doc := fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"gw"}}]},"scopeSpans":[{"spans":[
	 {"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0000000000000001","name":"POST /ask","kind":2,"startTimeUnixNano":"%d","endTimeUnixNano":"%d",
	  "attributes":[{"key":"http.request.header.x-deadline","value":{"arrayValue":{"values":[{"stringValue":"%d.5"}]}}},{"key":"http.response.status_code","value":{"intValue":"504"}}]},
	 {"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0000000000000002","parentSpanId":"0000000000000001","name":"work","startTimeUnixNano":"%d","endTimeUnixNano":"%d"}
	]}]}]}`, t0*int64(1e9), (t0+3)*int64(1e9), t0+1, t0*int64(1e9)+1e8, (t0+2)*int64(1e9))
	p := filepath.Join(t.TempDir(), "deadline.json")
	require.NoError(t, os.WriteFile(p, []byte(doc), 0o600))
	rep := analyzeJSON(t, p)
	tr := single(t, rep)
	require.NotNil(t, tr.Root)
	assert.Equal(t, "deadline_exceeded", tr.Root.EndReason)
	require.NotNil(t, tr.Root.GoneAfterStart)
	assert.InDelta(t, 1.5, *tr.Root.GoneAfterStart, 1e-9)
	require.Len(t, tr.Orphaned, 1)
	assert.InDelta(t, 0.5, tr.Orphaned[0].AfterGone, 1e-9)
	text := runCLI(t, "", "analyze", p)
	assert.Contains(t, text.stdout, "gone at +1.500s (deadline before the end)")
}

// TestJaeger checks the Jaeger particulars end to end: a query API answer, 64-bit trace IDs,
// FOLLOWS_FROM (a link, not a parent), tags typed as strings, error tags, process tags.
func TestJaeger(t *testing.T) {
	doc := `{"data":[{"traceID":"a1b2c3d4e5f60718","spans":[
	 {"traceID":"a1b2c3d4e5f60718","spanID":"0000000000000001","operationName":"GET /checkout","references":[],"startTime":1700000000000000,"duration":1000000,
	  "tags":[{"key":"span.kind","type":"string","value":"server"},{"key":"http.request.method","type":"string","value":"GET"},{"key":"http.response.status_code","type":"string","value":"200"}],"processID":"p1"},
	 {"traceID":"a1b2c3d4e5f60718","spanID":"0000000000000003","operationName":"chat gpt-4o","references":[{"refType":"CHILD_OF","traceID":"a1b2c3d4e5f60718","spanID":"0000000000000001"}],"startTime":1700000000100000,"duration":2500000,
	  "tags":[{"key":"span.kind","type":"string","value":"client"},{"key":"error","type":"string","value":"true"},{"key":"gen_ai.operation.name","type":"string","value":"chat"},
	   {"key":"gen_ai.request.model","type":"string","value":"gpt-4o"},{"key":"gen_ai.usage.input_tokens","type":"string","value":"100"},{"key":"gen_ai.usage.output_tokens","type":"int64","value":"20"}],"processID":"p2"}
	],"processes":{"p1":{"serviceName":"shop","tags":[]},"p2":{"serviceName":"agent","tags":[{"key":"k8s.pod.name","type":"string","value":"pod-1"}]}}}],"errors":null}`
	p := filepath.Join(t.TempDir(), "jaeger.json")
	require.NoError(t, os.WriteFile(p, []byte(doc), 0o600))
	rep := analyzeJSON(t, p)
	assert.Equal(t, "jaeger-json", rep.Files[0].Format)
	tr := single(t, rep)
	assert.Equal(t, "0000000000000000a1b2c3d4e5f60718", tr.TraceID)
	assert.Equal(t, "completed", tr.Root.EndReason)
	require.Len(t, tr.Orphaned, 1)
	o := tr.Orphaned[0]
	assert.Equal(t, "chat gpt-4o", o.Name)
	assert.Equal(t, "CLIENT", o.Kind)
	assert.InDelta(t, 1.6, o.AfterGone, 1e-9)
	assert.Equal(t, "delivered_to_nobody", o.RunOutcome)
	require.NotNil(t, o.InputTokens)
	assert.Equal(t, int64(100), *o.InputTokens, "tokens typed as a string")
	assert.Equal(t, int64(20), *o.OutputTokens)
	require.Len(t, tr.NotableRuns, 1)
	assert.Equal(t, "error", tr.NotableRuns[0].Result, `error="true" typed as a string is the error status`)
}

// TestJaegerFollowsFrom: a FOLLOWS_FROM reference is read as a span link, not a parent (see
// the input package's tests), so the span is work reached only through a link, which
// DESIGN.md calls detached unless a key or a deadline binds it.
func TestJaegerFollowsFrom(t *testing.T) {
	doc := `{"traceID":"00000000000000f1","spans":[
	 {"traceID":"00000000000000f1","spanID":"0000000000000001","operationName":"POST /order","startTime":1700000000000000,"duration":1000000,
	  "tags":[{"key":"span.kind","type":"string","value":"server"}],"processID":"p1"},
	 {"traceID":"00000000000000f1","spanID":"0000000000000002","operationName":"send receipt","startTime":1700000000500000,"duration":3000000,
	  "references":[{"refType":"FOLLOWS_FROM","traceID":"00000000000000f1","spanID":"0000000000000001"}],"tags":[],"processID":"p1"}
	],"processes":{"p1":{"serviceName":"shop","tags":[]}}}`
	p := filepath.Join(t.TempDir(), "follows.json")
	require.NoError(t, os.WriteFile(p, []byte(doc), 0o600))
	rep := analyzeJSON(t, p)
	tr := single(t, rep)
	requireRoot(t, tr, "POST /order", "completed")
	assert.Equal(t, analyze.Liveness{Live: 1, Detached: 1}, tr.Liveness)
}

// TestREADMEOutput: the output the README shows for S2 is what `analyze` prints for it, run
// from the repository root as the README runs it.
func TestREADMEOutput(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	readme := string(b)
	t.Chdir(filepath.Join("..", ".."))
	r := runCLI(t, "", "analyze", "testdata/scenarios/s02_caller_leaves/trace.json")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	if !strings.Contains(readme, "```\n"+r.stdout+"```\n") {
		t.Errorf("cmd/orphanwatch/README.md does not show what analyze prints for S2:\n%s", r.stdout)
	}
}
