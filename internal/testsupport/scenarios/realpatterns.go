package scenarios

import "go.opentelemetry.io/collector/pdata/ptrace"

// S14 to S19: patterns that real instrumentation produces every day (issue 10), each with the
// verdicts DESIGN.md asks for. Services beyond SCENARIOS.md's: scheduler, web and ticket-triage.

const (
	Scheduler    = "scheduler"
	Web          = "web"
	TicketTriage = "ticket-triage"

	attrExceptionType = "exception.type"
	attrToolName      = "gen_ai.tool.name"
)

// ---------------------------------------------------------------------------------------
// S14

// S14: a parent's cancellation is not the run noticing.
//
// (a) An LLM gateway: the root (the request handler) answers 499 at 2.00 when the client
// leaves; its upstream retry loop to the model provider, a child of the root, goes on: chat
// gpt-4o attempts (one idempotency key, resend_count -,1,2,3,4) 0.10-1.00 429, 1.40-1.90 503,
// 3.00-3.40 503, 6.00-6.40 503, 12.00-12.30 503. The final attempt ends 10.3 s after the gone
// time: the loop did not notice; delivered_to_nobody (result error), whatever the root
// recorded. (b) A Python retry decorator run in an executor thread: researcher's coroutine span
// "research" records asyncio.CancelledError at 2.05, while the decorated search-tool calls under
// it go on: 0.20-0.60, 1.20-1.60, 2.50-2.90, 4.00-4.30, all 503 (its four attempts are spent):
// delivered_to_nobody (result error). The coroutine noticed (one hop down: reach 1); the
// search-tool kept working two hops down.
func S14() (ptrace.Traces, Expected) {
	b, tr, e := begin(14)
	root := cancelledRoot(e, tr, "/v1/chat/completions", 2.00, 1, 2)

	// (a) the gateway's upstream retry loop.
	times := [5][3]float64{{0.10, 1.00, 429}, {1.40, 1.90, 503}, {3.00, 3.40, 503}, {6.00, 6.40, 503}, {12.00, 12.30, 503}}
	for i, tm := range times {
		a := root.Chat(GPT4o, tm[0], tm[1]).HTTPError(int(tm[2])).retry("s14-upstream-0001", i)
		switch {
		case i < 2:
			e.Span(a, Live().Attempt(i+1).Model(GPT4o))
		case i < 4:
			e.Span(a, Orphaned(tm[1]-2.00, true).Attempt(i+1).Model(GPT4o))
		default:
			e.Span(a, Orphaned(10.30, true).Attempt(5).Run(DeliveredToNobody, 5, bad).Model(GPT4o))
		}
	}

	// (b) researcher's retry decorator around a cancelled coroutine.
	srv := unheardAgentCall(e, root, Researcher, 0.01, 2.00, 0.02, 4.35, 2.35)
	research := srv.Child(Researcher, "research", Internal, 0.03, 2.05).Exception("asyncio.CancelledError")
	e.Span(research, Live()) // 50 ms after the gone time, another service: within the tolerance
	gets, tools := searchRetries(research, "s14-search-0001", 503,
		[2]float64{0.20, 0.60}, [2]float64{1.20, 1.60}, [2]float64{2.50, 2.90}, [2]float64{4.00, 4.30})
	e.Spans(gets, Live().Attempt(1), Live().Attempt(2), Orphaned(0.90, true).Attempt(3),
		Orphaned(2.30, true).Attempt(4).Run(DeliveredToNobody, 4, bad))
	e.Spans(tools, Live(), Live(), Orphaned(0.89, true), Orphaned(2.29, true))

	e.Runs(Gateway, "chat gpt-4o", DeliveredToNobody, 1)
	e.Attempts(Gateway, "chat gpt-4o", LLive, 2)
	e.Attempts(Gateway, "chat gpt-4o", LStartedAfterGone, 3)
	e.ModelCalls(Gateway, GPT4o, LLive, 2)
	e.ModelCalls(Gateway, GPT4o, LOrphaned, 3)
	// live: chat 0.90 + 0.50, POST 1.99; orphaned: chat 0.40 + 0.40 + 0.30
	e.SpendSplit(Gateway, 3.39, 1.10)
	e.Outlive(Gateway, 3, 16.10) // 1.40 + 4.40 + 10.30
	e.Runs(Researcher, opSearch, DeliveredToNobody, 1)
	e.Attempts(Researcher, opSearch, LLive, 2)
	e.Attempts(Researcher, opSearch, LStartedAfterGone, 2)
	e.SpendSplit(Researcher, 0.80, 0.70)
	e.Outlive(Researcher, 3, 5.55) // 2.35 + 0.90 + 2.30
	e.Outlive(SearchTool, 2, 3.18) // 0.89 + 2.29
	e.Unpropagated(Gateway, Researcher, 1)
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S15

// S15: the edge that dropped the news must not vanish (the caller unwinds late; the news dropped
// inside the root's own service).
//
// The root gateway POST /ask ends 3.00 with 499. (a) gateway's CLIENT call to planner records
// "context canceled" and unwinds 4 ms after the handler answered (3.004: same service, compared
// exactly): it noticed, so it is live and its seconds are not orphaned spend; planner never
// heard: its SERVER span runs to 5.00 and its chat gpt-4o-mini 3.50-4.90 (1000/200) starts after
// the gone time. The edge gateway -> planner is named on planner's SERVER span. (c) gateway's
// supervisor agent acknowledges the cancel (CancelledError, ends 3.02) but its nested tool call
// execute_tool web_search 2.50-6.00 goes on and calls search-tool (GET 2.60-5.90, SERVER
// 2.61-5.89): the news stopped inside gateway, and the orphaned work then entered search-tool:
// edge gateway -> search-tool. Reach 0 (only gateway knew), orphaned depth 1.
func S15() (ptrace.Traces, Expected) {
	b, tr, e := begin(15)
	root := cancelledAsk(e, tr, 3.00, 0, 1)

	// (a) the caller's span unwinds a few milliseconds late.
	srvP := unheardAgentCall(e, root, Planner, 0.01, 3.004, 0.02, 5.00, 2.00)
	// 1000 * 0.15e-6 + 200 * 0.60e-6
	chatForNobody(e, srvP, GPT4oMini, 3.50, 4.90, 1000, 200, 0.00027, Orphaned(1.90, true))

	// (c) dropped inside the root's own service.
	agent := root.Child(Gateway, "supervisor.run", Internal, 0.05, 3.02).Exception("CancelledError")
	e.Span(agent, Live())
	tool := agent.Child(Gateway, "execute_tool web_search", Internal, 2.50, 6.00).
		Set(AttrGenAIOperation, "execute_tool").Set(attrToolName, "web_search")
	e.Span(tool, Orphaned(3.00, false).Single(DeliveredToNobody, ok))
	get := tool.HTTPClient("GET", SearchTool, HTTPPort, searchPath, 2.60, 5.90, 200)
	// Inside the tool call, in the same service: its seconds are the tool call's.
	e.Span(get, Orphaned(2.90, false).Single(DeliveredToNobody, ok).Nested())
	srvT := get.HTTPServer(SearchTool, "/search", 2.61, 5.89, 200)
	e.Span(srvT, Orphaned(2.89, false).Caller(Gateway))

	e.OneRun(Gateway, "execute_tool web_search", DeliveredToNobody, LOutlivedRoot, 1)
	e.OneRun(Gateway, opSearch, DeliveredToNobody, LOutlivedRoot, 1)
	// live: POST 2.994 (noticed: all live) + the tool call's 0.50 before gone; orphaned: the tool
	// call's 3.00 after gone (its GET is inside it)
	e.SpendSplit(Gateway, 3.494, 3.00)
	e.Outlive(Gateway, 2, 5.90)
	e.SpendSeconds(Planner, LOrphaned, 1.40)
	e.Outlive(SearchTool, 1, 2.89)
	unheardChat(e, Gateway, Planner, GPT4oMini, LStartedAfterGone, 1000, 200, 0.00027, 3.90) // 2.00 + 1.90
	e.Unpropagated(Gateway, SearchTool, 1)
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S16

// S16: a propagated deadline passes while the caller keeps its calls open (an Envoy route
// timeout). The root gateway POST /ask carries x-envoy-expected-rq-timeout-ms 2000; Envoy
// answered the client 504 at 2.00, but the gateway's handler goes on to 5.00 (200) and keeps
// its call to coder open (0.01-4.80, 200); coder's SERVER span (0.02-4.79) and its chat gpt-4o
// 0.50-4.50 (1500/300) go on working. The root is deadline_exceeded, gone at 2.00. gateway's
// CLIENT span is orphaned itself, and the edge gateway -> coder is still named on coder's
// SERVER span: the first span of the orphaned path that entered another service.
func S16() (ptrace.Traces, Expected) {
	b, tr, e := begin(16)
	e.Gone(tr, 2.00, Gateway)
	root := tr.HTTPServerRoot(Gateway, "POST", "/ask", 0.00, 5.00, 200).
		Set("http.request.header.x-envoy-expected-rq-timeout-ms", []string{"2000"})
	e.Span(root, Live().Root(DeadlineExceeded).Reach(0, 1))
	call, srv := subAgentCall(root, Coder, 0.01, 4.80, 0.02, 4.79, 200, 200)
	e.Span(call, Orphaned(2.80, false).Single(DeliveredToNobody, ok))
	e.Span(srv, Orphaned(2.79, false).Caller(Gateway))
	// 1500 * 2.5e-6 + 300 * 10e-6
	chatForNobody(e, srv, GPT4o, 0.50, 4.50, 1500, 300, 0.00675, Orphaned(2.50, false))

	e.Roots(Gateway, DeadlineExceeded, 1)
	e.Reach(Gateway, 1, 0, 1)
	agentCall(e, Coder, DeliveredToNobody, LOutlivedRoot)
	e.SpendSplit(Gateway, 1.99, 2.80)
	e.Outlive(Gateway, 1, 2.80)
	e.SpendSplit(Coder, 1.50, 2.50)
	unheardChat(e, Gateway, Coder, GPT4o, LOutlivedRoot, 1500, 300, 0.00675, 5.29) // 2.79 + 2.50
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S17

// S17: late entry is not detachment.
//
// Trace 1, a workflow engine: the user's request (gateway POST /ask) is cancelled at 2.00. The
// workflow's tracing interceptor ended "StartActivity:Summarize" (a CLIENT span, 0.10-0.12)
// when it scheduled the activity; the worker (coder) starts "RunActivity:Summarize" at 2.50 and
// calls gpt-4o 2.60-5.90 (4000/900) for nobody: judged, orphaned, edge gateway -> coder.
// Trace 2, a server that picks up a request after its client gave up: gateway's call to critic
// times out at 1.10 (error.type timeout); critic starts at 1.50 and works until 4.00 (chat
// gpt-4o-mini 1.60-3.90, 800/100) while the root answered at 2.00 (200, degraded): judged,
// orphaned. The caller gave up on critic at 1.10 (issue 27: the gone time of a hop), so critic's
// work is judged against 1.10, not the root's 2.00: all of it was dispatched for nobody. The control: gateway's call to planner 1.80-1.90 (200) is answered; planner picks
// the follow-up up at 2.50 after the root completed (a request sent after an answer, like a
// browser following a redirect): detached, nothing orphaned.
func S17() (ptrace.Traces, Expected) {
	b, tr1, e := begin(17)
	root1 := cancelledAsk(e, tr1, 2.00, 0, 1)
	start := root1.Child(Gateway, "StartActivity:Summarize", Client, 0.10, 0.12)
	e.Span(start, Live().Single(Success, ok))
	run := start.Child(Coder, "RunActivity:Summarize", Server, 2.50, 6.00)
	e.Span(run, Orphaned(4.00, true).Caller(Gateway))
	// 4000 * 2.5e-6 + 900 * 10e-6
	chatForNobody(e, run, GPT4o, 2.60, 5.90, 4000, 900, 0.019, Orphaned(3.90, true))

	root2 := completedAsk(e, b.NewTrace(), 2.00)
	callC := root2.HTTPClient("POST", Critic, HTTPPort, "/run", 0.10, 1.10, 0).ErrorType("timeout")
	e.Span(callC, Live().Single(RetryableFailure, bad))
	srvC := callC.HTTPServer(Critic, "/run", 1.50, 4.00, 200)
	e.GoneUnder(srvC, 1.10, Gateway) // the caller that gave up
	e.Span(srvC, Orphaned(2.90, true).Caller(Gateway))
	// 800 * 0.15e-6 + 100 * 0.60e-6
	chatForNobody(e, srvC, GPT4oMini, 1.60, 3.90, 800, 100, 0.00018, Orphaned(2.80, true))
	callP := root2.HTTPClient("POST", Planner, HTTPPort, "/run", 1.80, 1.90, 200)
	e.Span(callP, Live().Single(Success, ok))
	srvP := callP.HTTPServer(Planner, "/run", 2.50, 3.20, 200)
	e.Span(srvP, Detached())
	chatP := srvP.Chat(GPT4oMini, 2.60, 3.10).Usage(500, 50)
	// 500 * 0.15e-6 + 50 * 0.60e-6
	e.Span(chatP, Detached().Single(Success, ok).Spend(GPT4oMini, 500, 50, 0.000105))

	e.OneRun(Gateway, "StartActivity:Summarize", Success, LLive, 1)
	agentCall(e, Critic, RetryableFailure, LLive)
	agentCall(e, Planner, Success, LLive)
	e.SpendSeconds(Gateway, LLive, 1.12) // 0.02 + 1.00 + 0.10
	e.SpendSeconds(Coder, LOrphaned, 3.30)
	unheardChat(e, Gateway, Coder, GPT4o, LStartedAfterGone, 4000, 900, 0.019, 7.90)       // 4.00 + 3.90
	e.SpendSeconds(Critic, LOrphaned, 2.30)                                                // 1.60-3.90, all after 1.10
	unheardChat(e, Gateway, Critic, GPT4oMini, LStartedAfterGone, 800, 100, 0.00018, 5.70) // 2.90 + 2.80
	e.OneRun(Planner, "chat gpt-4o-mini", Success, LDetached, 1)
	e.SpendSeconds(Planner, LDetached, 0.50)
	e.ModelCall(Planner, GPT4oMini, LDetached, 500, 50, 0.000105)
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S18

// S18: every parentless span is a root.
//
// One trace holds three spans without a parent: a browser session span (web "session",
// 0.00-60.00) that starts before the request and outlasts it, a scheduler's batch span
// (scheduler "nightly-digest", 0.50-8.00, whose chat gpt-4o-mini 4.00-7.50 (2000/300) is its
// own live work), and the request (gateway POST /ask 1.00-3.00, 499). Each is a root with its
// end reason and judges its own subtree: the request's researcher goes on to 5.00 and its chat
// gpt-4o 3.50-4.90 (1000/200) is orphaned; the scheduler's chat, which ends after the
// request's gone time, is live. A planner call whose parent span never arrives cannot be told
// apart: its root is ambiguous, its liveness unknown, its run unknown_root (counted by the
// processor as spans without verdict, reason ambiguous_root).
func S18() (ptrace.Traces, Expected) {
	b, tr, e := begin(18)
	e.Gone(tr, 3.00, Gateway)
	session := tr.Span(Web, "session", Internal, 0.00, 60.00)
	e.Span(session, Live().Root(Completed))
	sched := tr.Span(Scheduler, "nightly-digest", Internal, 0.50, 8.00)
	e.Span(sched, Live().Root(Completed))
	e.GoneUnder(sched, 8.00, Scheduler)
	chatS := sched.Chat(GPT4oMini, 4.00, 7.50).Usage(2000, 300)
	// 2000 * 0.15e-6 + 300 * 0.60e-6
	e.Span(chatS, Live().Single(Success, ok).Spend(GPT4oMini, 2000, 300, 0.00048))

	root := tr.HTTPServerRoot(Gateway, "POST", "/ask", 1.00, 3.00, 499)
	e.Span(root, Live().Root(Cancelled).Reach(0, 1))
	srv := unheardAgentCall(e, root, Researcher, 1.01, 3.00, 1.02, 5.00, 2.00)
	// 1000 * 2.5e-6 + 200 * 10e-6
	chatForNobody(e, srv, GPT4o, 3.50, 4.90, 1000, 200, 0.0045, Orphaned(1.90, true))

	ghost := root.Child(Planner, "plan", Internal, 1.50, 2.60) // never arrives
	lost := ghost.HTTPClient("GET", SearchTool, HTTPPort, searchPath, 2.00, 2.50, 200)
	b.Remove(ghost)
	e.Span(lost, Unknown().Single(UnknownRoot, ok))

	e.Roots(Web, Completed, 1)
	e.Roots(Scheduler, Completed, 1)
	e.Roots(Gateway, Cancelled, 1)
	e.Reach(Gateway, 1, 0, 1)
	e.OneRun(Scheduler, "chat gpt-4o-mini", Success, LLive, 1)
	e.SpendSeconds(Scheduler, LLive, 3.50)
	e.ModelCall(Scheduler, GPT4oMini, LLive, 2000, 300, 0.00048)
	e.SpendSeconds(Gateway, LLive, 1.99)
	e.SpendSeconds(Researcher, LOrphaned, 1.40)
	unheardChat(e, Gateway, Researcher, GPT4o, LStartedAfterGone, 1000, 200, 0.0045, 3.90) // 2.00 + 1.90
	e.OneRun(Planner, opSearch, UnknownRoot, LUnknown, 1)
	e.SpendSeconds(Planner, LUnknown, 0.50)
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S19

// S19: cancellations of more languages, and an agent framework's tool call.
//
// Trace 1: the root is cancelled at 2.00 (499). planner (Kotlin), coder (Swift) and critic
// (Rust/tokio) each stop their search retry loop (0.10-0.30 503, 0.80-1.00 503) and record the
// cancellation in their own language when their SERVER span ends at 2.60 (600 ms after the
// gone time: beyond the clock-skew tolerance, within cancellation.grace):
// kotlinx.coroutines.JobCancellationException and Swift.CancellationError as exception events,
// tokio's "task 7 was cancelled" as error.type. Each noticed: live, and each search run
// cancelled; the news reached one hop.
// Trace 2, the Vercel AI SDK: ai.generateText (0.00-1.00) repeats the usage of its
// ai.generateText.doGenerate child (412/27, gpt-4o-mini-2024-07-18) under the ai.usage.* names:
// counted once, on the child, and the root says so (spend.repeated). Its ai.toolCall (INTERNAL,
// 1.01-1.18) starts after the root ended: work like any call, orphaned, 0.17 orphaned seconds.
func S19() (ptrace.Traces, Expected) {
	b, tr1, e := begin(19)

	root := cancelledAsk(e, tr1, 2.00, 1, 0)
	for _, c := range []struct {
		agent, typ string
		event      bool
	}{
		{Planner, "kotlinx.coroutines.JobCancellationException", true},
		{Coder, "Swift.CancellationError", true},
		{Critic, "task 7 was cancelled", false},
	} {
		srv := cancelledAgentCall(e, root, c.agent, 0.01, 2.00, 0.02, 2.60, 0)
		if c.event {
			srv.Exception(c.typ)
		} else {
			srv.ErrorType(c.typ)
		}
		e.Span(srv, Live())
		gets, tools := searchRetries(srv, "s19-search-"+c.agent, 503, [2]float64{0.10, 0.30}, [2]float64{0.80, 1.00})
		liveRetryRun(e, gets, tools, Cancelled, bad)
		e.OneRun(c.agent, opSearch, Cancelled, LLive, 2)
		e.SpendSeconds(c.agent, LLive, 0.40)
	}
	e.SpendSeconds(Gateway, LLive, 5.97) // 3 x 1.99

	tr2 := b.NewTrace()
	e.Gone(tr2, 1.00, TicketTriage)
	const model = "gpt-4o-mini-2024-07-18"
	gen := tr2.Span(TicketTriage, "ai.generateText", Internal, 0.00, 1.00).
		Set("ai.model.id", GPT4oMini).Set("ai.usage.promptTokens", 412).Set("ai.usage.completionTokens", 27).
		Set("ai.settings.maxRetries", 2)
	e.Span(gen, Live().Root(Completed).Repeated())
	do := gen.Child(TicketTriage, "ai.generateText.doGenerate", Internal, 0.05, 0.90).
		Set("gen_ai.system", "openai").Set(AttrGenAIRequestModel, GPT4oMini).Set(AttrGenAIRespModel, model).
		Set(AttrGenAIInputTokens, 412).Set(AttrGenAIOutputTokens, 27)
	// 412 * 0.15e-6 + 27 * 0.60e-6 (gpt-4o-mini-2024-07-18 priced as gpt-4o-mini)
	e.Span(do, Live().Single(Success, ok).Spend(model, 412, 27, 0.000078))
	tool := gen.Child(TicketTriage, "ai.toolCall", Internal, 1.01, 1.18).
		Set("ai.toolCall.name", "lookupTicket").Set("ai.toolCall.id", "call_s19_1")
	e.Span(tool, Orphaned(0.18, true).Single(DeliveredToNobody, ok))

	e.Roots(TicketTriage, Completed, 1)
	e.OneRun(TicketTriage, "ai.generateText.doGenerate", Success, LLive, 1)
	e.OneRun(TicketTriage, "ai.toolCall", DeliveredToNobody, LStartedAfterGone, 1)
	e.SpendSplit(TicketTriage, 0.85, 0.17)
	e.ModelCall(TicketTriage, model, LLive, 412, 27, 0.000078)
	e.Outlive(TicketTriage, 1, 0.18)
	return b.Traces(), e.Build()
}
