package scenarios

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Scenario names one scenario and its builder.
type Scenario struct {
	ID    string // "S2"
	Dir   string // directory under testdata/scenarios; "" when it has no files (S8)
	Title string
	Build func() (ptrace.Traces, Expected)
}

// All returns S1..S34 in order (S25..S29: round 4's run rules; S30..S34: its hops, detached
// work and retryable timeouts). S8 has no files (it is S2 shuffled: use S8Batches).
func All() []Scenario {
	return []Scenario{
		{"S1", "s01_happy_fanout", "happy fan-out", S1},
		{"S2", "s02_caller_leaves", "the caller leaves, the retry loop never hears", S2},
		{"S3", "s03_loop_checks", "the same, with a loop that checks", S3},
		{"S4", "s04_after_deadline", "dispatched after the deadline", S4},
		{"S5", "s05_retries_exhausted", "retries exhausted while someone still waits", S5},
		{"S6", "s06_hard_failure_grpc", "a hard failure, and gRPC", S6},
		{"S7", "s07_queue_idempotency_key", "the work crosses a queue, bound by its idempotency key", S7},
		{"S8", "", "arrival order does not matter (S2 shuffled, root last)", S8},
		{"S9", "s09_root_missing", "the root never arrives (S2 without its root)", S9},
		{"S10", "s10_clock_skew", "clocks disagree", S10},
		{"S11", "s11_detached", "work meant to outlive the request", S11},
		{"S12", "s12_root_answered_early", "the root answered, the fan-out went on", S12},
		{"S13", "s13_bad_input", "bad input", S13},
		{"S14", "s14_parent_cancel_not_noticed", "a parent's cancellation is not the run noticing", S14},
		{"S15", "s15_edges_late_unwind_inner_drop", "the edge that dropped the news must not vanish", S15},
		{"S16", "s16_deadline_calls_kept_open", "a propagated deadline passes while the caller keeps its calls open", S16},
		{"S17", "s17_late_entry", "late entry is not detachment", S17},
		{"S18", "s18_several_roots", "every parentless span is a root", S18},
		{"S19", "s19_languages_tool_calls", "cancellations of more languages, and an agent framework's tool call", S19},
		{"S20", "s20_queue_redelivery", "queue redelivery is one run", S20},
		{"S21", "s21_hedged_tries", "hedged tries are one run; parallel work is not", S21},
		{"S22", "s22_server_not_attempt_arrays", "a SERVER span is never an attempt; arrays of one value", S22},
		{"S23", "s23_proxy_client_left", "a proxy that saw its client leave", S23},
		{"S24", "s24_request_reply_queue", "request-reply over a queue", S24},
		{"S25", "s25_loop_outlives_parent", "a loop outlives its parent", S25},
		{"S26", "s26_keyed_resend_after_success", "a keyed re-send after a success", S26},
		{"S27", "s27_hedge_loser_cancelled_early", "hedged tries, the loser cancelled long before the winner finished", S27},
		{"S28", "s28_two_endpoints_one_host", "two endpoints of one host are two operations", S28},
		{"S29", "s29_loop_ended_between_tries", "the loop's span ended between two tries", S29},
		{"S30", "s30_per_try_timeout", "an SDK's per-try timeout: the abandoned try's work", S30},
		{"S31", "s31_async_api_handed_over", "an asynchronous API hands its work over", S31},
		{"S32", "s32_kafka_redelivery_not_bound", "a redelivered Kafka message is one run, not bound to the producer", S32},
		{"S33", "s33_detached_roots", "the roots of detached work end detached", S33},
		{"S34", "s34_sdk_timeouts_retryable", "the timeouts of common SDKs are retryable", S34},
	}
}

// TraceJSON encodes traces as OTLP/JSON with ptrace.JSONMarshaler, indented for review
// (indentation does not change the content), with a trailing newline.
func TraceJSON(td ptrace.Traces) ([]byte, error) {
	var m ptrace.JSONMarshaler
	raw, err := m.MarshalTraces(td)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// LoadTraces reads a trace.json file.
func LoadTraces(path string) (ptrace.Traces, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return ptrace.Traces{}, err
	}
	var u ptrace.JSONUnmarshaler
	return u.UnmarshalTraces(b)
}

// LoadDirs reads the trace.json of every scenario directory (s*) under root: the directories,
// in glob order, and their traces. An error names the file it could not read.
func LoadDirs(root string) ([]string, []ptrace.Traces, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "s*"))
	if err != nil {
		return nil, nil, err
	}
	tds := make([]ptrace.Traces, len(dirs))
	for i, d := range dirs {
		path := filepath.Join(d, "trace.json")
		if tds[i], err = LoadTraces(path); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return dirs, tds, nil
}

