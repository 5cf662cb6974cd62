// Package truth is the simulator's ground truth: what really happened in a fanoutsim run,
// independent of what a detector later infers from the spans.
//
// The simulator tells a [Book] the facts only it knows: which request a trace serves, which spans
// are attempts of which logical operation, how each attempt ended from the caller's point of view
// (ok, retryable, hard, or stopped because the caller went away), which spans recorded that they
// noticed a cancellation, and the token usage of model calls. The Book is also an OpenTelemetry
// [sdktrace.SpanProcessor]: registered on every TracerProvider of the simulator it learns the
// real start and end time of every span, so that "after the caller left" is decided on the same
// timestamps the spans carry.
//
// "The caller left" (the gone time of a request) is the moment the gateway's root span ended,
// or the deadline carried with the request, whichever came first: the definition of
// docs/verdicts.md and DESIGN.md, so that the truth is comparable with the orphan processor.
package truth

import (
	"context"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Outcome is the true outcome of a run, in the words of docs/verdicts.md.
type Outcome string

// Run outcomes.
const (
	Success           Outcome = "success"
	RetryableFailure  Outcome = "retryable_failure"
	HardFailure       Outcome = "hard_failure"
	Cancelled         Outcome = "cancelled"
	DeliveredToNobody Outcome = "delivered_to_nobody"
	// UnknownRoot: the run's request has no ended root span (only after an aborted run).
	UnknownRoot Outcome = "unknown_root"
)

// Outcomes lists the five outcomes a run of a complete simulation can have, in report order.
var Outcomes = []Outcome{Success, RetryableFailure, HardFailure, Cancelled, DeliveredToNobody}

// Result is how one attempt ended, as the code that made it saw it.
type Result string

// Attempt results.
const (
	ResultOK        Result = "ok"
	ResultRetryable Result = "retryable" // HTTP 408, 425, 429, 5xx but 501
	ResultHard      Result = "hard"      // any other failure
	ResultCancelled Result = "cancelled" // the attempt stopped because its context was cancelled or its deadline passed
)

// ResultOfHTTPStatus classifies an HTTP response status the way the retry loops do.
func ResultOfHTTPStatus(code int) Result {
	switch {
	case code >= 200 && code < 400:
		return ResultOK
	case code == 408 || code == 425 || code == 429 || (code >= 500 && code <= 599 && code != 501):
		return ResultRetryable
	}
	return ResultHard
}

// AttemptKind tells what an attempt was.
type AttemptKind string

// Attempt kinds.
const (
	KindCall    AttemptKind = "call"    // an HTTP call (a sub-agent, a tool)
	KindModel   AttemptKind = "model"   // a model call (chat)
	KindPublish AttemptKind = "publish" // a message handed to a queue (PRODUCER)
)

// Attempt is one try of a logical operation, as the simulator made it.
type Attempt struct {
	TraceID   trace.TraceID
	SpanID    trace.SpanID
	RunID     string // the logical operation; all attempts of a run share it
	Number    int    // 1-based
	Service   string
	Operation string // the span name
	Kind      AttemptKind
	Result    Result
	Status    int // HTTP status, 0 when none

	Model        string
	InputTokens  int64
	OutputTokens int64
}

// Root is the gateway's SERVER span for one user request.
type Root struct {
	RequestID int
	TraceID   trace.TraceID
	SpanID    trace.SpanID
	Service   string
	// Deadline is the deadline the request carried as data (zero when none travelled).
	Deadline time.Time
}

// UserOutcome is what the user saw.
type UserOutcome struct {
	RequestID int
	Left      bool // patience ran out before the answer: the tab was closed
	Status    int  // HTTP status received, 0 when none
	Err       bool // the request failed for another reason
}

// hopGone is the gone time of span sid given its root's, g (DESIGN.md "a caller that gave up",
// as the collector decides it, internal/verdict callerGaveUp): the earliest of g and the end of
// every CLIENT span that gave up on the SERVER span it called, at or above sid: the client in
// another service, recording a cancellation or a passed deadline (no response), ended before
// the server beyond the clock-skew tolerance tol. A caller's end only makes a gone time
// earlier, never creates one.
func (b *Book) hopGone(sid trace.SpanID, g goneAt, tol int64) goneAt {
	for id, n := sid, 0; n < 64; n++ {
		s, ok := b.spans[id]
		if !ok {
			break
		}
		if s.kind == trace.SpanKindServer {
			if p, ok := b.spans[s.parent]; ok && p.kind == trace.SpanKindClient && p.service != s.service &&
				p.stopped && p.end+tol < s.end && p.end < g.at {
				g = goneAt{at: p.end, service: p.service}
			}
		}
		id = s.parent
	}
	return g
}

// spanRec is what the Book keeps of every ended span.
type spanRec struct {
	traceID trace.TraceID
	parent  trace.SpanID
	kind    trace.SpanKind
	service string
	name    string
	start   int64 // unix ns
	end     int64
	// stopped: the span recorded a cancellation or a deadline error (HTTP 499, error.type
	// "context canceled" / "context deadline exceeded", gRPC CANCELLED / DEADLINE_EXCEEDED).
	stopped bool
}

type rootRec struct {
	Root
	status  int
	noticed bool
}

// Book collects the facts of one simulation. It is safe for concurrent use and is an
// sdktrace.SpanProcessor. The zero value is not usable: call [NewBook].
type Book struct {
	mu       sync.Mutex
	spans    map[trace.SpanID]spanRec
	roots    map[trace.TraceID]*rootRec
	attempts []Attempt
	noticed  map[trace.SpanID]bool
	users    []UserOutcome
	maxSpans int
	dropped  int
}

// DefaultMaxSpans bounds the span records a Book keeps.
const DefaultMaxSpans = 2_000_000

// NewBook returns an empty Book.
func NewBook() *Book {
	return &Book{
		spans:    map[trace.SpanID]spanRec{},
		roots:    map[trace.TraceID]*rootRec{},
		noticed:  map[trace.SpanID]bool{},
		maxSpans: DefaultMaxSpans,
	}
}

// RootStarted records the root span of a request.
func (b *Book) RootStarted(r Root) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.roots[r.TraceID] = &rootRec{Root: r}
}

