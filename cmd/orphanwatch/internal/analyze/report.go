package analyze

import (
	"sort"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/internal/verdictattrs"
)

// Report is the result of an analysis: the files read, one entry per trace, and a summary
// across all of them. It is what `--format json` prints.
type Report struct {
	Files   []FileReport  `json:"files"`
	Traces  []TraceReport `json:"traces"`
	Summary Summary       `json:"summary"`
}

// FileReport says what was read from one input.
type FileReport struct {
	Name   string `json:"name"`
	Format string `json:"format"`
	Spans  int    `json:"spans"`
	Traces int    `json:"traces"`
	// Malformed counts spans dropped while reading, by reason (spans that could not be
	// represented at all; spans the processor could not judge are in the summary).
	Malformed map[string]int `json:"malformed,omitempty"`
	Warnings  []string       `json:"warnings,omitempty"`
}

// TraceReport holds the verdicts of one trace.
type TraceReport struct {
	TraceID string   `json:"trace_id"`
	Files   []string `json:"files"`
	Spans   int      `json:"spans"`
	// Root is the trace's root request; nil when no span without a parent was in the input.
	// With several roots, the first abandoned one (cancelled, deadline_exceeded), else the
	// first; the others are in OtherRoots.
	Root       *RootReport  `json:"root"`
	OtherRoots []RootReport `json:"other_roots,omitempty"`
	// Liveness counts spans by verdict: live, orphaned, unknown, detached, and none (no
	// verdict: malformed spans).
	Liveness Liveness `json:"liveness"`
	// Runs counts runs by outcome.
	Runs map[string]int `json:"runs"`
	// NotableRuns lists the runs that did not end in success, in start order.
	NotableRuns []RunReport `json:"notable_runs"`
	// Orphaned lists the orphaned spans, in start order.
	Orphaned []SpanReport `json:"orphaned"`
	// Spend sums model calls by liveness ("live", "orphaned", "unknown", "detached").
	Spend map[string]*Spend `json:"spend"`
	// Edges are the service edges that did not carry the cancellation.
	Edges []Edge `json:"unpropagated_edges"`
	// SpanVerdicts lists every span with its verdict attributes (only with --spans).
	SpanVerdicts []SpanVerdict `json:"span_verdicts,omitempty"`

	all []SpanVerdict
}

// RootReport describes a trace's root request.
type RootReport struct {
	SpanID  string `json:"span_id"`
	Service string `json:"service"`
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	// Start is the root's start time (RFC 3339, UTC); Duration its length in seconds.
	Start    time.Time `json:"start"`
	Duration float64   `json:"duration_s"`
	// EndReason is orphanwatch.root.end_reason: "detached" when the root is detached work (a
	// trace of it is no root request), empty when the processor wrote none.
	EndReason string `json:"end_reason,omitempty"`
	// Detached is true when the trace's root is itself work meant to outlive a request (a
	// messaging CONSUMER span, or a span reached through a link): nothing in it is judged
	// against a gone time unless bound.
	Detached bool `json:"detached,omitempty"`
	// Bound is true when the root is detached work (a delivery, a linked trace) that an
	// idempotency key or a propagated deadline binds to a request elsewhere: it has no end
	// reason but "detached" and is judged, by its liveness, against that request's gone time.
	Bound bool `json:"bound,omitempty"`
	// Gone is the root's gone time, the earliest of its end and its deadline, as the
	// processor decided it; GoneAfterStart is it in seconds after the root's start.
	Gone           *time.Time `json:"gone,omitempty"`
	GoneAfterStart *float64   `json:"gone_after_start_s,omitempty"`
	// CancelReachHops and OrphanedDepthHops are the root's cancellation reach
	// (orphanwatch.cancel.reach_hops: how many service hops down the news travelled before
	// something noticed) and orphaned depth (orphanwatch.orphaned.depth_hops: the deepest hop
	// still working after the gone time); nil unless the root was cancelled or passed its
	// deadline.
	CancelReachHops   *int64 `json:"cancel_reach_hops,omitempty"`
	OrphanedDepthHops *int64 `json:"orphaned_depth_hops,omitempty"`
}