// Files returns every generated file under testdata/scenarios, by relative path.
func Files() (map[string][]byte, error) {
	files := map[string][]byte{}
	var readme bytes.Buffer
	readme.WriteString(readmeHead)
	for _, sc := range All() {
		td, exp := sc.Build()
		if sc.Dir != "" {
			tj, err := TraceJSON(td)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sc.ID, err)
			}
			ej, err := exp.JSON()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sc.ID, err)
			}
			files[sc.Dir+"/trace.json"] = tj
			files[sc.Dir+"/expected.json"] = ej
		}
		writeReadmeSection(&readme, sc, td, exp)
	}
	readme.WriteString(readmeTail)
	files["README.md"] = readme.Bytes()
	return files, nil
}

// WriteFiles writes Files() under dir (testdata/scenarios).
func WriteFiles(dir string) error {
	files, err := Files()
	if err != nil {
		return err
	}
	for rel, b := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// spanRow is a flattened pdata span for the README timeline.
type spanRow struct {
	span    ptrace.Span
	service string
}

func flatten(td ptrace.Traces) []spanRow {
	var rows []spanRow
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		svc := ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			svc = v.Str()
		}
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				rows = append(rows, spanRow{ss.At(k), svc})
			}
		}
	}
	return rows
}

func key(t pcommon.TraceID, s pcommon.SpanID) string {
	return hex.EncodeToString(t[:]) + "/" + hex.EncodeToString(s[:])
}

func secs(ts pcommon.Timestamp) string {
	if ts == 0 {
		return "0 (unset)"
	}
	return fmtSec(float64(int64(ts)-T0Unix*1e9) / 1e9)
}

// fmtSec prints seconds with at least two decimals (0.10, 5.50, 0.0005).
func fmtSec(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if i := strings.IndexByte(s, '.'); i < 0 || len(s)-i-1 < 2 {
		return fmt.Sprintf("%.2f", v)
	}
	return s
}

var kindNames = map[ptrace.SpanKind]string{Internal: "INTERNAL", Server: "SERVER", Client: "CLIENT", Producer: "PRODUCER", Consumer: "CONSUMER"}

// facts summarises the attributes that matter for the verdicts.
func facts(s ptrace.Span) string {
	var f []string
	a := s.Attributes()
	get := func(k string) (pcommon.Value, bool) { return a.Get(k) }
	if v, ok := get(AttrHTTPStatus); ok {
		f = append(f, "HTTP "+v.AsString())
	}
	if v, ok := get(AttrRPCGRPCStatusCode); ok {
		f = append(f, "grpc "+v.AsString())
	}
	if v, ok := get(AttrErrorType); ok {
		f = append(f, "error.type="+strconv.Quote(v.AsString()))
	}
	if s.Status().Code() == ptrace.StatusCodeError {
		f = append(f, "status ERROR")
	}
	if v, ok := get(AttrHTTPResendCount); ok {
		if v.Type() == pcommon.ValueTypeStr {
			f = append(f, "resend_count="+strconv.Quote(v.Str())+" (string!)")
		} else {
			f = append(f, "resend_count="+v.AsString())
		}
	}
	if _, ok := get(AttrIdempotencyKey); ok {
		f = append(f, "idempotency-key")
	}
	if v, ok := get(AttrDeadline); ok {
		f = append(f, "x-deadline="+v.Slice().At(0).Str())
	}
	if v, ok := get(AttrGenAIInputTokens); ok {
		out, _ := get(AttrGenAIOutputTokens)
		f = append(f, "tokens "+v.AsString()+"/"+out.AsString())
	}
	if v, ok := get("legacy.note"); ok && !isValidUTF8(v.Str()) {
		f = append(f, "invalid UTF-8 in url.full, legacy.note")
	}
	for i := 0; i < s.Links().Len(); i++ {
		id := s.Links().At(i).SpanID()
		f = append(f, "link→"+hex.EncodeToString(id[:]))
	}
	return strings.Join(f, ", ")
}

func isValidUTF8(s string) bool { return strings.ToValidUTF8(s, "") == s }

func verdictText(attrs map[string]any) string {
	if attrs == nil {
		return "*malformed: no verdict, or liveness=unknown only*"
	}
	if len(attrs) == 0 {
		return "—"
	}
	keys := slices.Sorted(maps.Keys(attrs))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", strings.TrimPrefix(k, "orphanwatch."), attrs[k])
	}
	return strings.Join(parts, "; ")
}

