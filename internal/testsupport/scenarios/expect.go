package scenarios

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
)

// Verdict attribute names (docs/verdicts.md).
const (
	VLiveness         = "orphanwatch.liveness"
	VStartedAfterGone = "orphanwatch.started_after_gone"
	VAfterGone        = "orphanwatch.after_gone"
	VDetached         = "orphanwatch.detached"
	VAttempt          = "orphanwatch.attempt"
	VRunOutcome       = "orphanwatch.run.outcome"
	VRunAttempts      = "orphanwatch.run.attempts"
	VRunResult        = "orphanwatch.run.result"
	VRootEndReason    = "orphanwatch.root.end_reason"
	VCallerService    = "orphanwatch.caller.service"
	VSpendModel       = "orphanwatch.spend.model"
	VSpendInput       = "orphanwatch.spend.input_tokens"
	VSpendOutput      = "orphanwatch.spend.output_tokens"
	VSpendCost        = "orphanwatch.spend.cost"
	VSpendRepeated    = "orphanwatch.spend.repeated"
	VSpendNested      = "orphanwatch.spend.nested"
	VCancelReach      = "orphanwatch.cancel.reach_hops"
	VOrphanedDepth    = "orphanwatch.orphaned.depth_hops"
)

// Metric names (docs/verdicts.md, default namespace).
const (
	MRuns          = "orphanwatch_runs_total"
	MAttempts      = "orphanwatch_attempts_total"
	MRoots         = "orphanwatch_roots_total"
	MSpendSeconds  = "orphanwatch_spend_seconds_total"
	MSpendTokens   = "orphanwatch_spend_tokens_total"
	MSpendCost     = "orphanwatch_spend_cost_usd_total"
	MModelCalls    = "orphanwatch_model_calls_total"
	MOutlive       = "orphanwatch_outlive_seconds"
	MOutliveCount  = "orphanwatch_outlive_seconds_count"
	MOutliveSum    = "orphanwatch_outlive_seconds_sum"
	MUnpropagated  = "orphanwatch_unpropagated_total"
	MReachCount    = "orphanwatch_cancel_reach_hops_count"
	MReachSum      = "orphanwatch_cancel_reach_hops_sum"
	MDepthCount    = "orphanwatch_orphaned_depth_hops_count"
	MDepthSum      = "orphanwatch_orphaned_depth_hops_sum"
	DefaultSkewSec = 0.250 // default clock-skew tolerance between different services
)

// Expected is the content of expected.json.
type Expected struct {
	Scenario    string           `json:"scenario"`
	Description string           `json:"description"`
	Spans       []ExpectedSpan   `json:"spans"`
	Metrics     []ExpectedMetric `json:"metrics"`

	// Gone and RootService give, per trace ID (hex), the gone time (seconds after T0) and the
	// root's service that the hand-written verdicts assume. Not part of expected.json: the
	// package's own consistency test uses them.
	Gone        map[string]float64 `json:"-"`
	RootService map[string]string  `json:"-"`
	// Subtree gives, per span ID (hex) of a further root, its subtree's gone time and service.
	Subtree map[string]SubtreeGone `json:"-"`
}

// ExpectedSpan lists the exact set of orphanwatch.* attributes the processor writes on one
// span. Attributes == nil (JSON null) means "not checked beyond: must carry no orphanwatch.*
// attribute other than orphanwatch.liveness=unknown" (S13 malformed spans). Integer values
// are Go ints (attempt, run.attempts, tokens), after_gone and cost float64, flags bool.
type ExpectedSpan struct {
	SpanID     string         `json:"span_id"`
	TraceID    string         `json:"trace_id"`
	Service    string         `json:"service"`
	Name       string         `json:"name"`
	Attributes map[string]any `json:"attributes"`
}

// ExpectedMetric is one non-zero series. Counters by value; the outlive histogram as
// orphanwatch_outlive_seconds_count and orphanwatch_outlive_seconds_sum per label set.
type ExpectedMetric struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
	Value  float64           `json:"value"`
}

