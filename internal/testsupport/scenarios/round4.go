package scenarios

import "go.opentelemetry.io/collector/pdata/ptrace"

// S25 to S29: the shapes of issue 27, items 1 and 5 (DESIGN.md "Run outcomes": when a run is
// over; "Words": run, the final attempt, the target): a loop that outlives its parent, a keyed
// re-send after a success, hedged tries whose loser was cancelled long before the winner
// finished, two endpoints of one host, a loop's span that ended between two tries. Services
// beyond SCENARIOS.md's: api, payments, ranker.

const paymentsHost = "payments"

// researcherHandler begins the story of S25 and S29: the user leaves at 3.00 (cancelledAsk:
// reach 0, orphaned depth 1) and gateway's call to researcher 0.01-3.00 is cancelled with it
// (cancelledAgentCall, gateway's 2.99 live seconds); researcher's handler, SERVER POST /run
// 0.02-3.00, returns 504 at the gone time: live. It returns the handler, under which
// researcher's loop keeps trying.
func researcherHandler(e *Expect, tr *Trace) *Span {
	root := cancelledAsk(e, tr, 3.00, 0, 1)
	handler := cancelledAgentCall(e, root, Researcher, 0.01, 3.00, 0.02, 3.00, 504)
	e.Span(handler, Live())
	e.SpendSeconds(Gateway, LLive, 2.99)
	return handler
}

// ---------------------------------------------------------------------------------------
// S25

