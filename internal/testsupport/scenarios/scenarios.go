package scenarios

import (
	"math/rand/v2"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Services of the scenarios.
const (
	Gateway    = "gateway"
	Planner    = "planner"
	Researcher = "researcher"
	Coder      = "coder"
	Critic     = "critic"
	SearchTool = "search-tool"
)

// Models of the price table (USD per million tokens, input / output):
// gpt-4o 2.50 / 10.00, gpt-4o-mini 0.15 / 0.60.
const (
	GPT4o     = "gpt-4o"
	GPT4oMini = "gpt-4o-mini"
)

// Outcomes, end reasons and liveness values.
const (
	Success           = "success"
	RetryableFailure  = "retryable_failure"
	HardFailure       = "hard_failure"
	Cancelled         = "cancelled"
	DeliveredToNobody = "delivered_to_nobody"
	UnknownRoot       = "unknown_root"

	Completed        = "completed"
	DeadlineExceeded = "deadline_exceeded"
	// DetachedRoot is the end reason of the root of a trace of detached work (a parentless
	// CONSUMER span, a root with links): not a root request.
	DetachedRoot = "detached"

	LLive             = "live"
	LOrphaned         = "orphaned"
	LOutlivedRoot     = "outlived_root"
	LStartedAfterGone = "started_after_gone"
	LUnknown          = "unknown"
	LDetached         = "detached"
)

const (
	ok  = "ok"
	bad = "error"
	// searchPath is the URL path (with query) of every search-tool call.
	searchPath = "/search?q=orphaned+retries"
)

// Operation labels of the exporter: HTTP CLIENT spans are named by method and target host
// (the semantic conventions' span name, not the bare method), so every search-tool call is
// "GET search-tool:8080" and gateway's call to an agent "POST <agent>:8080".
var opSearch = "GET " + SearchTool + ":" + strconv.Itoa(HTTPPort)

func opAgent(agent string) string { return "POST " + agent + ":" + strconv.Itoa(HTTPPort) }

// ---------------------------------------------------------------------------------------
// S1

// S1 is the happy fan-out.
//
// Choices: the four sub-agents run identically (gateway CLIENT 0.01–5.50, SERVER 0.02–5.49,
// search GET 0.10–0.30 with its search-tool SERVER 0.11–0.29, chat gpt-4o-mini 0.40–5.40);
// no idempotency keys (nothing is retried).
func S1() (ptrace.Traces, Expected) {
	b, tr, e := begin(1)
	root := completedAsk(e, tr, 6.00)
	for _, agent := range []string{Planner, Researcher, Coder, Critic} {
		fanoutAgent(root, agent, 5.50).expect(e, Live, Success)
		fanoutSeries(e, agent, Success, LLive, 5.20) // GET 0.20 + chat 5.00
	}
	e.SpendSeconds(Gateway, LLive, 21.96) // 4 x 5.49
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S2 (and S8, S9, which reuse its spans)

type s2Spans struct {
	b                *Builder
	tr               *Trace
	root             *Span
	others           []fanout // planner, coder, critic
	otherNames       []string
	resCall, resSrv  *Span
	attempts, tools  []*Span
	resChat, publish *Span
}

// s2Build builds S2's trace under scenario number num (2, 8 or 9).
//
// Choices: the other sub-agents run gateway CLIENT 0.01–2.50, SERVER 0.02–2.49, search GET
// 0.10–0.30, chat gpt-4o-mini 0.40–2.40 (1200/300), so they "finished by 2.50". researcher
// makes no gpt-4o-mini call: SCENARIOS.md gives it only the flaky search and, after attempt
// 4, the gpt-4o chat. Each search attempt got a response (503, 503, 503, 200), so each has
// a search-tool SERVER span 10 ms inside it. The gateway CLIENT span to researcher ends at
// 3.00 without response, error.type "context canceled", status ERROR (what Go's otelhttp
// transport records); researcher's SERVER span records 200 at 6.55 (it wrote its answer to
// a closed connection). The PRODUCER is "send research-results" on kafka; nobody consumes.
func s2Build(num int) *s2Spans {
	x := &s2Spans{b: NewBuilder(num)}
	x.tr = x.b.NewTrace()
	x.root = x.tr.HTTPServerRoot(Gateway, "POST", "/ask", 0.00, 3.00, 499)
	x.otherNames = []string{Planner, Coder, Critic}
	x.others = append(x.others, fanoutAgent(x.root, Planner, 2.50))
	x.resCall, x.resSrv = subAgentCall(x.root, Researcher, 0.01, 3.00, 0.02, 6.55, 0, 200)
	x.resCall.ErrorType("context canceled")
	x.others = append(x.others, fanoutAgent(x.root, Coder, 2.50), fanoutAgent(x.root, Critic, 2.50))
	x.attempts, x.tools = searchRetries(x.resSrv, "9b2f6c1e-4d7a-4f3b-a2c8-s2search0001", 200,
		[2]float64{0.10, 0.30}, [2]float64{0.80, 1.00}, [2]float64{2.00, 2.20}, [2]float64{4.20, 4.40})
	x.resChat = x.resSrv.Chat(GPT4o, 4.45, 6.45).Usage(3000, 800)
	x.publish = x.resSrv.Produce("kafka", "research-results", 6.50, 6.52)
	return x
}

// s2Expect writes S2's verdicts (also S8's, under another scenario number).
func s2Expect(id string, x *s2Spans) *Expect {
	e := NewExpect(id, x.b, descriptions[id])
	e.Gone(x.tr, 3.00, Gateway)
	e.Span(x.root, Live().Root(Cancelled).Reach(0, 2)) // HTTP 499; the news stays in gateway, orphaned work two hops down (search-tool)
	for _, o := range x.others {
		o.expect(e, Live, Success)
	}
	// Same service as the root: ends 3.00 = gone, live. Its only attempt recorded a cancellation.
	e.Span(x.resCall, Live().Single(Cancelled, bad))
	// 6.55 - 3.00; parent (gateway CLIENT) is live and in another service.
	e.Span(x.resSrv, Orphaned(3.55, false).Caller(Gateway))
	for i := 0; i < 3; i++ {
		e.Span(x.attempts[i], Live().Attempt(i+1))
		e.Span(x.tools[i], Live())
	}
	e.Span(x.attempts[3], Orphaned(1.40, true).Attempt(4).Run(DeliveredToNobody, 4, ok))
	// search-tool's span for attempt 4: orphaned, but its parent (attempt 4) is orphaned
	// too, so it is not the edge that dropped the cancellation: no caller.service.
	e.Span(x.tools[3], Orphaned(1.39, true))
	// 3000 * 2.5e-6 + 800 * 10e-6 = 0.0075 + 0.008
	e.Span(x.resChat, Orphaned(3.45, true).Single(DeliveredToNobody, ok).Spend(GPT4o, 3000, 800, 0.0155))
	e.Span(x.publish, Orphaned(3.52, true).Single(DeliveredToNobody, ok))

	for _, agent := range x.otherNames {
		fanoutSeries(e, agent, Success, LLive, 2.20) // 0.20 + 2.00
	}
	agentCall(e, Researcher, Cancelled, LLive)
	e.Runs(Researcher, opSearch, DeliveredToNobody, 1)
	e.OneRun(Researcher, "chat gpt-4o", DeliveredToNobody, LStartedAfterGone, 1)
	e.OneRun(Researcher, "send research-results", DeliveredToNobody, LStartedAfterGone, 1)
	e.Attempts(Researcher, opSearch, LLive, 3)
	e.Attempts(Researcher, opSearch, LStartedAfterGone, 1)
	e.Roots(Gateway, Cancelled, 1)
	e.Reach(Gateway, 1, 0, 2)
	e.SpendSeconds(Gateway, LLive, 10.46) // 3 x 2.49 + 2.99
	// live: attempts 1-3, 0.20 each; orphaned: attempt 4 0.20 + chat 2.00 + publish 0.02
	e.SpendSplit(Researcher, 0.60, 2.22)
	e.ModelCall(Researcher, GPT4o, LOrphaned, 3000, 800, 0.0155)
	e.Outlive(Researcher, 4, 11.92) // 3.55 + 1.40 + 3.45 + 3.52
	e.Outlive(SearchTool, 1, 1.39)
	e.Unpropagated(Gateway, Researcher, 1)
	return e
}

// S2: the caller leaves, the retry loop never hears. See s2Build for the choices made.
func S2() (ptrace.Traces, Expected) {
	x := s2Build(2)
	return x.b.Traces(), s2Expect("S2", x).Build()
}

// ---------------------------------------------------------------------------------------
// S3

// S3: the same as S2 up to 2.20, with a loop that checks.
//
// Choices: researcher's backoff is cancelled at 3.00 (no attempt 4, no chat, no publish);
// its SERVER span ends 3.01 without response status code, error.type "context canceled",
// status ERROR. The search run's final attempt (3, a 503) did not succeed and its parent
// (the retry loop, researcher's SERVER span) recorded the cancellation: rule 2, cancelled.
func S3() (ptrace.Traces, Expected) {
	b, tr, e := begin(3)
	root := cancelledAsk(e, tr, 3.00, 1, 0) // researcher noticed (one hop); nothing orphaned
	fanoutAgent(root, Planner, 2.50).expect(e, Live, Success)
	resSrv := cancelledAgentCall(e, root, Researcher, 0.01, 3.00, 0.02, 3.01, 0)
	resSrv.ErrorType("context canceled")
	// 3.01 is 10 ms after the gone time, in another service than the root: live.
	e.Span(resSrv, Live())
	for _, agent := range []string{Coder, Critic} {
		fanoutAgent(root, agent, 2.50).expect(e, Live, Success)
	}
	gets, tools := searchRetries(resSrv, "9b2f6c1e-4d7a-4f3b-a2c8-s3search0001", 503,
		[2]float64{0.10, 0.30}, [2]float64{0.80, 1.00}, [2]float64{2.00, 2.20})
	liveRetryRun(e, gets, tools, Cancelled, bad)

	for _, agent := range []string{Planner, Coder, Critic} {
		fanoutSeries(e, agent, Success, LLive, 2.20)
	}
	e.OneRun(Researcher, opSearch, Cancelled, LLive, 3)
	e.SpendSeconds(Gateway, LLive, 10.46) // 3 x 2.49 + 2.99
	e.SpendSeconds(Researcher, LLive, 0.60)
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S4

// S4: dispatched after the deadline.
//
// Choices: only coder is called. The deadline header x-deadline = "1767225602" (T0 + 2 s)
// is on the root SERVER span, on gateway's CLIENT span to coder and on coder's SERVER span;
// coder does not pass it to its own calls. coder first calls search-tool 0.10–1.50 (200),
// then (blind to the deadline) starts the chat at 2.50. gateway's CLIENT span to coder is
// abandoned at the deadline in the style of recent HTTP conventions for a deliberately
// cancelled request: ends 2.00, status UNSET, no http.response.status_code, no error.type
// (rule 2: cancelled). The root ends 2.00 with 504 (status ERROR, error.type "504"); its end
// equals its deadline, and the end reason is deadline_exceeded as SCENARIOS.md says (see
// QUESTIONS.md: "deadline came before the end" read as "at or before").
func S4() (ptrace.Traces, Expected) {
	b, tr, e := begin(4)
	e.Gone(tr, 2.00, Gateway)
	root := tr.HTTPServerRoot(Gateway, "POST", "/ask", 0.00, 2.00, 504).Deadline(2.00)
	call, srv := subAgentCall(root, Coder, 0.01, 2.00, 0.02, 3.60, 0, 200)
	call.Deadline(2.00)
	srv.Deadline(2.00)
	get, tool := searchCall(srv, 0.10, 1.50, 200)
	// 500 * 0.15e-6 + 100 * 0.60e-6 = 0.000075 + 0.00006
	chatForNobody(e, srv, GPT4oMini, 2.50, 3.50, 500, 100, 0.000135, Orphaned(1.50, true))

	e.Span(root, Live().Root(DeadlineExceeded).Reach(0, 1)) // coder (one hop) worked on past the deadline
	e.Span(call, Live().Single(Cancelled, bad))             // ends 2.00 = gone, same service
	e.Span(srv, Orphaned(1.60, false).Caller(Gateway))
	e.Span(get, Live().Single(Success, ok))
	e.Span(tool, Live())

	agentCall(e, Coder, Cancelled, LLive)
	e.OneRun(Coder, opSearch, Success, LLive, 1)
	e.Roots(Gateway, DeadlineExceeded, 1)
	e.Reach(Gateway, 1, 0, 1)
	e.SpendSeconds(Gateway, LLive, 1.99)
	e.SpendSplit(Coder, 1.40, 1.00)
	unheardChat(e, Gateway, Coder, GPT4oMini, LStartedAfterGone, 500, 100, 0.000135, 3.10) // 1.60 + 1.50
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S5

// S5: retries exhausted while someone still waits.
//
// Choices: only researcher is called (gateway CLIENT 0.01–4.06, SERVER 0.02–4.05, 200 with
// a degraded answer). Five search attempts with one idempotency key and resend_count
// -,1,2,3,4 at 0.10–0.30, 0.60–0.80, 1.30–1.50, 2.40–2.60, 3.80–4.00, all 503, each with a
// search-tool SERVER span (503, status ERROR). The root then composes its degraded answer
// until 6.00 (200).
func S5() (ptrace.Traces, Expected) {
	b, tr, e := begin(5)
	srv := askedAgent(e, tr, 6.00, Researcher, 0.01, 4.06, 0.02, 4.05)
	gets, tools := searchRetries(srv, "0c4e8a2b-7f61-4d93-b5a0-s5search0001", 503, [2]float64{0.10, 0.30},
		[2]float64{0.60, 0.80}, [2]float64{1.30, 1.50}, [2]float64{2.40, 2.60}, [2]float64{3.80, 4.00})
	liveRetryRun(e, gets, tools, RetryableFailure, bad)
	e.OneRun(Researcher, opSearch, RetryableFailure, LLive, 5)
	e.SpendSeconds(Gateway, LLive, 4.05)
	e.SpendSeconds(Researcher, LLive, 1.00) // 5 x 0.20
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S6

// S6: a hard failure, and gRPC.
//
// Choices: root 0.00–3.00 (200) calls coder (0.01–1.00) and planner (0.01–2.00).
// coder → search-tool HTTP GET 0.10–0.20 → 400 (CLIENT: status ERROR, error.type "400";
// search-tool SERVER: 400, status unset); coder still answers 200.
// planner → search-tool over gRPC, search.v1.SearchService/Search on search-tool:50051,
// no idempotency key and no retry attribute (gRPC retries are grouped by same parent,
// name, kind and target): 0.10–0.20 UNAVAILABLE, 0.40–0.50 UNAVAILABLE, 0.90–1.00 OK, each
// with a search-tool SERVER span (UNAVAILABLE is an error on the server side too).
// The second gRPC call is the same method on the same target, 1.10–1.20, INVALID_ARGUMENT:
// it starts a new run because the previous attempt succeeded and it carries no retry
// marker (verdicts.md, "How attempts group into runs"); its SERVER span has status unset
// (INVALID_ARGUMENT is not a server error).
func S6() (ptrace.Traces, Expected) {
	b, tr, e := begin(6)
	root := completedAsk(e, tr, 3.00)

	cSrv := liveAgentCall(e, root, Coder, 0.01, 1.00, 0.02, 0.99)
	get, tool := searchCall(cSrv, 0.10, 0.20, 400)
	e.Span(get, Live().Single(HardFailure, bad))
	e.Span(tool, Live())

	pSrv := liveAgentCall(e, root, Planner, 0.01, 2.00, 0.02, 1.99)
	grpc := []struct {
		s, e float64
		code int
		v    V
	}{
		{0.10, 0.20, GRPCUnavailable, Live().Attempt(1)},
		{0.40, 0.50, GRPCUnavailable, Live().Attempt(2)},
		{0.90, 1.00, GRPCOK, Live().Attempt(3).Run(Success, 3, ok)},
		{1.10, 1.20, GRPCInvalidArgument, Live().Single(HardFailure, bad)},
	}
	for _, g := range grpc {
		c := pSrv.GRPCClient(SearchTool, "search.v1.SearchService", "Search", g.s, g.e, g.code)
		sv := c.GRPCServer(SearchTool, g.s+0.01, g.e-0.01, g.code)
		e.Span(c, g.v)
		e.Span(sv, Live())
	}
	const op = "search.v1.SearchService/Search"
	e.OneRun(Coder, opSearch, HardFailure, LLive, 1)
	e.Runs(Planner, op, Success, 1)
	e.Runs(Planner, op, HardFailure, 1)
	e.Attempts(Planner, op, LLive, 4)
	e.SpendSeconds(Gateway, LLive, 2.98) // 0.99 + 1.99
	e.SpendSeconds(Coder, LLive, 0.10)
	e.SpendSeconds(Planner, LLive, 0.40) // 4 x 0.10
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S7

// S7: the work crosses a queue, bound to the request by its idempotency key.
//
// Choices: trace A: gateway POST /ask 0.00–1.00 (499); gateway's CLIENT call to researcher
// 0.01–0.56 gets 202 (researcher SERVER 0.02–0.55 enqueues the job and answers 202) and the
// gateway waits for the job's result until the user leaves at 1.00. researcher's PRODUCER
// "send research-jobs" (kafka) 0.50–0.52. Key K travels in the job payload: neither
// messaging span records it (no messaging header capture), so the only spans carrying K are
// the two chat attempts (as http.request.header.idempotency-key, the header the worker sends
// to the provider). Trace B: researcher's job worker, CONSUMER "process research-jobs"
// 1.90–5.60 (root of trace B, linked to A's PRODUCER); under it chat gpt-4o 2.00–2.50 →
// 429 (error.type "429", http.response.status_code 429, request model only, no usage) and
// chat gpt-4o 3.50–5.50 → 200 (2000/500). No resend_count on GenAI spans: the two are one
// run by parent + key. The CONSUMER span carries no key itself: it stays detached (no
// liveness; the end reason of a detached root, detached); the chat attempts are bound by K to A's root (found through the
// link) and judged against its gone time 1.00. The failed attempt is a model call with a
// model but unknown tokens: spend.model only, no cost (not known).
func S7() (ptrace.Traces, Expected) {
	b, ta, e := begin(7)
	tb := b.NewTrace()
	e.Gone(tb, 1.00, Gateway) // bound by K to A's root

	root := cancelledAsk(e, ta, 1.00, 0, 0) // trace B is another trace: not counted here
	call, srv := subAgentCall(root, Researcher, 0.01, 0.56, 0.02, 0.55, 202, 202)
	const k = "5e1d7c3a-2b9f-4e6d-8a1c-s7researchjob"
	// The job carries K; the PRODUCER span records it as the captured Idempotency-Key header of
	// the queue's HTTP API. A key seen only in the consumer's trace would bind nothing: the
	// consumer's own keys are its own business.
	pub := srv.Produce("kafka", "research-jobs", 0.50, 0.52).IdempotencyKey(k)
	e.Span(call, Live().Single(Success, ok))
	e.Span(srv, Live())
	e.Span(pub, Live().Single(Success, ok))

	cons := tb.ConsumerRoot(Researcher, pub, 1.90, 5.60)
	a1 := cons.Chat(GPT4o, 2.00, 2.50).HTTPError(429).IdempotencyKey(k)
	a2 := cons.Chat(GPT4o, 3.50, 5.50).Usage(2000, 500).IdempotencyKey(k)
	e.Span(cons, Detached().Root(DetachedRoot))
	e.Span(a1, Orphaned(1.50, true).Attempt(1).Model(GPT4o))
	// 2000 * 2.5e-6 + 500 * 10e-6 = 0.005 + 0.005
	e.Span(a2, Orphaned(4.50, true).Attempt(2).Run(DeliveredToNobody, 2, ok).Spend(GPT4o, 2000, 500, 0.010))

	agentCall(e, Researcher, Success, LLive)
	e.OneRun(Researcher, "send research-jobs", Success, LLive, 1)
	e.OneRun(Researcher, "chat gpt-4o", DeliveredToNobody, LStartedAfterGone, 2)
	e.Roots(Researcher, DetachedRoot, 1)
	e.SpendSeconds(Gateway, LLive, 0.55)
	e.SpendSplit(Researcher, 0.02, 2.50) // orphaned: 0.50 + 2.00
	e.Tokens(Researcher, GPT4o, LOrphaned, 2000, 500)
	e.Cost(Researcher, GPT4o, LOrphaned, 0.010)
	e.ModelCalls(Researcher, GPT4o, LOrphaned, 2)
	e.Outlive(Researcher, 2, 6.00) // 1.50 + 4.50
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S8

// S8 is S2 (built under scenario number 8, so its IDs differ from S2's) with its spans
// shuffled deterministically, the root last. The single Traces holds the spans in that order
// (a new ResourceSpans whenever the service changes); see S8Batches for the batch split.
// Expected: exactly S2's verdicts and metric values.
func S8() (ptrace.Traces, Expected) {
	spans, exp := s8Spans()
	return SpansToTracesInOrder(spans), exp
}

// S8Batches returns S8's spans split into six batches: five of shuffled spans, then one
// holding only the root, which thus arrives last.
func S8Batches() ([]ptrace.Traces, Expected) {
	spans, exp := s8Spans()
	rest := spans[:len(spans)-1]
	var out []ptrace.Traces
	const n = 5
	for i := 0; i < n; i++ {
		lo, hi := i*len(rest)/n, (i+1)*len(rest)/n
		out = append(out, SpansToTracesInOrder(rest[lo:hi]))
	}
	out = append(out, SpansToTracesInOrder(spans[len(spans)-1:]))
	return out, exp
}

func s8Spans() ([]*Span, Expected) {
	x := s2Build(8)
	exp := s2Expect("S8", x).Build()
	var rest []*Span
	for _, s := range x.b.Spans() {
		if s != x.root {
			rest = append(rest, s)
		}
	}
	r := rand.New(rand.NewPCG(8, 2026))
	r.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	return append(rest, x.root), exp
}

// ---------------------------------------------------------------------------------------
// S9

// S9 is S2 without its root span. Every span's liveness is unknown (no started_after_gone,
// after_gone or caller.service, which need a known gone time); attempt numbers, run sizes,
// run results and model spend do not depend on the root and are still written; every run
// is unknown_root. No span is a root (the gateway CLIENT spans still name the missing root
// as parent), so no end reason.
func S9() (ptrace.Traces, Expected) {
	x := s2Build(9)
	x.b.Remove(x.root)
	e := NewExpect("S9", x.b, descriptions["S9"])
	for _, o := range x.others {
		o.expect(e, Unknown, UnknownRoot)
	}
	e.Span(x.resCall, Unknown().Single(UnknownRoot, bad))
	e.Span(x.resSrv, Unknown())
	for i := 0; i < 3; i++ {
		e.Span(x.attempts[i], Unknown().Attempt(i+1))
		e.Span(x.tools[i], Unknown())
	}
	e.Span(x.attempts[3], Unknown().Attempt(4).Run(UnknownRoot, 4, ok))
	e.Span(x.tools[3], Unknown())
	e.Span(x.resChat, Unknown().Single(UnknownRoot, ok).Spend(GPT4o, 3000, 800, 0.0155))
	e.Span(x.publish, Unknown().Single(UnknownRoot, ok))

	for _, agent := range x.otherNames {
		fanoutSeries(e, agent, UnknownRoot, LUnknown, 2.20)
	}
	agentCall(e, Researcher, UnknownRoot, LUnknown)
	e.OneRun(Researcher, opSearch, UnknownRoot, LUnknown, 4)
	e.OneRun(Researcher, "chat gpt-4o", UnknownRoot, LUnknown, 1)
	e.OneRun(Researcher, "send research-results", UnknownRoot, LUnknown, 1)
	e.SpendSeconds(Gateway, LUnknown, 10.46)
	e.SpendSeconds(Researcher, LUnknown, 2.82) // 0.60 + 2.22
	e.ModelCall(Researcher, GPT4o, LUnknown, 3000, 800, 0.0155)
	return x.b.Traces(), e.Build()
}

// Remove drops a span from the builder (S9 drops S2's root).
func (b *Builder) Remove(s *Span) {
	for i, x := range b.spans {
		if x == s {
			b.spans = append(b.spans[:i:i], b.spans[i+1:]...)
			return
		}
	}
	panic("span not in builder")
}

// ---------------------------------------------------------------------------------------
// S10

// S10: clocks disagree. planner's clock runs 80 ms ahead of gateway's.
//
// Choices: in gateway's (true) time, gateway's CLIENT call to planner runs 0.01–1.99,
// planner's SERVER span 0.02–1.98 and its chat gpt-4o-mini 0.05–1.95 (1200/300); planner's
// timestamps are 80 ms later: SERVER 0.10–2.06 (60 ms after the root's end at 2.00) and
// chat 0.13–2.03 (30 ms after). Both are live under the 250 ms default tolerance, and the
// chat run is success (rule 3 applies the tolerance too).
func S10() (ptrace.Traces, Expected) {
	b, tr, e := begin(10)
	const skew = 0.08
	srv := askedAgent(e, tr, 2.00, Planner, 0.01, 1.99, 0.02+skew, 1.98+skew)
	chat := srv.Chat(GPT4oMini, 0.05+skew, 1.95+skew).Usage(1200, 300)
	e.Span(chat, Live().Single(Success, ok).Spend(GPT4oMini, 1200, 300, 0.00036))

	e.OneRun(Planner, "chat gpt-4o-mini", Success, LLive, 1)
	e.SpendSeconds(Gateway, LLive, 1.98)
	e.SpendSeconds(Planner, LLive, 1.90)
	e.ModelCall(Planner, GPT4oMini, LLive, 1200, 300, 0.00036)
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S11

// S11: work meant to outlive the request.
//
// Choices: trace A: gateway POST /ask 0.00–1.00 (200); gateway's PRODUCER "send receipt"
// (destination "receipt", kafka) 0.50–0.52, no key, no deadline. Trace B: service "mailer",
// CONSUMER "process receipt" 5.00–5.05 linked to the PRODUCER, and under it a CLIENT POST to
// the mail provider 5.01–5.04 (202). Everything in trace B is detached: detached=true, no
// liveness; its CONSUMER root's end reason is detached (not a root request). The mail call is still an attempt and a run
// of one; with no gone time, rule 3 cannot apply and rule 4 gives success.
func S11() (ptrace.Traces, Expected) {
	b, ta, e := begin(11)
	tb := b.NewTrace()
	root := completedAsk(e, ta, 1.00)
	pub := root.Produce("kafka", "receipt", 0.50, 0.52)
	cons := tb.ConsumerRoot("mailer", pub, 5.00, 5.05)
	mail := cons.HTTPClient("POST", "mail-provider.example", 443, "/v3/send", 5.01, 5.04, 202)
	e.Span(pub, Live().Single(Success, ok))
	e.Span(cons, Detached().Root(DetachedRoot))
	e.Span(mail, Detached().Single(Success, ok))

	e.OneRun(Gateway, "send receipt", Success, LLive, 1)
	// url.full is http://mail-provider.example:443/v3/send: 443 is not http's default port.
	e.OneRun("mailer", "POST mail-provider.example:443", Success, LDetached, 1)
	e.Roots("mailer", DetachedRoot, 1)
	e.SpendSeconds(Gateway, LLive, 0.02)
	e.SpendSeconds("mailer", LDetached, 0.03)
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S12

// S12: the root answered, the fan-out went on.
//
// Choices: root 0.00–2.00 (200) answers with researcher's part only: gateway → researcher
// 0.01–1.40 (200), researcher SERVER 0.02–1.39 with a chat gpt-4o-mini 0.05–1.30 (1200/300).
// gateway → critic 0.01–2.00: the gateway stopped waiting when it answered, so this CLIENT
// span ends at 2.00 without response, error.type "context canceled", status ERROR. critic's
// SERVER span 0.02–4.05 (200) holds the chat gpt-4o 1.50–4.00 (1000/200, 200). The chat
// started before the gone time: liveness label outlived_root.
func S12() (ptrace.Traces, Expected) {
	b, tr, e := begin(12)
	root := completedAsk(e, tr, 2.00)
	rSrv := liveAgentCall(e, root, Researcher, 0.01, 1.40, 0.02, 1.39)
	rChat := rSrv.Chat(GPT4oMini, 0.05, 1.30).Usage(1200, 300)
	cSrv := unheardAgentCall(e, root, Critic, 0.01, 2.00, 0.02, 4.05, 2.05)
	// 1000 * 2.5e-6 + 200 * 10e-6 = 0.0025 + 0.002
	chatForNobody(e, cSrv, GPT4o, 1.50, 4.00, 1000, 200, 0.0045, Orphaned(2.00, false))

	e.Span(rChat, Live().Single(Success, ok).Spend(GPT4oMini, 1200, 300, 0.00036))

	e.OneRun(Researcher, "chat gpt-4o-mini", Success, LLive, 1)
	e.SpendSeconds(Gateway, LLive, 3.38) // 1.39 + 1.99
	e.SpendSeconds(Researcher, LLive, 1.25)
	// The chat ran 1.50-4.00: its 2.00 s after the gone time are orphaned, the 0.50 s before live.
	e.SpendSplit(Critic, 0.50, 2.00)
	e.ModelCall(Researcher, GPT4oMini, LLive, 1200, 300, 0.00036)
	unheardChat(e, Gateway, Critic, GPT4o, LOutlivedRoot, 1000, 200, 0.0045, 4.05) // 2.05 + 2.00
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S13

// LegacyAgent is the badly instrumented service of S13.
const LegacyAgent = "legacy-agent"

// InvalidUTF8 is the attribute value with invalid UTF-8 used by S13.
const InvalidUTF8 = "caf\xe9 \xff\xfe r\xc3sum\xe9"

// S13: bad input (without the 10,000-span trace: see S13HugeTrace).
//
// Traces, in order:
//  1. good: gateway POST /ask 0.00–1.00 (499); gateway → planner 0.01–1.00 "context
//     canceled"; planner SERVER 0.02–2.00 (200) with chat gpt-4o-mini 0.05–1.90 (1200/300):
//     full verdicts, including orphans, so bad neighbours visibly do not disturb them.
//  2. legacy-agent POST /legacy 0.00–1.00 (200), a good root, with three bad children:
//     CLIENT GET with http.request.resend_count as the string "1"; chat gpt-4o-mini with
//     gen_ai.usage.input_tokens -5 (output 10); CLIENT GET whose url.full and
//     legacy.note attribute hold invalid UTF-8. Each child is bad in one attribute only and
//     gets the documented, counted fallback: the value is ignored (or read as the number it
//     spells), and the span keeps its verdict.
//  3. an all-zero trace ID (a gateway POST /ask SERVER span).
//  4. end before start (gateway POST /ask, start 1.00, end 0.50).
//  5. zero timestamps (gateway POST /ask, both 0).
//  6. gateway POST /ask 0.00–1.00 (200), a good root, with two CLIENT POST children to
//     planner that share one span ID.
//  7. two planner INTERNAL spans naming each other as parent (no root).
//
// Malformed spans have Attributes null in expected.json. Metrics: every listed series is
// exact and no other series may exist, except series whose liveness label is "unknown" or
// whose outcome label is "unknown_root" (which malformed spans may or may not produce) —
// see the expected.json description.
func S13() (ptrace.Traces, Expected) {
	b, t1, e := begin(13)

	// 1: good trace.
	root := cancelledAsk(e, t1, 1.00, 0, 1)
	srv := unheardAgentCall(e, root, Planner, 0.01, 1.00, 0.02, 2.00, 1.00)
	chatForNobody(e, srv, GPT4oMini, 0.05, 1.90, 1200, 300, 0.00036, Orphaned(0.90, false))

	// 2: good legacy root with malformed children.
	t2 := b.NewTrace()
	e.Gone(t2, 1.00, LegacyAgent)
	lroot := t2.HTTPServerRoot(LegacyAgent, "POST", "/legacy", 0.00, 1.00, 200)
	badResend := lroot.HTTPClient("GET", SearchTool, HTTPPort, searchPath, 0.10, 0.20, 200).Set(AttrHTTPResendCount, "1")
	badTokens := lroot.Chat(GPT4oMini, 0.30, 0.60).Usage(-5, 10)
	badUTF8 := lroot.HTTPClient("GET", "docs-tool", HTTPPort, "/lookup", 0.70, 0.80, 200).
		Set(AttrURLFull, "http://docs-tool:8080/lookup?q="+InvalidUTF8).Set("legacy.note", InvalidUTF8)
	e.Span(lroot, Live().Root(Completed))
	// A value bad in one attribute gets the documented, counted fallback (docs/verdicts.md,
	// "Bad input"), not the loss of the whole span's verdict: a decimal string where an int
	// belongs is read as the number (Zipkin and some exporters write every tag as a string);
	// a negative token count is ignored and counted; invalid UTF-8 in an attribute the
	// processor does not read changes nothing.
	e.Span(badResend, Live().Attempt(2).Run(Success, 1, ok))
	e.Span(badTokens, Live().Single(Success, ok).Model(GPT4oMini).Set(VSpendOutput, 10).Set(VSpendCost, 0.000006))
	e.Span(badUTF8, Live().Single(Success, ok))

	// 3: all-zero trace ID.
	t3 := b.NewTraceWithID(pcommon.TraceID{})
	e.Span(t3.HTTPServerRoot(Gateway, "POST", "/ask", 0.00, 1.00, 200), Unchecked())

	// 4: end before start.
	t4 := b.NewTrace()
	e.Span(t4.HTTPServerRoot(Gateway, "POST", "/ask", 1.00, 0.50, 200), Unchecked())

	// 5: zero timestamps.
	t5 := b.NewTrace()
	e.Span(t5.HTTPServerRoot(Gateway, "POST", "/ask", 0, 0, 200).SetZeroTimes(), Unchecked())

	// 6: duplicate span ID under a good root.
	droot := completedAsk(e, b.NewTrace(), 1.00)
	d1 := droot.HTTPClient("POST", Planner, HTTPPort, "/run", 0.10, 0.50, 200)
	d2 := droot.HTTPClient("POST", Planner, HTTPPort, "/run", 0.20, 0.60, 200).SetID(d1.ID)
	// Two different spans with one ID: neither can be trusted, both get no verdict. (An exact
	// copy, as an upstream exporter's retry sends, keeps one verdict: see the processor tests.)
	e.Span(d1, Unchecked())
	e.Span(d2, Unchecked())

	// 7: parent cycle.
	t7 := b.NewTrace()
	c1 := t7.Span(Planner, "plan step", Internal, 0.10, 0.20)
	c2 := t7.Span(Planner, "plan step", Internal, 0.12, 0.18)
	c1.SetParent(c2)
	c2.SetParent(c1)
	e.Span(c1, Unchecked())
	e.Span(c2, Unchecked())

	e.OneRun(LegacyAgent, opSearch, Success, LLive, 1)
	e.OneRun(LegacyAgent, "GET docs-tool:8080", Success, LLive, 1)
	e.OneRun(LegacyAgent, "chat gpt-4o-mini", Success, LLive, 1)
	e.SpendSeconds(LegacyAgent, LLive, 0.50) // 0.10 + 0.30 + 0.10
	e.ModelCall(LegacyAgent, GPT4oMini, LLive, 0, 10, 0.000006)
	e.Roots(LegacyAgent, Completed, 1)
	e.SpendSeconds(Gateway, LLive, 0.99)
	// The chat ran 0.05-1.90, gone at 1.00: its 0.90 s after the gone time are orphaned, the
	// 0.95 s before live.
	e.SpendSplit(Planner, 0.95, 0.90)
	unheardChat(e, Gateway, Planner, GPT4oMini, LOutlivedRoot, 1200, 300, 0.00036, 1.90) // 1.00 + 0.90
	return b.Traces(), e.Build()
}

// S13HugeTraceSpans is the number of spans in S13HugeTrace.
const S13HugeTraceSpans = 10000

// S13HugeTrace is S13's 10,000-span trace (kept out of the JSON files): gateway POST /ask
// 0.00–10.00 (200); under it a chain of 999 nested INTERNAL "step" spans in gateway (step i
// runs i ms to 10 s - i ms), a deep parent chain to catch recursive ancestor walks; under the
// deepest step 9,000 sequential CLIENT GET calls to search-tool (1.0 s + k*0.8 ms, 0.5 ms
// each, 200). Trace ID 5c0dff000000000000000000000000ff.
//
// Expected: every span passes through unchanged; nothing is orphaned (everything ends by
// 10.00). Within the processor's bound on spans per trace, the root is completed and every
// span live, the GET calls each a run of one with outcome success; past it, spans get no
// verdict or liveness unknown and the eviction/overflow is counted. No panic, bounded memory.
func S13HugeTrace() ptrace.Traces {
	b := NewBuilder(13)
	tr := b.NewTrace()
	tr.Index = 0xff
	var id [16]byte
	id[0], id[1], id[2], id[15] = 0x5c, 13, 0xff, 0xff
	tr.ID = pcommon.TraceID(id)
	root := tr.HTTPServerRoot(Gateway, "POST", "/ask", 0.00, 10.00, 200)
	parent := root
	for i := 1; i <= 999; i++ {
		parent = parent.Child(Gateway, "step", Internal, float64(i)*0.001, 10.0-float64(i)*0.001)
	}
	for k := 0; k < 9000; k++ {
		st := 1.0 + float64(k)*0.0008
		parent.HTTPClient("GET", SearchTool, HTTPPort, searchPath, st, st+0.0005, 200)
	}
	return b.Traces()
}