// V is a hand-written verdict: the orphanwatch.* attributes expected on one span.
type V map[string]any

// None is a span the processor leaves without any orphanwatch.* attribute.
func None() V { return V{} }

// Unchecked is a malformed span (S13): at most orphanwatch.liveness=unknown.
func Unchecked() V { return nil }

// Live is a span that ended by its gone time.
func Live() V { return V{VLiveness: "live", VStartedAfterGone: false} }

// Orphaned is a span that ended after its gone time by afterGone seconds.
func Orphaned(afterGone float64, startedAfterGone bool) V {
	return V{VLiveness: "orphaned", VStartedAfterGone: startedAfterGone, VAfterGone: afterGone}
}

// Unknown is a span whose root was never seen.
func Unknown() V { return V{VLiveness: "unknown"} }

// Detached is work meant to outlive the request.
func Detached() V { return V{VDetached: true} }

// Root adds the root's end reason.
func (v V) Root(reason string) V { v[VRootEndReason] = reason; return v }

// Attempt adds the attempt number.
func (v V) Attempt(n int) V { v[VAttempt] = n; return v }

// Run adds the run verdict (on the run's final attempt).
func (v V) Run(outcome string, attempts int, result string) V {
	v[VRunOutcome] = outcome
	v[VRunAttempts] = attempts
	v[VRunResult] = result
	return v
}

// Single is attempt 1 of a run of one attempt.
func (v V) Single(outcome, result string) V { return v.Attempt(1).Run(outcome, 1, result) }

// Caller adds orphanwatch.caller.service.
func (v V) Caller(service string) V { v[VCallerService] = service; return v }

// Model adds the spend model only (a model call without known tokens or cost).
// Reach adds the cancellation reach written on an abandoned root: how many service hops down
// the news travelled, and the deepest hop still working after the gone time.
func (v V) Reach(reach, depth int) V {
	v[VCancelReach] = reach
	v[VOrphanedDepth] = depth
	return v
}

// Nested marks an attempt inside another attempt of its own service: its seconds are the
// enclosing attempt's.
func (v V) Nested() V { v[VSpendNested] = true; return v }

// Repeated marks a span whose token usage repeats that of model calls below it.
func (v V) Repeated() V { v[VSpendRepeated] = true; return v }

func (v V) Model(model string) V { v[VSpendModel] = model; return v }

// Spend adds the spend of a model call with known tokens and cost.
func (v V) Spend(model string, in, out int, cost float64) V {
	v[VSpendModel] = model
	v[VSpendInput] = in
	v[VSpendOutput] = out
	v[VSpendCost] = cost
	return v
}

// Expect collects the expectations of one scenario.
type Expect struct {
	id, desc string
	b        *Builder
	verdicts map[*Span]V
	metrics  []ExpectedMetric
	// gone and rootService per trace, for the self-check in the tests (not exported to JSON).
	gone        map[*Trace]float64
	rootService map[*Trace]string
	subtree     map[*Span]SubtreeGone
}

// SubtreeGone is the gone time and root service of one root's subtree, in a trace with
// several roots.
type SubtreeGone struct {
	Gone    float64
	Service string
}

// NewExpect starts the expectations of scenario id over the spans of b.
func NewExpect(id string, b *Builder, desc string) *Expect {
	return &Expect{id: id, desc: desc, b: b, verdicts: map[*Span]V{},
		gone: map[*Trace]float64{}, rootService: map[*Trace]string{}, subtree: map[*Span]SubtreeGone{}}
}

// GoneUnder declares the gone time and service of another root of a trace with several roots:
// the spans below it are judged against it, not against the trace's Gone.
func (e *Expect) GoneUnder(root *Span, gone float64, service string) {
	e.subtree[root] = SubtreeGone{gone, service}
}

// Gone declares the gone time and root service that judge the spans of trace t (used only
// by the package's own consistency test).
func (e *Expect) Gone(t *Trace, gone float64, rootService string) {
	e.gone[t] = gone
	e.rootService[t] = rootService
}