// RootEnded records the HTTP status the gateway answered with and whether it answered because
// it noticed that the caller left or the deadline passed.
func (b *Book) RootEnded(traceID trace.TraceID, status int, noticed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.roots[traceID]; ok {
		r.status, r.noticed = status, noticed
	}
}

// Attempted records one attempt. The span's times come from the span itself.
func (b *Book) Attempted(a Attempt) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.attempts = append(b.attempts, a)
}

// Noticed records that a span recorded a cancellation or a passed deadline: the retry loop or
// the handler around attempts stopped because the caller went away.
func (b *Book) Noticed(spanID trace.SpanID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.noticed[spanID] = true
}

// User records what a user saw.
func (b *Book) User(o UserOutcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.users = append(b.users, o)
}

// OnStart implements sdktrace.SpanProcessor.
func (b *Book) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd implements sdktrace.SpanProcessor: it keeps the span's real times.
func (b *Book) OnEnd(s sdktrace.ReadOnlySpan) {
	svc := ""
	if res := s.Resource(); res != nil {
		if v, ok := res.Set().Value("service.name"); ok {
			svc = v.AsString()
		}
	}
	rec := spanRec{
		traceID: s.SpanContext().TraceID(),
		parent:  s.Parent().SpanID(),
		kind:    s.SpanKind(),
		service: svc,
		name:    s.Name(),
		start:   s.StartTime().UnixNano(),
		end:     s.EndTime().UnixNano(),
		stopped: recordedStop(s.Attributes()),
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.spans) >= b.maxSpans {
		b.dropped++
		return
	}
	b.spans[s.SpanContext().SpanID()] = rec
}

// Shutdown implements sdktrace.SpanProcessor.
func (b *Book) Shutdown(context.Context) error { return nil }

// ForceFlush implements sdktrace.SpanProcessor.
func (b *Book) ForceFlush(context.Context) error { return nil }

// Price is a model's price in USD per million tokens.
type Price struct {
	InputPerMillion  float64 `json:"input_per_million"`
	OutputPerMillion float64 `json:"output_per_million"`
}

// Prices maps a model name to its price; a model not listed is looked up by the longest listed
// name that prefixes it ("gpt-4o-2024-08-06" costs as "gpt-4o").
type Prices map[string]Price

// DefaultPrices is the price table of the scenarios (USD per million input / output tokens).
func DefaultPrices() Prices {
	return Prices{
		"gpt-4o":      {InputPerMillion: 2.50, OutputPerMillion: 10.00},
		"gpt-4o-mini": {InputPerMillion: 0.15, OutputPerMillion: 0.60},
	}
}