// Liveness counts spans by verdict.
type Liveness struct {
	Live             int `json:"live"`
	Orphaned         int `json:"orphaned"`
	StartedAfterGone int `json:"started_after_gone"`
	Unknown          int `json:"unknown"`
	Detached         int `json:"detached"`
	None             int `json:"none"`
}

// RunReport is one run (closed by the span that carries its outcome).
type RunReport struct {
	SpanID  string `json:"span_id"`
	Service string `json:"service"`
	// Name is the run's operation as the metrics label it (orphanwatch_runs_total's
	// `operation`, before label limits): e.g. "GET search-tool:8080", not the span name "GET".
	Name     string `json:"operation"`
	Outcome  string `json:"outcome"`
	Attempts int    `json:"attempts"`
	Result   string `json:"result"`
}

// SpanReport is an orphaned span.
type SpanReport struct {
	SpanID  string `json:"span_id"`
	Service string `json:"service"`
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	// StartAfterRoot is the span's start in seconds after the root's start (absent without a
	// root).
	StartAfterRoot   *float64 `json:"start_after_root_start_s,omitempty"`
	AfterGone        float64  `json:"after_gone_s"`
	StartedAfterGone bool     `json:"started_after_gone"`
	// CallerService is set where this span entered a service whose caller was not orphaned:
	// the edge CallerService -> Service did not carry the cancellation.
	CallerService string   `json:"caller_service,omitempty"`
	Attempt       int      `json:"attempt,omitempty"`
	RunOutcome    string   `json:"run_outcome,omitempty"`
	Model         string   `json:"model,omitempty"`
	InputTokens   *int64   `json:"input_tokens,omitempty"`
	OutputTokens  *int64   `json:"output_tokens,omitempty"`
	Cost          *float64 `json:"cost_usd,omitempty"`
}

// Spend sums model calls, in all and by model.
type Spend struct {
	ModelSpend
	// AttemptSeconds sums the durations of attempt spans (all of them, not only model calls).
	AttemptSeconds float64 `json:"attempt_seconds"`
	// Models holds the same sums by model.
	Models map[string]*ModelSpend `json:"models,omitempty"`
}