// S25: a loop outlives its parent (the seed's own case).
//
// The user leaves at 3.00: gateway POST /ask 0.00-3.00 (499), its call to researcher 0.01-3.00
// (context canceled): a cancelled run. researcher's handler (SERVER POST /run 0.02-3.00) returns
// 504 at the gone time, but its retry loop, running in a background task, keeps calling the
// search tool as children of the handler: 0.10-1.00 (503), 1.50-2.40 (503), 2.90-4.00 (503, in
// flight when the handler ended), 5.00-5.80 (503), 7.00-7.60 (200). One run of five attempts,
// not one per attempt: its final attempt is the first that succeeded (7.00-7.60), dispatched
// after the gone time, delivered to nobody (result ok). The news stayed in gateway (reach 0);
// researcher's tries went on one hop down (depth 1).
func S25() (ptrace.Traces, Expected) {
	b, tr, e := begin(25)
	handler := researcherHandler(e, tr)
	searchTries(e, handler,
		searchTry{0.10, 1.00, 503, Live().Attempt(1)},
		searchTry{1.50, 2.40, 503, Live().Attempt(2)},
		searchTry{2.90, 4.00, 503, Orphaned(1.00, false).Attempt(3)},
		searchTry{5.00, 5.80, 503, Orphaned(2.80, true).Attempt(4)},
		searchTry{7.00, 7.60, 200, Orphaned(4.60, true).Attempt(5).Run(DeliveredToNobody, 5, ok)})

	e.Runs(Researcher, opSearch, DeliveredToNobody, 1)
	e.Attempts(Researcher, opSearch, LLive, 2)
	e.Attempts(Researcher, opSearch, LOutlivedRoot, 1)
	e.Attempts(Researcher, opSearch, LStartedAfterGone, 2)
	// live: 0.90 + 0.90 + the third try's 0.10 before 3.00; orphaned: 1.00 + 0.80 + 0.60
	e.SpendSplit(Researcher, 1.90, 2.40)
	e.Outlive(Researcher, 3, 8.40) // 1.00 + 2.80 + 4.60
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S26

// S26: a keyed re-send after a success.
//
// Trace 1: api POST /checkout 0.00-2.00 (200) charges the card: POST payments /charges with
// Idempotency-Key ord-26, 0.10-1.90, 200. The client never got api's answer and sends the
// checkout again: trace 2, api POST /checkout 30.00-31.00 (200), POST payments /charges with the
// same key, 30.10-30.90, 200 (payments answers from its idempotency store). One run of two
// attempts across the traces: a keyed run goes on after a success; its final attempt is the
// first that succeeded (trace 1's), success, and the re-send is attempt 2.
func S26() (ptrace.Traces, Expected) {
	b, t1, e := begin(26)
	t2 := b.NewTrace()
	e.Gone(t1, 2.00, API)
	e.Gone(t2, 31.00, API)
	r1 := t1.HTTPServerRoot(API, "POST", "/checkout", 0.00, 2.00, 200)
	c1 := r1.HTTPClient("POST", paymentsHost, HTTPPort, "/charges", 0.10, 1.90, 200).IdempotencyKey("ord-26")
	r2 := t2.HTTPServerRoot(API, "POST", "/checkout", 30.00, 31.00, 200)
	c2 := r2.HTTPClient("POST", paymentsHost, HTTPPort, "/charges", 30.10, 30.90, 200).IdempotencyKey("ord-26")
	e.Span(r1, Live().Root(Completed))
	e.Span(c1, Live().Attempt(1).Run(Success, 2, ok))
	e.Span(r2, Live().Root(Completed))
	e.Span(c2, Live().Attempt(2))

	op := "POST " + paymentsHost + ":8080"
	e.Roots(API, Completed, 2)
	e.OneRun(API, op, Success, LLive, 2)
	e.SpendSeconds(API, LLive, 2.60)
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S27

// S27: hedged tries, the loser cancelled long before the winner finished.
//
// Root gateway POST /ask 0.00-3.00 (200). planner (gateway's call 0.01-2.50, planner's SERVER
// 0.02-2.49) asks ranker: its first try GET /rank 0.10-0.40 is cancelled by its own client
// (context canceled) after the hedge, the second try 0.30-1.80, started; the hedge succeeds at
// 1.80. The tries overlap: one run of two, whatever ended first; success, decided by the
// winner. Never a cancelled run (the root is live), never two runs.
func S27() (ptrace.Traces, Expected) {
	b, tr, e := begin(27)
	srv := askedAgent(e, tr, 3.00, Planner, 0.01, 2.50, 0.02, 2.49)
	lose := srv.HTTPClient("GET", "ranker", HTTPPort, "/rank", 0.10, 0.40, 0).ErrorType("context canceled")
	win := srv.HTTPClient("GET", "ranker", HTTPPort, "/rank", 0.30, 1.80, 200)
	e.Span(lose, Live().Attempt(1))
	e.Span(win, Live().Attempt(2).Run(Success, 2, ok))

	e.SpendSeconds(Gateway, LLive, 2.49)
	e.OneRun(Planner, "GET ranker:8080", Success, LLive, 2)
	e.SpendSeconds(Planner, LLive, 1.80) // 0.30 + 1.50
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S28

// S28: two endpoints of one host are two operations.
//
// Root gateway POST /ask 0.00-2.00 (200). critic (gateway's call 0.01-1.50, critic's SERVER
// 0.02-1.49) calls search-tool's /search 0.10-0.50, which fails (503), then its /fetch
// 0.60-0.90 (200): same span name, same host and port, different paths: two runs of one,
// retryable_failure and success, not one run of two.
func S28() (ptrace.Traces, Expected) {
	b, tr, e := begin(28)
	srv := askedAgent(e, tr, 2.00, Critic, 0.01, 1.50, 0.02, 1.49)
	search := srv.HTTPClient("GET", SearchTool, HTTPPort, searchPath, 0.10, 0.50, 503)
	fetch := srv.HTTPClient("GET", SearchTool, HTTPPort, "/fetch?url=https%3A%2F%2Fexample.com", 0.60, 0.90, 200)
	e.Span(search, Live().Single(RetryableFailure, bad))
	e.Span(fetch, Live().Single(Success, ok))

	e.SpendSeconds(Gateway, LLive, 1.49)
	e.Runs(Critic, opSearch, RetryableFailure, 1)
	e.Runs(Critic, opSearch, Success, 1)
	e.Attempts(Critic, opSearch, LLive, 2)
	e.SpendSeconds(Critic, LLive, 0.70)
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S29

// S29: the loop's span ended between two tries.
//
// As S25, but researcher's handler (0.02-3.00, 504) ends during a backoff, no try in flight:
// 0.10-1.00 and 1.50-2.40 (503) before it, 4.00-4.50 (503) and 5.50-6.00 (200) after it. The run
// the handler saw was over when it ended, after every try of it had ended (DESIGN.md "Run
// outcomes": the span around the attempts ended after the final attempt ended): two tries,
// retryable_failure, live. The tries after it are a new run under the same parent, numbered from
// 1, dispatched after the gone time: delivered_to_nobody (result ok). Two runs, whatever the
// moment of the decision; S25, with a try in flight at the handler's end, is one.
func S29() (ptrace.Traces, Expected) {
	b, tr, e := begin(29)
	handler := researcherHandler(e, tr)
	searchTries(e, handler,
		searchTry{0.10, 1.00, 503, Live().Attempt(1)},
		searchTry{1.50, 2.40, 503, Live().Attempt(2).Run(RetryableFailure, 2, bad)},
		searchTry{4.00, 4.50, 503, Orphaned(1.50, true).Attempt(1)},
		searchTry{5.50, 6.00, 200, Orphaned(3.00, true).Attempt(2).Run(DeliveredToNobody, 2, ok)})

	e.OneRun(Researcher, opSearch, RetryableFailure, LLive, 2)              // the run the handler saw
	e.OneRun(Researcher, opSearch, DeliveredToNobody, LStartedAfterGone, 2) // the new run after it
	e.SpendSplit(Researcher, 1.80, 1.00)
	e.Outlive(Researcher, 2, 4.50)
	return b.Traces(), e.Build()
}