// Cost returns the cost of a model call and whether the model has a price.
func (p Prices) Cost(model string, in, out int64) (float64, bool) {
	pr, ok := p[model]
	if !ok {
		best := 0
		for name, q := range p {
			if len(name) > best && strings.HasPrefix(model, name) {
				pr, best, ok = q, len(name), true
			}
		}
	}
	if !ok {
		return 0, false
	}
	return (float64(max(in, 0))*pr.InputPerMillion + float64(max(out, 0))*pr.OutputPerMillion) / 1e6, true
}

// ParseUnixSeconds parses an X-Deadline value (unix seconds, fractions allowed) the way a reader
// of the span attribute does: as a float64 scaled to nanoseconds.
func ParseUnixSeconds(v string) (time.Time, bool) {
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(x > 0) || x >= math.MaxInt64/1e9 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(x*1e9)), true
}

// FormatUnixSeconds writes a deadline as unix seconds with microsecond precision.
func FormatUnixSeconds(t time.Time) string {
	us := t.UnixMicro()
	return strconv.FormatInt(us/1e6, 10) + "." + leftPad(strconv.FormatInt(us%1e6, 10), 6)
}

func leftPad(s string, n int) string {
	for len(s) < n {
		s = "0" + s
	}
	return s
}

// Options tune how the truth is computed.
type Options struct {
	// Tolerance is the clock-skew tolerance: a span of another service than its root is after
	// the gone time only when it is later than gone + Tolerance; spans of the root's own service
	// are compared exactly. Use the orphan processor's clock_skew_tolerance to compare figures
	// with it; 0 is the exact truth (all services of the simulator share one clock).
	Tolerance time.Duration
	// Prices is the price table; nil means [DefaultPrices].
	Prices Prices
	// Grace is how near the gone time a span that recorded a cancellation must have ended to
	// count as noticing it (the processor's cancellation.grace); 0 means [DefaultGrace].
	Grace time.Duration
}

// Spend is what some set of spans spent.
type Spend struct {
	ModelCalls   int     `json:"model_calls"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	ModelSeconds float64 `json:"model_seconds"` // summed durations of the model calls
	// ModelSecondsAfterGone is the part of ModelSeconds that ran after the caller left.
	ModelSecondsAfterGone float64 `json:"model_seconds_after_gone"`
	CostUSD               float64 `json:"cost_usd"`
	// AttemptSeconds is the summed duration of all attempt spans (calls, model calls, publishes).
	AttemptSeconds float64                `json:"attempt_seconds"`
	ByModel        map[string]*ModelSpend `json:"by_model"`
}

// ModelSpend is one model's share of a Spend.
type ModelSpend struct {
	ModelCalls   int     `json:"model_calls"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	ModelSeconds float64 `json:"model_seconds"`
	CostUSD      float64 `json:"cost_usd"`
}

// AttemptCounts counts attempt spans by liveness (the exporter's attempts_total labels).
type AttemptCounts struct {
	Total            int `json:"total"`
	Live             int `json:"live"`
	OutlivedRoot     int `json:"outlived_root"`      // ended after the caller left, started before
	StartedAfterGone int `json:"started_after_gone"` // dispatched after the caller left
	Unknown          int `json:"unknown"`            // no usable times
}

// Truth is the ground truth of one simulation.
type Truth struct {
	Mode             string  `json:"mode,omitempty"`
	Seed             uint64  `json:"seed"`
	ToleranceSeconds float64 `json:"tolerance_seconds"`
	WallSeconds      float64 `json:"wall_seconds,omitempty"`

	Requests  int `json:"requests"`
	Answered  int `json:"answered"`  // the user received an answer (any status)
	Abandoned int `json:"abandoned"` // the user left before the answer
	Failed    int `json:"failed"`    // the user's request failed otherwise
	// AnswersByStatus counts the answers users received by HTTP status.
	AnswersByStatus map[string]int `json:"answers_by_status"`
	// Roots counts root spans by end reason (cancelled, deadline_exceeded, error, completed).
	Roots map[string]int `json:"roots"`

	// Runs counts runs by true outcome.
	Runs map[Outcome]int `json:"runs"`
	// DeliveredToNobody splits delivered_to_nobody runs by the result of their final attempt.
	DeliveredToNobody map[Result]int `json:"delivered_to_nobody_by_result"`
	// RunsByService counts runs by service, operation (span name) and outcome.
	RunsByService map[string]map[string]map[Outcome]int `json:"runs_by_service"`
	// RunAttempts is the number of attempts of all runs.
	RunAttempts int `json:"run_attempts"`

	Attempts AttemptCounts `json:"attempts"`

	// Orphaned is the spend of spans that ended after the caller left; Total of all.
	Orphaned Spend `json:"orphaned"`
	Total    Spend `json:"total"`

	// OrphanedServerSpans counts SERVER spans that ended after the caller left, by service.
	OrphanedServerSpans map[string]int `json:"orphaned_server_spans"`
	// Unpropagated counts orphaned SERVER spans entered from a caller of another service that
	// was itself live: the edges the cancellation did not cross ("gateway->researcher").
	Unpropagated map[string]int `json:"unpropagated"`

	// CancelReach is the cancellation reach of every abandoned request (root end reason
	// cancelled or deadline_exceeded), by request ID; see reach.go for the definitions.
	CancelReach []RequestReach `json:"cancel_reach"`
	// CancelReachByService aggregates CancelReach per root service, as the exporter's
	// orphanwatch_cancel_reach_hops and orphanwatch_orphaned_depth_hops histograms do.
	CancelReachByService map[string]*ReachSummary `json:"cancel_reach_by_service"`

	// Incomplete counts facts that could not be judged: attempts whose span never ended, runs of
	// requests without an ended root, span records dropped by the bound.
	Incomplete int `json:"incomplete"`

	// Export tells whether every span reached the collector (nil when spans were not
	// exported: --otlp-endpoint=none). When Export.Lost() is not 0 the collector cannot
	// equal this truth, and a comparison must say so instead of reporting a mismatch.
	Export *Export `json:"export,omitempty"`
}