func writeReadmeSection(w *bytes.Buffer, sc Scenario, td ptrace.Traces, exp Expected) {
	fmt.Fprintf(w, "## %s: %s\n\n", sc.ID, sc.Title)
	if sc.Dir != "" {
		fmt.Fprintf(w, "Files: `%s/trace.json`, `%s/expected.json`. Go: `scenarios.%s()`.\n\n", sc.Dir, sc.Dir, sc.ID)
	} else {
		fmt.Fprintf(w, "No files: S2's spans (built with scenario number 8, so other IDs) shuffled, split in six batches, "+
			"the root last. Go: `scenarios.S8Batches()` (or `scenarios.S8()` for one Traces in shuffled order). "+
			"Expected: exactly S2's verdicts and metrics.\n\n")
	}
	fmt.Fprintf(w, "%s\n\n", exp.Description)
	if sc.Dir == "" {
		return
	}

	rows := flatten(td)
	queue := map[string][]spanRow{}
	parent := map[string]string{}
	present := map[string]bool{}
	for _, r := range rows {
		present[key(r.span.TraceID(), r.span.SpanID())] = true
		k := key(r.span.TraceID(), r.span.SpanID())
		queue[k] = append(queue[k], r)
		if !r.span.ParentSpanID().IsEmpty() {
			parent[k] = key(r.span.TraceID(), r.span.ParentSpanID())
		}
	}
	depth := func(k string) int {
		d := 0
		seen := map[string]bool{k: true}
		for {
			p, ok := parent[k]
			if !ok || seen[p] || !present[p] {
				return d
			}
			seen[p] = true
			d++
			k = p
		}
	}
	w.WriteString("| trace | span | service | kind | name | start | end | facts | expected verdict |\n")
	w.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	lastTrace := ""
	for _, es := range exp.Spans {
		k := es.TraceID + "/" + es.SpanID
		q := queue[k]
		r := q[0]
		queue[k] = q[1:]
		tcol := ""
		if es.TraceID != lastTrace {
			tcol = "`" + es.TraceID + "`"
			lastTrace = es.TraceID
		}
		name := strings.Repeat("· ", depth(k)) + r.span.Name()
		fmt.Fprintf(w, "| %s | `%s` | %s | %s | %s | %s | %s | %s | %s |\n", tcol, es.SpanID, r.service,
			kindNames[r.span.Kind()], name, secs(r.span.StartTimestamp()), secs(r.span.EndTimestamp()),
			facts(r.span), verdictText(es.Attributes))
	}
	w.WriteString("\nExpected metric series:\n\n")
	for _, m := range exp.Metrics {
		fmt.Fprintf(w, "- `%s{%s}` = %s\n", m.Name, LabelKey(m.Labels), strconv.FormatFloat(m.Value, 'f', -1, 64))
	}
	w.WriteString("\n")
}