// ModelSpend sums model calls (of one model, or, in a Spend, of all).
type ModelSpend struct {
	ModelCalls   int     `json:"model_calls"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	Cost         float64 `json:"cost_usd"`
	// Unpriced counts model calls with token usage whose cost is unknown (no price for the
	// model and no cost attribute): their tokens are counted, their cost is not.
	Unpriced int `json:"unpriced_calls"`
	// NoUsage counts model calls with neither token usage nor cost (a failed call, say).
	NoUsage int `json:"calls_without_usage"`
}

// add adds o's sums to m.
func (m *ModelSpend) add(o *ModelSpend) {
	m.ModelCalls += o.ModelCalls
	m.InputTokens += o.InputTokens
	m.OutputTokens += o.OutputTokens
	m.Cost += o.Cost
	m.Unpriced += o.Unpriced
	m.NoUsage += o.NoUsage
}

// model returns the sums of model, made on first use.
func (s *Spend) model(model string) *ModelSpend {
	ms := s.Models[model]
	if ms == nil {
		ms = &ModelSpend{}
		s.Models[model] = ms
	}
	return ms
}

// Edge is a service edge that did not carry cancellation, with how many orphaned spans
// entered the callee through it.
type Edge struct {
	Caller string `json:"caller_service"`
	Callee string `json:"callee_service"`
	Spans  int    `json:"spans"`
}

// SpanVerdict is one span with the orphanwatch.* attributes the processor wrote on it.
type SpanVerdict struct {
	SpanID   string         `json:"span_id"`
	ParentID string         `json:"parent_span_id,omitempty"`
	Service  string         `json:"service"`
	Name     string         `json:"name"`
	Kind     string         `json:"kind"`
	Start    int64          `json:"start_unix_nano"`
	End      int64          `json:"end_unix_nano"`
	Verdict  map[string]any `json:"verdict"`
	// Carried is set when the verdict, or a part of it (a run's outcome, an edge), was carried
	// later as an orphanwatch.verdict event on another span (the span left before it was final);
	// Verdict is then the final one, without orphanwatch.verdict.deferred.
	Carried bool `json:"carried,omitempty"`
}

// Summary adds up every trace.
type Summary struct {
	Files  int `json:"files"`
	Traces int `json:"traces"`
	Spans  int `json:"spans"`
	// Malformed counts spans dropped while reading the files, by reason.
	Malformed map[string]int `json:"malformed_dropped"`
	// Roots counts roots by end reason ("detached" for traces whose root is detached work,
	// "missing" for traces whose root is not in the input).
	Roots    map[string]int    `json:"roots"`
	Liveness Liveness          `json:"liveness"`
	Runs     map[string]int    `json:"runs"`
	Spend    map[string]*Spend `json:"spend"`
	// OrphanedTokenShare is orphaned tokens (input + output) over all tokens of model calls
	// judged live or orphaned; 0 when there are none.
	OrphanedTokenShare float64 `json:"orphaned_token_share"`
	Edges              []Edge  `json:"unpropagated_edges"`
	// Processor holds the orphan processor's own counts of what it could not judge.
	Processor ProcessorCounts `json:"processor"`
}

// ProcessorCounts are read from the orphan processor's internal telemetry.
type ProcessorCounts struct {
	SpansProcessed    int64            `json:"spans_processed"`
	WithoutVerdict    map[string]int64 `json:"spans_without_verdict"`
	AttributesIgnored map[string]int64 `json:"attributes_ignored"`
	TracesRootMissing int64            `json:"traces_root_missing"`
	RunsUnknownRoot   int64            `json:"runs_unknown_root"`
	// SpansDeferred counts spans that left before their verdict was final (root not yet
	// arrived, chain incomplete); their verdicts were carried later and are in the report.
	SpansDeferred int64 `json:"spans_deferred"`
	// CarrierSpans counts the spans the processor made to carry verdicts (not in the report).
	CarrierSpans int64 `json:"carrier_spans"`
}

// span is one output span with what is read of it.
type span struct {
	traceID  pcommon.TraceID
	spanID   pcommon.SpanID
	parentID pcommon.SpanID
	service  string
	name     string
	op       string // the exporter's operation label (orphanmetrics.OperationOf)
	kind     ptrace.SpanKind
	start    int64
	end      int64
	attrs    pcommon.Map // its final verdict: carried verdicts read as its own (carried.go)
	carried  bool        // its verdict, or a part of it, came later as an event
}

func (s *span) str(k string) string {
	if v, ok := s.attrs.Get(k); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

func (s *span) num(k string) (float64, bool) {
	v, ok := s.attrs.Get(k)
	if !ok {
		return 0, false
	}
	switch v.Type() {
	case pcommon.ValueTypeDouble:
		return v.Double(), true
	case pcommon.ValueTypeInt:
		return float64(v.Int()), true
	}
	return 0, false
}

func (s *span) integer(k string) (int64, bool) {
	v, ok := s.attrs.Get(k)
	if !ok || v.Type() != pcommon.ValueTypeInt {
		return 0, false
	}
	return v.Int(), true
}

func (s *span) flag(k string) bool {
	v, ok := s.attrs.Get(k)
	return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
}

// category is the liveness bucket of a span: live, orphaned, unknown, detached or none.
func (s *span) category() string {
	if s.flag(verdict.AttrDetached) {
		return "detached"
	}
	switch l := s.str(verdict.AttrLiveness); l {
	case "live", "orphaned", "unknown":
		return l
	}
	return "none"
}

// verdictMap returns the orphanwatch.* attributes of the span.
func (s *span) verdictMap() map[string]any {
	m := map[string]any{}
	s.attrs.Range(func(k string, v pcommon.Value) bool {
		if len(k) > len("orphanwatch.") && k[:len("orphanwatch.")] == "orphanwatch." {
			m[k] = v.AsRaw()
		}
		return true
	})
	return m
}

var kindNames = map[ptrace.SpanKind]string{
	ptrace.SpanKindUnspecified: "UNSPECIFIED", ptrace.SpanKindInternal: "INTERNAL",
	ptrace.SpanKindServer: "SERVER", ptrace.SpanKindClient: "CLIENT",
	ptrace.SpanKindProducer: "PRODUCER", ptrace.SpanKindConsumer: "CONSUMER",
}

func kindName(k ptrace.SpanKind) string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return "UNSPECIFIED"
}

func buildReport(out []ptrace.Traces, files []FileReport, traceFiles map[pcommon.TraceID][]int, gone map[goneKey]int64) *Report {
	byTrace := map[pcommon.TraceID][]*span{}
	var order []pcommon.TraceID
	zeroTrace := 0
	carried := verdictattrs.CollectCarried(out)
	for _, td := range out {
		forEachSpan(td, func(res pcommon.Resource, sp ptrace.Span) {
			if verdictattrs.IsCarrier(sp) {
				return // made by the processor to carry verdicts: not a span of the input
			}
			s := &span{
				traceID: sp.TraceID(), spanID: sp.SpanID(), parentID: sp.ParentSpanID(),
				name: sp.Name(), op: orphanmetrics.OperationOf(sp), kind: sp.Kind(),
				start: int64(sp.StartTimestamp()), end: int64(sp.EndTimestamp()),
				attrs: sp.Attributes(),
			}
			f := carried.Final(sp)
			s.attrs, s.carried = f.Attrs, f.Carried
			if v, ok := res.Attributes().Get("service.name"); ok {
				s.service = v.AsString()
			}
			if s.traceID.IsEmpty() {
				zeroTrace++
			}
			if _, ok := byTrace[s.traceID]; !ok {
				order = append(order, s.traceID)
			}
			byTrace[s.traceID] = append(byTrace[s.traceID], s)
		})
	}
	rep := &Report{Files: files}
	for _, id := range order {
		spans := byTrace[id]
		if id.IsEmpty() {
			// Spans without a trace ID cannot belong to any trace; the processor passed them
			// on unjudged and counted them (zero_trace_id).
			continue
		}
		var names []string
		for _, fi := range traceFiles[id] {
			names = append(names, files[fi].Name)
		}
		rep.Traces = append(rep.Traces, buildTrace(id, spans, names, gone))
	}
	sort.SliceStable(rep.Traces, func(i, j int) bool {
		a, b := rep.Traces[i], rep.Traces[j]
		if a.Files[0] != b.Files[0] {
			return fileIndex(files, a.Files[0]) < fileIndex(files, b.Files[0])
		}
		sa, sb := traceStart(&a), traceStart(&b)
		if sa != sb {
			return sa < sb
		}
		return a.TraceID < b.TraceID
	})
	rep.Summary = summarize(rep, zeroTrace)
	return rep
}

func fileIndex(files []FileReport, name string) int {
	for i, f := range files {
		if f.Name == name {
			return i
		}
	}
	return len(files)
}

func traceStart(t *TraceReport) int64 {
	if t.Root != nil {
		return t.Root.Start.UnixNano()
	}
	first := int64(0)
	for _, s := range t.all {
		if s.Start > 0 && (first == 0 || s.Start < first) {
			first = s.Start
		}
	}
	return first
}

func buildTrace(id pcommon.TraceID, spans []*span, files []string, gone map[goneKey]int64) TraceReport {
	t := TraceReport{
		TraceID: id.String(), Files: files, Spans: len(spans),
		Runs: map[string]int{}, NotableRuns: []RunReport{}, Orphaned: []SpanReport{},
		Spend: map[string]*Spend{}, Edges: []Edge{},
	}
	sort.SliceStable(spans, func(i, j int) bool {
		if spans[i].start != spans[j].start {
			return spans[i].start < spans[j].start
		}
		return spans[i].end > spans[j].end
	})
	t.Root, t.OtherRoots = findRoots(spans, gone)
	edges := map[[2]string]int{}
	for _, s := range spans {
		cat := s.category()
		switch cat {
		case "live":
			t.Liveness.Live++
		case "orphaned":
			t.Liveness.Orphaned++
			if s.flag(verdict.AttrStartedAfterGone) {
				t.Liveness.StartedAfterGone++
			}
		case "unknown":
			t.Liveness.Unknown++
		case "detached":
			t.Liveness.Detached++
		default:
			t.Liveness.None++
		}
		if o := s.str(verdict.AttrRunOutcome); o != "" {
			t.Runs[o]++
			if o != "success" {
				n, _ := s.integer(verdict.AttrRunAttempts)
				t.NotableRuns = append(t.NotableRuns, RunReport{
					SpanID: s.spanID.String(), Service: s.service, Name: s.op, Outcome: o,
					Attempts: int(n), Result: s.str(verdict.AttrRunResult),
				})
			}
		}
		if _, ok := s.integer(verdict.AttrAttempt); ok && s.end > s.start && s.start > 0 {
			spendOf(t.Spend, cat).AttemptSeconds += float64(s.end-s.start) / 1e9
		}
		if m := s.str(verdict.AttrSpendModel); m != "" {
			addSpend(spendOf(t.Spend, cat), s, m)
		}
		if c := s.str(verdict.AttrCallerService); c != "" {
			edges[[2]string{c, s.service}]++
		}
		if cat == "orphaned" {
			t.Orphaned = append(t.Orphaned, orphanedSpan(s, t.Root))
		}
		t.all = append(t.all, SpanVerdict{
			SpanID: s.spanID.String(), Service: s.service, Name: s.name, Kind: kindName(s.kind),
			Start: s.start, End: s.end, Verdict: s.verdictMap(), Carried: s.carried,
		})
		if !s.parentID.IsEmpty() {
			t.all[len(t.all)-1].ParentID = s.parentID.String()
		}
	}
	t.Edges = sortedEdges(edges)
	return t
}

// WithSpanVerdicts fills every trace's SpanVerdicts.
func (r *Report) WithSpanVerdicts() {
	for i := range r.Traces {
		r.Traces[i].SpanVerdicts = r.Traces[i].all
	}
}

// findRoots picks the spans the processor decided are roots (they carry
// orphanwatch.root.end_reason): the first abandoned one (cancelled or deadline_exceeded), else
// the first, and the others. Without any, the earliest span without a parent (a detached root,
// or a root the processor could not judge).
func findRoots(spans []*span, gone map[goneKey]int64) (*RootReport, []RootReport) {
	var roots []*span
	main := -1
	for _, s := range spans {
		if r := s.str(verdict.AttrRootEndReason); r != "" {
			if main < 0 && (r == "cancelled" || r == "deadline_exceeded") {
				main = len(roots)
			}
			roots = append(roots, s)
		}
	}
	if len(roots) == 0 {
		for _, s := range spans {
			if s.parentID.IsEmpty() && s.category() != "none" {
				return rootReport(s, gone), nil
			}
		}
		return nil, nil
	}
	if main < 0 {
		main = 0
	}
	var others []RootReport
	for i, s := range roots {
		if i != main {
			others = append(others, *rootReport(s, gone))
		}
	}
	return rootReport(roots[main], gone), others
}

func rootReport(root *span, gone map[goneKey]int64) *RootReport {
	r := &RootReport{
		SpanID: root.spanID.String(), Service: root.service, Name: root.name, Kind: kindName(root.kind),
		Start: time.Unix(0, root.start).UTC(), Duration: float64(root.end-root.start) / 1e9,
		EndReason: root.str(verdict.AttrRootEndReason), Detached: root.flag(verdict.AttrDetached),
	}
	detached := r.EndReason == verdict.EndReasonDetached.String()
	if l := root.str(verdict.AttrLiveness); (r.EndReason == "" || detached) && (l == verdict.LivenessLive.String() || l == verdict.LivenessOrphaned.String()) {
		r.Bound = true
	}
	if g, ok := gone[goneKey{root.traceID, root.spanID}]; ok && r.EndReason != "" && !detached {
		gt := time.Unix(0, g).UTC()
		after := float64(g-root.start) / 1e9
		r.Gone, r.GoneAfterStart = &gt, &after
	}
	if v, ok := root.integer(verdict.AttrCancelReachHops); ok {
		r.CancelReachHops = &v
	}
	if v, ok := root.integer(verdict.AttrOrphanedDepth); ok {
		r.OrphanedDepthHops = &v
	}
	return r
}

func orphanedSpan(s *span, root *RootReport) SpanReport {
	r := SpanReport{
		SpanID: s.spanID.String(), Service: s.service, Name: s.name, Kind: kindName(s.kind),
		StartedAfterGone: s.flag(verdict.AttrStartedAfterGone),
		CallerService:    s.str(verdict.AttrCallerService),
		RunOutcome:       s.str(verdict.AttrRunOutcome),
		Model:            s.str(verdict.AttrSpendModel),
	}
	r.AfterGone, _ = s.num(verdict.AttrAfterGone)
	if n, ok := s.integer(verdict.AttrAttempt); ok {
		r.Attempt = int(n)
	}
	if root != nil {
		v := float64(s.start-root.Start.UnixNano()) / 1e9
		r.StartAfterRoot = &v
	}
	if n, ok := s.integer(verdict.AttrSpendInput); ok {
		r.InputTokens = &n
	}
	if n, ok := s.integer(verdict.AttrSpendOutput); ok {
		r.OutputTokens = &n
	}
	if c, ok := s.num(verdict.AttrSpendCost); ok {
		r.Cost = &c
	}
	return r
}

func spendOf(m map[string]*Spend, cat string) *Spend {
	s := m[cat]
	if s == nil {
		s = &Spend{Models: map[string]*ModelSpend{}}
		m[cat] = s
	}
	return s
}

// addSpend adds the model call s to sp, in all and under its model.
func addSpend(sp *Spend, s *span, model string) {
	call := ModelSpend{ModelCalls: 1}
	usage := false
	if n, ok := s.integer(verdict.AttrSpendInput); ok {
		call.InputTokens, usage = n, true
	}
	if n, ok := s.integer(verdict.AttrSpendOutput); ok {
		call.OutputTokens, usage = n, true
	}
	c, ok := s.num(verdict.AttrSpendCost)
	switch {
	case ok:
		call.Cost = c
	case usage:
		call.Unpriced = 1
	default:
		call.NoUsage = 1
	}
	sp.add(&call)
	sp.model(model).add(&call)
}

func mergeSpend(dst map[string]*Spend, src map[string]*Spend) {
	for cat, s := range src {
		d := spendOf(dst, cat)
		d.add(&s.ModelSpend)
		d.AttemptSeconds += s.AttemptSeconds
		for m, ms := range s.Models {
			d.model(m).add(ms)
		}
	}
}

func sortedEdges(m map[[2]string]int) []Edge {
	out := make([]Edge, 0, len(m))
	for k, n := range m {
		out = append(out, Edge{Caller: k[0], Callee: k[1], Spans: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Spans != out[j].Spans {
			return out[i].Spans > out[j].Spans
		}
		if out[i].Caller != out[j].Caller {
			return out[i].Caller < out[j].Caller
		}
		return out[i].Callee < out[j].Callee
	})
	return out
}

func summarize(r *Report, zeroTrace int) Summary {
	s := Summary{
		Files: len(r.Files), Traces: len(r.Traces), Malformed: map[string]int{},
		Roots: map[string]int{}, Runs: map[string]int{}, Spend: map[string]*Spend{}, Edges: []Edge{},
	}
	for _, f := range r.Files {
		s.Spans += f.Spans
		for k, v := range f.Malformed {
			s.Malformed[k] += v
		}
	}
	edges := map[[2]string]int{}
	for i := range r.Traces {
		t := &r.Traces[i]
		switch {
		case t.Root == nil:
			s.Roots["missing"]++
		case t.Root.Bound:
			s.Roots["bound"]++
		case t.Root.EndReason != "":
			s.Roots[t.Root.EndReason]++
			for _, o := range t.OtherRoots {
				s.Roots[o.EndReason]++
			}
		case t.Root.Detached:
			s.Roots["detached"]++
		default:
			s.Roots["unjudged"]++
		}
		s.Liveness.Live += t.Liveness.Live
		s.Liveness.Orphaned += t.Liveness.Orphaned
		s.Liveness.StartedAfterGone += t.Liveness.StartedAfterGone
		s.Liveness.Unknown += t.Liveness.Unknown
		s.Liveness.Detached += t.Liveness.Detached
		s.Liveness.None += t.Liveness.None
		for k, v := range t.Runs {
			s.Runs[k] += v
		}
		mergeSpend(s.Spend, t.Spend)
		for _, e := range t.Edges {
			edges[[2]string{e.Caller, e.Callee}] += e.Spans
		}
	}
	s.Liveness.None += zeroTrace
	s.Edges = sortedEdges(edges)
	var orphaned, judged int64
	for cat, sp := range s.Spend {
		if cat == "live" || cat == "orphaned" {
			judged += sp.InputTokens + sp.OutputTokens
		}
		if cat == "orphaned" {
			orphaned += sp.InputTokens + sp.OutputTokens
		}
	}
	if judged > 0 {
		s.OrphanedTokenShare = float64(orphaned) / float64(judged)
	}
	return s
}