// Compute decides the truth from the facts recorded so far. Call it after every span has ended
// (after the TracerProviders are shut down).
func (b *Book) Compute(opts Options) Truth {
	prices := opts.Prices
	if prices == nil {
		prices = DefaultPrices()
	}
	tol := opts.Tolerance.Nanoseconds()

	b.mu.Lock()
	defer b.mu.Unlock()

	t := Truth{
		ToleranceSeconds:    opts.Tolerance.Seconds(),
		AnswersByStatus:     map[string]int{},
		Roots:               map[string]int{},
		Runs:                map[Outcome]int{},
		DeliveredToNobody:   map[Result]int{ResultOK: 0, "error": 0},
		RunsByService:       map[string]map[string]map[Outcome]int{},
		OrphanedServerSpans: map[string]int{},
		Unpropagated:        map[string]int{},
		Orphaned:            Spend{ByModel: map[string]*ModelSpend{}},
		Total:               Spend{ByModel: map[string]*ModelSpend{}},
		Incomplete:          b.dropped,
	}
	for _, o := range Outcomes {
		t.Runs[o] = 0
	}

	// Users.
	t.Requests = len(b.users)
	for _, u := range b.users {
		switch {
		case u.Left:
			t.Abandoned++
		case u.Status > 0:
			t.Answered++
			t.AnswersByStatus[strconv.Itoa(u.Status)]++
		default:
			t.Failed++
		}
	}

	// Roots: gone time and end reason.
	gones := map[trace.TraceID]goneAt{}
	reasons := map[trace.TraceID]string{}
	for id, r := range b.roots {
		s, ok := b.spans[r.SpanID]
		if !ok {
			t.Incomplete++
			continue
		}
		g := s.end
		dl := int64(0)
		if !r.Deadline.IsZero() {
			dl = r.Deadline.UnixNano()
			g = min(g, dl)
		}
		gones[id] = goneAt{at: g, service: r.Service}
		reasons[id] = endReason(r, s.end, dl)
		t.Roots[reasons[id]]++
	}
	// after reports whether time ts of span sid (service svc, trace id) is after its gone time:
	// its root's, or the end of a caller that gave up on a server span above it (hopGone).
	after := func(sid trace.SpanID, id trace.TraceID, svc string, ts int64) (bool, bool) {
		g, ok := gones[id]
		if !ok {
			return false, false
		}
		g = b.hopGone(sid, g, tol)
		d := int64(0)
		if svc != g.service {
			d = tol
		}
		return ts > g.at+d, true
	}
	goneAt := func(sid trace.SpanID, id trace.TraceID) int64 { return b.hopGone(sid, gones[id], tol).at }

	// Attempts, spend and runs.
	runs := map[string][]Attempt{}
	var runOrder []string
	for _, a := range b.attempts {
		s, ok := b.spans[a.SpanID]
		if !ok {
			t.Incomplete++
			continue
		}
		if _, seen := runs[a.RunID]; !seen {
			runOrder = append(runOrder, a.RunID)
		}
		runs[a.RunID] = append(runs[a.RunID], a)

		dur := float64(s.end-s.start) / 1e9
		t.Attempts.Total++
		t.Total.AttemptSeconds += dur
		endAfter, known := after(a.SpanID, a.TraceID, s.service, s.end)
		startAfter, _ := after(a.SpanID, a.TraceID, s.service, s.start)
		if s.end == s.start {
			known = false
		}
		orphaned := known && endAfter
		switch {
		case !known:
			t.Attempts.Unknown++
		case startAfter:
			t.Attempts.StartedAfterGone++
		case endAfter:
			t.Attempts.OutlivedRoot++
		default:
			t.Attempts.Live++
		}
		if orphaned {
			t.Orphaned.AttemptSeconds += dur
		}
		if a.Kind == KindModel && a.Model != "" {
			cost, _ := prices.Cost(a.Model, a.InputTokens, a.OutputTokens)
			addModel(&t.Total, a, dur, cost)
			if orphaned {
				addModel(&t.Orphaned, a, dur, cost)
				t.Orphaned.ModelSecondsAfterGone += float64(s.end-max(s.start, goneAt(a.SpanID, a.TraceID))) / 1e9
			}
		}
	}
	sort.Strings(runOrder)
	var cancelledRuns []trace.SpanID
	for _, id := range runOrder {
		atts := runs[id]
		sort.Slice(atts, func(i, j int) bool { return atts[i].Number < atts[j].Number })
		final := atts[len(atts)-1]
		fs := b.spans[final.SpanID]
		out := Outcome("")
		endAfter, known := after(final.SpanID, final.TraceID, fs.service, fs.end)
		switch {
		case !known:
			out = UnknownRoot
			t.Incomplete++
		case final.Result == ResultCancelled:
			out = Cancelled
		case final.Result != ResultOK && b.noticed[fs.parent]:
			out = Cancelled
		case endAfter:
			out = DeliveredToNobody
			if final.Result == ResultOK {
				t.DeliveredToNobody[ResultOK]++
			} else {
				t.DeliveredToNobody["error"]++
			}
		case final.Result == ResultOK:
			out = Success
		case final.Result == ResultRetryable:
			out = RetryableFailure
		default:
			out = HardFailure
		}
		t.Runs[out]++
		if out == Cancelled {
			cancelledRuns = append(cancelledRuns, final.SpanID)
		}
		t.RunAttempts += len(atts)
		bySvc := t.RunsByService[final.Service]
		if bySvc == nil {
			bySvc = map[string]map[Outcome]int{}
			t.RunsByService[final.Service] = bySvc
		}
		byOp := bySvc[final.Operation]
		if byOp == nil {
			byOp = map[Outcome]int{}
			bySvc[final.Operation] = byOp
		}
		byOp[out]++
	}

	// SERVER spans: orphaned ones, and the edges that did not carry the cancellation.
	for id, s := range b.spans {
		if s.kind != trace.SpanKindServer {
			continue
		}
		if r, ok := b.roots[s.traceID]; ok && r.SpanID == id {
			continue
		}
		if a, ok := after(id, s.traceID, s.service, s.end); !ok || !a || s.end == s.start {
			continue
		}
		t.OrphanedServerSpans[s.service]++
		p, ok := b.spans[s.parent]
		if !ok || p.service == s.service || p.service == "" {
			continue
		}
		if pa, ok := after(s.parent, p.traceID, p.service, p.end); ok && !pa {
			t.Unpropagated[p.service+"->"+s.service]++
		}
	}

	grace := opts.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	t.CancelReach, t.CancelReachByService = b.reach(gones, reasons, cancelledRuns, tol, grace.Nanoseconds())
	return t
}

func addModel(sp *Spend, a Attempt, dur, cost float64) {
	sp.ModelCalls++
	sp.InputTokens += a.InputTokens
	sp.OutputTokens += a.OutputTokens
	sp.ModelSeconds += dur
	sp.CostUSD += cost
	m := sp.ByModel[a.Model]
	if m == nil {
		m = &ModelSpend{}
		sp.ByModel[a.Model] = m
	}
	m.ModelCalls++
	m.InputTokens += a.InputTokens
	m.OutputTokens += a.OutputTokens
	m.ModelSeconds += dur
	m.CostUSD += cost
}

// endReason mirrors DESIGN.md: a noticed cancellation (HTTP 499), then a deadline at or before
// the end, then an error, else completed.
func endReason(r *rootRec, end, deadline int64) string {
	switch {
	case r.status == 499:
		return "cancelled"
	case deadline > 0 && deadline <= end:
		return "deadline_exceeded"
	case r.noticed && r.status == 504:
		return "deadline_exceeded"
	case r.status >= 400 || r.status == 0:
		return "error"
	}
	return "completed"
}