const readmeHead = `# Scenario test data

Generated by ` + "`go test ./internal/testsupport/scenarios -update`" + ` from the Go builders in
` + "`internal/testsupport/scenarios`" + ` (do not edit by hand; the golden test fails when these files differ from
what the code generates). The scenarios are those of SCENARIOS.md; the verdicts follow
` + "`docs/verdicts.md`" + ` literally. Open questions about the contract are in
[QUESTIONS.md](QUESTIONS.md) (hand-written).

## Files

Each scenario directory holds:

- ` + "`trace.json`" + `: all traces of the scenario in one OTLP/JSON document, written with
  ` + "`ptrace.JSONMarshaler`" + ` (then indented). Read it with ` + "`ptrace.JSONUnmarshaler`" + ` or
  ` + "`scenarios.LoadTraces`" + `. One ResourceSpans per service (` + "`service.name`" + ` only), one scope.
- ` + "`expected.json`" + `: ` + "`{scenario, description, spans, metrics}`" + `.
  - ` + "`spans`" + ` lists every span of the scenario (by ` + "`trace_id`" + `/` + "`span_id`" + ` hex, with service and
    name) and the EXACT set of ` + "`orphanwatch.*`" + ` attributes the processor writes on it: ` + "`{}`" + ` means
    none. ` + "`null`" + ` (S13 only) means a malformed span: not checked beyond "carries no
    ` + "`orphanwatch.*`" + ` attribute except possibly ` + "`orphanwatch.liveness`" + `=` + "`unknown`" + `".
    ` + "`orphanwatch.attempt`" + `, ` + "`run.attempts`" + ` and ` + "`spend.*_tokens`" + ` are ints, ` + "`after_gone`" + ` and
    ` + "`spend.cost`" + ` doubles, ` + "`started_after_gone`" + ` and ` + "`detached`" + ` bools (JSON numbers come back
    as float64 from encoding/json: compare ints by value).
  - ` + "`metrics`" + ` lists every non-zero series of the exporter's counters with its exact value; the
    ` + "`orphanwatch_outlive_seconds`" + ` histogram as ` + "`_count`" + ` and ` + "`_sum`" + ` per label set. Values that
    are sums of durations or costs are float sums: compare with a tolerance of about 1e-9.

Conventions of the data:

- Times are seconds after t0 = 2026-01-01T00:00:00Z (unix 1767225600).
- Trace ID ` + "`5c<scenario><trace#>00…00<trace#>`" + `, span ID ` + "`<scenario><trace#>0000<counter>`" + ` (hex),
  counter per trace in creation order.
- Default configuration assumed: clock-skew tolerance 250 ms between different services (same
  service: exact); price table gpt-4o 2.50 / 10.00 and gpt-4o-mini 0.15 / 0.60 USD per million
  input / output tokens; idempotency key attribute ` + "`http.request.header.idempotency-key`" + `
  (string array); deadline attribute ` + "`http.request.header.x-deadline`" + ` (string array, unix
  seconds); a maximum attempt count of at least 5 and a run timeout long enough for the gaps
  between attempts (S2: 2.0 s).
- HTTP spans: CLIENT ` + "`GET`/`POST`" + ` with ` + "`url.full`, `server.address`, `server.port`" + `; SERVER
  ` + "`METHOD /route`" + ` with ` + "`http.route`" + `; ` + "`http.response.status_code`" + ` int; ` + "`error.type`" + ` and status
  ERROR for 5xx, and for 4xx on CLIENT spans; retries carry ` + "`http.request.resend_count`" + `. GenAI:
  CLIENT ` + "`chat <model>`" + ` with ` + "`gen_ai.operation.name`=chat, `gen_ai.provider.name`=openai" + `, request
  and response model, usage tokens. gRPC: ` + "`rpc.system`=grpc, `rpc.service`, `rpc.method`,\n  `rpc.grpc.status_code`" + `.
  Messaging: PRODUCER ` + "`send <dest>`" + ` / CONSUMER ` + "`process <dest>`" + `, the CONSUMER linked to the PRODUCER.
- In the timelines below, "·" marks depth under the parent span.

## Scenarios at a glance

| scenario | directory | what it checks |
| --- | --- | --- |
| S1 | ` + "`s01_happy_fanout`" + ` | all live, all success, root completed |
| S2 | ` + "`s02_caller_leaves`" + ` | root cancelled at 3.00; researcher's retry loop, chat and publish orphaned; edge gateway → researcher |
| S3 | ` + "`s03_loop_checks`" + ` | same, but the loop notices: run cancelled, researcher live within the skew tolerance |
| S4 | ` + "`s04_after_deadline`" + ` | propagated deadline; chat dispatched after it |
| S5 | ` + "`s05_retries_exhausted`" + ` | five 503s, retryable_failure, nothing orphaned |
| S6 | ` + "`s06_hard_failure_grpc`" + ` | HTTP 400 hard_failure; gRPC 14, 14, 0 success; gRPC 3 hard_failure |
| S7 | ` + "`s07_queue_idempotency_key`" + ` | work across a queue bound by an idempotency key (two traces) |
| S8 | (none: ` + "`S8Batches()`" + `) | S2 shuffled in six batches, root last: S2's verdicts |
| S9 | ` + "`s09_root_missing`" + ` | S2 without its root: liveness unknown, runs unknown_root |
| S10 | ` + "`s10_clock_skew`" + ` | callee clock 80 ms ahead: live under 250 ms tolerance |
| S11 | ` + "`s11_detached`" + ` | consumer work meant to outlive the request: detached |
| S12 | ` + "`s12_root_answered_early`" + ` | root completed early, critic's chat delivered_to_nobody |
| S13 | ` + "`s13_bad_input`" + ` | malformed spans mixed with good ones (+ ` + "`S13HugeTrace()`" + ` in Go) |

`

const readmeTail = `## S13's 10,000-span trace

Not in any file (about 2.5 MB of JSON): ` + "`scenarios.S13HugeTrace()`" + ` builds it (root gateway
POST /ask 0.00–10.00, a chain of 999 nested INTERNAL spans, 9,000 CLIENT GET leaves under the
deepest one). Expected: passes through unchanged, nothing orphaned, bounded memory; within the
spans-per-trace bound every span live, past it no verdict or ` + "`unknown`" + ` and the overflow counted.

## S13's invalid UTF-8

` + "`s13_bad_input/trace.json`" + ` deliberately contains raw invalid UTF-8 bytes in two attribute values
(` + "`ptrace.JSONMarshaler`" + ` writes them as they are, and ` + "`ptrace.JSONUnmarshaler`" + ` reads them back
unchanged). Editors may show replacement characters there; do not "fix" the file.
`
