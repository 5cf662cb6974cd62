package scenarios

import (
	"math"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// S30 to S34: issue 27's gone time of a hop, detached work that stays detached, and the
// retryable defaults (DESIGN.md "Words": a caller that gave up, detached work; "Run outcomes":
// the retryable error types). Services beyond SCENARIOS.md's: api, worker, billing (round 3's)
// and scheduler (S18's).

// ---------------------------------------------------------------------------------------
// S30

// S30: an SDK's per-try timeout.
//
// The root gateway POST /ask 0.00-30.00 (200) waits throughout. gateway's Python client calls
// researcher with a 10 s read timeout: try 1 0.10-10.10 ends without a response
// (error.type httpx.ReadTimeout), the SDK tries again, try 2 (resend_count 1) 10.60-20.60 is
// answered (200): one run of 2, success. researcher never heard that try 1 was given up: its
// SERVER span of try 1 works on, 0.20-25.00 (200), and so the caller's end, 10.10, is its gone
// time and its work's: the server is orphaned (14.90 s after it, caller.service gateway), its
// chat gpt-4o-mini 0.50-9.00 (1500/300) ended in time (live, success), its chat gpt-4o
// 12.00-24.50 (3000/800) was dispatched for nobody and delivered to nobody, though the root
// still waited. Try 2's server 10.70-20.50 and its chat gpt-4o-mini 11.00-20.00 (1500/300) are
// live.
func S30() (ptrace.Traces, Expected) {
	b, tr, e := begin(30)
	root := completedAsk(e, tr, 30.00)

	try1 := root.HTTPClient("POST", Researcher, HTTPPort, "/run", 0.10, 10.10, 0).ErrorType("httpx.ReadTimeout")
	e.Span(try1, Live().Attempt(1))
	srv1 := try1.HTTPServer(Researcher, "/run", 0.20, 25.00, 200)
	e.GoneUnder(srv1, 10.10, Gateway) // the caller that gave up
	e.Span(srv1, Orphaned(14.90, false).Caller(Gateway))
	early := srv1.Chat(GPT4oMini, 0.50, 9.00).Usage(1500, 300)
	// 1500 * 0.15e-6 + 300 * 0.60e-6
	e.Span(early, Live().Single(Success, ok).Spend(GPT4oMini, 1500, 300, 0.000405))
	// 3000 * 2.5e-6 + 800 * 10e-6
	chatForNobody(e, srv1, GPT4o, 12.00, 24.50, 3000, 800, 0.0155, Orphaned(14.40, true))

	try2 := root.HTTPClient("POST", Researcher, HTTPPort, "/run", 10.60, 20.60, 200).ResendCount(1)
	e.Span(try2, Live().Attempt(2).Run(Success, 2, ok))
	srv2 := try2.HTTPServer(Researcher, "/run", 10.70, 20.50, 200)
	e.Span(srv2, Live())
	chat2 := srv2.Chat(GPT4oMini, 11.00, 20.00).Usage(1500, 300)
	e.Span(chat2, Live().Single(Success, ok).Spend(GPT4oMini, 1500, 300, 0.000405))

	e.OneRun(Gateway, opAgent(Researcher), Success, LLive, 2)
	e.SpendSeconds(Gateway, LLive, 20.00) // 10.00 + 10.00
	e.Runs(Researcher, "chat "+GPT4oMini, Success, 2)
	e.Attempts(Researcher, "chat "+GPT4oMini, LLive, 2)
	// live: 8.50 + 9.00; orphaned: 12.00-24.50, all after 10.10
	e.SpendSplit(Researcher, 17.50, 12.50)
	e.Tokens(Researcher, GPT4oMini, LLive, 3000, 600)
	e.Cost(Researcher, GPT4oMini, LLive, 0.00081)
	e.ModelCalls(Researcher, GPT4oMini, LLive, 2)
	unheardChat(e, Gateway, Researcher, GPT4o, LStartedAfterGone, 3000, 800, 0.0155, 29.30) // 14.90 + 14.40
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S31

// S31: an asynchronous API hands its work over.
//
// Trace 1: api POST /reports 0.00-0.30 answers 202: the request completed. Before answering it
// queued two jobs, each with the client's idempotency key: send reports 0.10-0.12 (key K1) and
// send exports 0.15-0.17 (key K2). Trace 2: worker's CONSUMER process reports 1.00-46.00, linked
// to the first (detached work: end reason detached), and its chat gpt-4o 2.00-45.00
// (4000/1000) with K1: bound by K1 to a request that completed normally, it is judged only
// against the deadline it carries: none, so live, whenever it ends; success. Trace 3: process
// exports 1.00-27.00, linked to the second, and its chat gpt-4o-mini 6.00-26.00 (2000/500)
// with K2 and a deadline of 20.00 (x-deadline): judged against that deadline, orphaned 6.00 s
// after it, delivered to nobody.
func S31() (ptrace.Traces, Expected) {
	b, t1, e := begin(31)
	t2, t3 := b.NewTrace(), b.NewTrace()
	e.Gone(t1, 0.30, API)
	e.Gone(t2, math.Inf(1), Worker) // handed over, no deadline: nothing judges it but its own result
	e.Gone(t3, 20.00, "")           // only the deadline it carries
	const k1, k2 = "c31f0a52-reports-7d1e", "c31f0a52-exports-8b2c"
	root := t1.HTTPServerRoot(API, "POST", "/reports", 0.00, 0.30, 202)
	e.Span(root, Live().Root(Completed))
	pub1 := root.Produce("rabbitmq", "reports", 0.10, 0.12).IdempotencyKey(k1)
	pub2 := root.Produce("rabbitmq", "exports", 0.15, 0.17).IdempotencyKey(k2)
	e.Span(pub1, Live().Single(Success, ok))
	e.Span(pub2, Live().Single(Success, ok))

	job1 := t2.ConsumerRoot(Worker, pub1, 1.00, 46.00)
	e.Span(job1, Detached().Root(DetachedRoot))
	chat1 := job1.Chat(GPT4o, 2.00, 45.00).Usage(4000, 1000).IdempotencyKey(k1)
	// 4000 * 2.5e-6 + 1000 * 10e-6
	e.Span(chat1, Live().Single(Success, ok).Spend(GPT4o, 4000, 1000, 0.02))

	job2 := t3.ConsumerRoot(Worker, pub2, 1.00, 27.00)
	e.Span(job2, Detached().Root(DetachedRoot))
	chat2 := job2.Chat(GPT4oMini, 6.00, 26.00).Usage(2000, 500).IdempotencyKey(k2).Deadline(20)
	// 2000 * 0.15e-6 + 500 * 0.60e-6
	e.Span(chat2, Orphaned(6.00, false).Single(DeliveredToNobody, ok).Spend(GPT4oMini, 2000, 500, 0.0006))

	e.Roots(API, Completed, 1)
	e.Roots(Worker, DetachedRoot, 2)
	e.OneRun(API, "send reports", Success, LLive, 1)
	e.OneRun(API, "send exports", Success, LLive, 1)
	e.SpendSeconds(API, LLive, 0.04)
	e.OneRun(Worker, "chat "+GPT4o, Success, LLive, 1)
	e.ModelCall(Worker, GPT4o, LLive, 4000, 1000, 0.02)
	e.OneRun(Worker, "chat "+GPT4oMini, DeliveredToNobody, LOutlivedRoot, 1)
	e.ModelCall(Worker, GPT4oMini, LOrphaned, 2000, 500, 0.0006)
	// live: 43.00 + 14.00 (6.00-20.00); orphaned: 20.00-26.00
	e.SpendSplit(Worker, 57.00, 6.00)
	e.Outlive(Worker, 1, 6.00)
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S32

// S32: a redelivered Kafka message is one run, not bound to the producer.
//
// gateway POST /orders 0.00-1.00 is cancelled (499) after publishing to Kafka (PRODUCER send
// orders 0.10-0.12, partition 2, offset 1017). billing's consumer instrumentation continues the
// producer's trace: its deliveries are children of the PRODUCER span. The first delivery
// 2.00-3.00 fails its commit (CommitFailedException); the message is delivered again 60 s
// later, 62.00-63.00, and succeeds. The message's identity (destination, partition, offset)
// makes the two one run of 2, success; it binds nothing: the deliveries are detached work
// (the request was over before them and did not wait), not judged against the cancelled
// request, and nothing of the request's went on (reach 0, depth 0).
func S32() (ptrace.Traces, Expected) {
	b, tr, e := begin(32)
	root := cancelledRoot(e, tr, "/orders", 1.00, 0, 0)
	pub := root.Produce("kafka", "orders", 0.10, 0.12).Set(attrMsgPartition, "2").Set(attrKafkaOffset, 1017)
	e.Span(pub, Live().Single(Success, ok))
	deliver := func(start, end float64) *Span {
		d := pub.Child(Billing, "process orders", Consumer, start, end)
		return d.Set(AttrMsgSystem, "kafka").Set(AttrMsgOpType, "process").Set(AttrMsgOpName, "process").
			Set(AttrMsgDestination, "orders").Set(attrMsgPartition, "2").Set(attrKafkaOffset, 1017)
	}
	d1 := deliver(2.00, 3.00).Exception("org.apache.kafka.clients.consumer.CommitFailedException")
	d2 := deliver(62.00, 63.00)
	e.Span(d1, Detached().Attempt(1))
	e.Span(d2, Detached().Attempt(2).Run(Success, 2, ok))

	e.OneRun(Gateway, "send orders", Success, LLive, 1)
	e.SpendSeconds(Gateway, LLive, 0.02)
	e.OneRun(Billing, "process orders", Success, LDetached, 2)
	e.SpendSeconds(Billing, LDetached, 2.00)
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S33

// S33: the roots of detached work end "detached".
//
// Trace 1: billing polls a queue: a CONSUMER span process invoices 0.00-4.00 without a parent
// or a link (and failing: status ERROR), its chat gpt-4o-mini tries 0.20-1.20 (503) and
// 1.50-3.80 (800/200). Trace 2: scheduler's batch span digest batch 0.00-2.00 (INTERNAL) links
// to the invoices span, and its chat gpt-4o 0.10-1.90 (1000/200) succeeds. Neither root is a
// root request: each is counted with the end reason detached, carries no liveness, and the
// runs under it are judged by their own results (success, 2 attempts; success).
func S33() (ptrace.Traces, Expected) {
	b, t1, e := begin(33)
	t2 := b.NewTrace()
	poll := t1.Span(Billing, "process invoices", Consumer, 0.00, 4.00).
		Set(AttrMsgSystem, "rabbitmq").Set(AttrMsgOpType, "process").Set(AttrMsgOpName, "process").
		Set(AttrMsgDestination, "invoices").Error("invoice 7 rejected")
	e.Span(poll, Detached().Root(DetachedRoot))
	a1 := poll.Chat(GPT4oMini, 0.20, 1.20).HTTPError(503)
	a2 := poll.Chat(GPT4oMini, 1.50, 3.80).Usage(800, 200)
	e.Span(a1, Detached().Attempt(1).Model(GPT4oMini))
	// 800 * 0.15e-6 + 200 * 0.60e-6
	e.Span(a2, Detached().Attempt(2).Run(Success, 2, ok).Spend(GPT4oMini, 800, 200, 0.00024))

	batch := t2.Span(Scheduler, "digest batch", Internal, 0.00, 2.00).Link(poll)
	e.Span(batch, Detached().Root(DetachedRoot))
	chat := batch.Chat(GPT4o, 0.10, 1.90).Usage(1000, 200)
	// 1000 * 2.5e-6 + 200 * 10e-6
	e.Span(chat, Detached().Single(Success, ok).Spend(GPT4o, 1000, 200, 0.0045))

	e.Roots(Billing, DetachedRoot, 1)
	e.Roots(Scheduler, DetachedRoot, 1)
	e.OneRun(Billing, "chat "+GPT4oMini, Success, LDetached, 2)
	e.SpendSeconds(Billing, LDetached, 3.30) // 1.00 + 2.30
	e.Tokens(Billing, GPT4oMini, LDetached, 800, 200)
	e.Cost(Billing, GPT4oMini, LDetached, 0.00024)
	e.ModelCalls(Billing, GPT4oMini, LDetached, 2)
	e.OneRun(Scheduler, "chat "+GPT4o, Success, LDetached, 1)
	e.SpendSeconds(Scheduler, LDetached, 1.80)
	e.ModelCall(Scheduler, GPT4o, LDetached, 1000, 200, 0.0045)
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S34

// S34: the connection and timeout errors of common SDKs are retryable.
//
// Root gateway POST /ask 0.00-12.00 (200, a degraded answer). researcher's OpenAI Python SDK
// (max_retries 2) times out three times on chat gpt-4o: 0.10-3.10, 3.60-6.60, 7.60-10.60, each
// recording an exception openai.APITimeoutError (the last one with error.type too): one run of
// 3, retryable_failure, everything live. coder's Go client: GET search-tool 0.10-5.10 fails
// with error.type "dial tcp 10.0.0.9:8080: i/o timeout" (no connection, no server span), the
// retry 5.60-5.90 is answered (200): one run of 2, success.
func S34() (ptrace.Traces, Expected) {
	b, tr, e := begin(34)
	root := completedAsk(e, tr, 12.00)

	srvR := liveAgentCall(e, root, Researcher, 0.01, 11.00, 0.02, 10.99)
	const timeout = "openai.APITimeoutError"
	a1 := srvR.Chat(GPT4o, 0.10, 3.10).Exception(timeout)
	a2 := srvR.Chat(GPT4o, 3.60, 6.60).Exception(timeout)
	a3 := srvR.Chat(GPT4o, 7.60, 10.60).Exception(timeout).Set(AttrErrorType, timeout)
	e.Span(a1, Live().Attempt(1).Model(GPT4o))
	e.Span(a2, Live().Attempt(2).Model(GPT4o))
	e.Span(a3, Live().Attempt(3).Run(RetryableFailure, 3, bad).Model(GPT4o))

	srvC := liveAgentCall(e, root, Coder, 0.01, 6.00, 0.02, 5.99)
	g1 := srvC.HTTPClient("GET", SearchTool, HTTPPort, searchPath, 0.10, 5.10, 0).ErrorType("dial tcp 10.0.0.9:8080: i/o timeout")
	g2, tool := searchCall(srvC, 5.60, 5.90, 200)
	g2.ResendCount(1)
	e.Span(g1, Live().Attempt(1))
	e.Span(g2, Live().Attempt(2).Run(Success, 2, ok))
	e.Span(tool, Live())

	e.SpendSeconds(Gateway, LLive, 16.98) // 10.99 + 5.99
	e.OneRun(Researcher, "chat "+GPT4o, RetryableFailure, LLive, 3)
	e.SpendSeconds(Researcher, LLive, 9.00)
	e.ModelCalls(Researcher, GPT4o, LLive, 3)
	e.OneRun(Coder, opSearch, Success, LLive, 2)
	e.SpendSeconds(Coder, LLive, 5.30) // 5.00 + 0.30
	return b.Traces(), e.Build()
}