// Span sets the expected verdict of s.
func (e *Expect) Span(s *Span, v V) {
	if _, dup := e.verdicts[s]; dup {
		panic(fmt.Sprintf("%s: verdict for span %s set twice", e.id, s.ID))
	}
	e.verdicts[s] = v
}

// Spans sets the expected verdicts of spans, one each, in order.
func (e *Expect) Spans(spans []*Span, vs ...V) {
	if len(spans) != len(vs) {
		panic(fmt.Sprintf("%s: %d verdicts for %d spans", e.id, len(vs), len(spans)))
	}
	for i, s := range spans {
		e.Span(s, vs[i])
	}
}

// Metric adds one expected series.
func (e *Expect) Metric(name string, value float64, labels ...string) {
	if len(labels)%2 != 0 {
		panic("labels must be pairs")
	}
	m := ExpectedMetric{Name: name, Labels: map[string]string{}, Value: value}
	for i := 0; i < len(labels); i += 2 {
		m.Labels[labels[i]] = labels[i+1]
	}
	e.metrics = append(e.metrics, m)
}

// Runs expects orphanwatch_runs_total{service_name, operation, outcome}.
func (e *Expect) Runs(service, operation, outcome string, n int) {
	e.Metric(MRuns, float64(n), "service_name", service, "operation", operation, "outcome", outcome)
}

// OneRun expects one run of the operation with the outcome (Runs) and its attempts, all with
// one liveness (Attempts).
func (e *Expect) OneRun(service, operation, outcome, liveness string, attempts int) {
	e.Runs(service, operation, outcome, 1)
	e.Attempts(service, operation, liveness, attempts)
}

// Attempts expects orphanwatch_attempts_total{service_name, operation, liveness}.
func (e *Expect) Attempts(service, operation, liveness string, n int) {
	e.Metric(MAttempts, float64(n), "service_name", service, "operation", operation, "liveness", liveness)
}

// Roots expects orphanwatch_roots_total{service_name, end_reason}.
func (e *Expect) Roots(service, reason string, n int) {
	e.Metric(MRoots, float64(n), "service_name", service, "end_reason", reason)
}

// SpendSeconds expects orphanwatch_spend_seconds_total{service_name, liveness}.
func (e *Expect) SpendSeconds(service, liveness string, v float64) {
	e.Metric(MSpendSeconds, v, "service_name", service, "liveness", liveness)
}

// SpendSplit expects a service's spend seconds split at the gone time: live seconds before it,
// orphaned seconds after it (SpendSeconds of each).
func (e *Expect) SpendSplit(service string, live, orphaned float64) {
	e.SpendSeconds(service, LLive, live)
	e.SpendSeconds(service, LOrphaned, orphaned)
}

// Tokens expects both directions of orphanwatch_spend_tokens_total.
func (e *Expect) Tokens(service, model, liveness string, in, out int) {
	if in > 0 {
		e.Metric(MSpendTokens, float64(in), "service_name", service, "model", model, "direction", "input", "liveness", liveness)
	}
	if out > 0 {
		e.Metric(MSpendTokens, float64(out), "service_name", service, "model", model, "direction", "output", "liveness", liveness)
	}
}

// Cost expects orphanwatch_spend_cost_usd_total{service_name, model, liveness}.
func (e *Expect) Cost(service, model, liveness string, usd float64) {
	e.Metric(MSpendCost, usd, "service_name", service, "model", model, "liveness", liveness)
}

// ModelCalls expects orphanwatch_model_calls_total{service_name, model, liveness}.
func (e *Expect) ModelCalls(service, model, liveness string, n int) {
	e.Metric(MModelCalls, float64(n), "service_name", service, "model", model, "liveness", liveness)
}

// ModelCall expects the series of one model call: its tokens (Tokens), its cost (Cost) and
// one call (ModelCalls).
func (e *Expect) ModelCall(service, model, liveness string, in, out int, usd float64) {
	e.Tokens(service, model, liveness, in, out)
	e.Cost(service, model, liveness, usd)
	e.ModelCalls(service, model, liveness, 1)
}

// Outlive expects the orphanwatch_outlive_seconds histogram's count and sum.
func (e *Expect) Outlive(service string, count int, sum float64) {
	e.Metric(MOutliveCount, float64(count), "service_name", service)
	e.Metric(MOutliveSum, sum, "service_name", service)
}

// Reach expects the cancellation-reach histograms of a root service: how many abandoned roots,
// the sum of their reach and the sum of their orphaned depth, in hops. A zero sum is not a
// series of its own only when count is zero too; sums of 0 are listed.
func (e *Expect) Reach(service string, count, reachSum, depthSum int) {
	e.Metric(MReachCount, float64(count), "service_name", service)
	e.Metric(MReachSum, float64(reachSum), "service_name", service)
	e.Metric(MDepthCount, float64(count), "service_name", service)
	e.Metric(MDepthSum, float64(depthSum), "service_name", service)
}

// Unpropagated expects orphanwatch_unpropagated_total{caller_service, callee_service}.
func (e *Expect) Unpropagated(caller, callee string, n int) {
	e.Metric(MUnpropagated, float64(n), "caller_service", caller, "callee_service", callee)
}

// Build checks that every span has a verdict and returns the Expected document, spans in
// creation order, metrics sorted by name and labels.
func (e *Expect) Build() Expected {
	out := Expected{Scenario: e.id, Description: e.desc, Spans: []ExpectedSpan{}, Metrics: []ExpectedMetric{},
		Gone: map[string]float64{}, RootService: map[string]string{}, Subtree: map[string]SubtreeGone{}}
	for r, g := range e.subtree {
		out.Subtree[hex.EncodeToString(r.ID[:])] = g
	}
	for t, g := range e.gone {
		out.Gone[hex.EncodeToString(t.ID[:])] = g
		out.RootService[hex.EncodeToString(t.ID[:])] = e.rootService[t]
	}
	for _, s := range e.b.spans {
		v, ok := e.verdicts[s]
		if !ok {
			panic(fmt.Sprintf("%s: no verdict for span %s %s %q", e.id, s.ID, s.Service, s.Name))
		}
		var attrs map[string]any
		if v != nil {
			attrs = map[string]any{}
			for k, x := range v {
				attrs[k] = x
			}
		}
		out.Spans = append(out.Spans, ExpectedSpan{
			SpanID: hex.EncodeToString(s.ID[:]), TraceID: hex.EncodeToString(s.TraceID[:]),
			Service: s.Service, Name: s.Name, Attributes: attrs,
		})
	}
	if len(e.verdicts) != len(e.b.spans) {
		panic(e.id + ": verdicts for spans that are not in the scenario")
	}
	out.Metrics = append(out.Metrics, e.metrics...)
	SortMetrics(out.Metrics)
	return out
}

// SortMetrics orders series by name, then by their label set.
func SortMetrics(ms []ExpectedMetric) {
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].Name != ms[j].Name {
			return ms[i].Name < ms[j].Name
		}
		return LabelKey(ms[i].Labels) < LabelKey(ms[j].Labels)
	})
}

// LabelKey is a canonical string of a label set ("k1=v1,k2=v2", keys sorted).
func LabelKey(l map[string]string) string {
	keys := slices.Sorted(maps.Keys(l))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, ",")
}

// JSON encodes Expected as written to expected.json: indented, with a trailing newline.
func (x Expected) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(x, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// LoadExpected reads an expected.json file. Numbers come back as float64 (encoding/json).
func LoadExpected(path string) (Expected, error) {
	var x Expected
	b, err := os.ReadFile(path)
	if err != nil {
		return x, err
	}
	err = json.Unmarshal(b, &x)
	return x, err
}

// Set sets one attribute of the verdict.
func (v V) Set(key string, value any) V { v[key] = value; return v }
