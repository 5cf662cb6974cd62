package scenarios

import "go.opentelemetry.io/collector/pdata/ptrace"

// S20 to S24: the shapes of issue 19 (DESIGN.md "Words" and "Run outcomes" as of round 3):
// queues that redeliver, hedged tries, a tool server's span, a proxy that saw its client leave,
// request-reply over a queue. Services beyond SCENARIOS.md's: fulfilment, billing, envoy, api,
// worker.

const (
	Fulfilment = "fulfilment"
	Billing    = "billing"
	Envoy      = "envoy"
	API        = "api"
	Worker     = "worker"

	attrMsgID         = "messaging.message.id"
	attrMsgPartition  = "messaging.destination.partition.id"
	attrKafkaOffset   = "messaging.kafka.offset"
	attrGRPCPrevTries = "rpc.grpc.request.metadata.grpc-previous-rpc-attempts"
	attrEnvoyAttempt  = "http.request.header.x-envoy-attempt-count"
	attrResponseFlags = "response_flags"
)

// delivery adds a CONSUMER span "process <destination>" as the root of t: a delivery of a
// message, known by the attributes given.
func (t *Trace) delivery(service, destination string, start, end float64, attrs ...any) *Span {
	c := t.Span(service, "process "+destination, Consumer, start, end)
	c.Set(AttrMsgSystem, "kafka").Set(AttrMsgOpType, "process").Set(AttrMsgOpName, "process").
		Set(AttrMsgDestination, destination)
	for i := 0; i+1 < len(attrs); i += 2 {
		c.Set(attrs[i].(string), attrs[i+1])
	}
	return c
}

// ---------------------------------------------------------------------------------------
// S20

// S20: queue redelivery is one run.
//
// Trace A: web POST /orders 0.00-0.50 (200) publishes message "m-20-1" (PRODUCER send orders
// 0.10-0.12, fire and forget). Trace B1: fulfilment consumes it, 1.00-2.00, and its commit is
// lost; trace B2: the same message (messaging.message.id "m-20-1") is delivered again,
// 30.00-31.00. The two deliveries are attempts 1 and 2 of one run, success (result ok), its
// outcome on the first delivery, the first that succeeded; both detached work (nothing waits
// for them). Traces C1 and C2: billing consumes Kafka topic
// payments, partition 3, offset 42 (no message id): 2.00-3.00 fails (CommitFailedException),
// and the redelivery 33.00-34.00 succeeds: one run of two attempts, success. Trace C3: offset
// 43 of the same partition, 4.00-4.50: another message, a run of one.
func S20() (ptrace.Traces, Expected) {
	b, ta, e := begin(20)
	b1, b2 := b.NewTrace(), b.NewTrace()
	c1, c2, c3 := b.NewTrace(), b.NewTrace(), b.NewTrace()
	e.Gone(ta, 0.50, Web)
	root := ta.HTTPServerRoot(Web, "POST", "/orders", 0.00, 0.50, 200)
	pub := root.Produce("kafka", "orders", 0.10, 0.12).Set(attrMsgID, "m-20-1")
	e.Span(root, Live().Root(Completed))
	e.Span(pub, Live().Single(Success, ok))
	d1 := b1.delivery(Fulfilment, "orders", 1.00, 2.00, attrMsgID, "m-20-1").Link(pub)
	d2 := b2.delivery(Fulfilment, "orders", 30.00, 31.00, attrMsgID, "m-20-1").Link(pub)
	// The first delivery succeeded (only its commit was lost): the run's final attempt is the
	// first that succeeded (DESIGN.md "Words": run, as of round 4), the redelivery repeats it.
	e.Span(d1, Detached().Root(DetachedRoot).Attempt(1).Run(Success, 2, ok))
	e.Span(d2, Detached().Root(DetachedRoot).Attempt(2))

	k1 := c1.delivery(Billing, "payments", 2.00, 3.00, attrMsgPartition, "3", attrKafkaOffset, 42).
		Exception("org.apache.kafka.clients.consumer.CommitFailedException")
	k2 := c2.delivery(Billing, "payments", 33.00, 34.00, attrMsgPartition, "3", attrKafkaOffset, 42)
	k3 := c3.delivery(Billing, "payments", 4.00, 4.50, attrMsgPartition, "3", attrKafkaOffset, 43)
	e.Span(k1, Detached().Root(DetachedRoot).Attempt(1))
	e.Span(k2, Detached().Root(DetachedRoot).Attempt(2).Run(Success, 2, ok))
	e.Span(k3, Detached().Root(DetachedRoot).Single(Success, ok))

	e.Roots(Web, Completed, 1)
	// Each delivery begins a trace of detached work: a root counted as detached.
	e.Roots(Fulfilment, DetachedRoot, 2)
	e.Roots(Billing, DetachedRoot, 3)
	e.OneRun(Web, "send orders", Success, LLive, 1)
	e.SpendSeconds(Web, LLive, 0.02)
	e.OneRun(Fulfilment, "process orders", Success, LDetached, 2)
	e.SpendSeconds(Fulfilment, LDetached, 2.00)
	e.Runs(Billing, "process payments", Success, 2)
	e.Attempts(Billing, "process payments", LDetached, 3)
	e.SpendSeconds(Billing, LDetached, 2.50)
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S21

// S21: hedged tries are one run; parallel work is not.
//
// Root gateway POST /ask 0.00-3.00 (200), live throughout. planner hedges a gRPC call to a
// ranking service: try 1 0.10-1.20 is cancelled by its own client (CANCELLED) when the hedge,
// try 2 (grpc-previous-rpc-attempts 1) 0.60-1.19, succeeds: one run of 2, success, decided by
// the winner. coder's HTTP client hedges without saying so: GET search-tool 0.20-0.90 succeeds,
// its twin 0.40-0.91 is cancelled by the client (context canceled) at the success: one run of
// 2, success; never a cancelled run (the root is live). critic fans out two GETs to the same
// target at once (0.30-0.80 and 0.35-0.85, both 200): parallel work, two runs of one.
func S21() (ptrace.Traces, Expected) {
	b, tr, e := begin(21)
	root := completedAsk(e, tr, 3.00)

	pSrv := liveAgentCall(e, root, Planner, 0.01, 2.00, 0.02, 1.99)
	try1 := pSrv.GRPCClient("ranker", "rank.Ranker", "Rank", 0.10, 1.20, GRPCCancelled)
	try2 := pSrv.GRPCClient("ranker", "rank.Ranker", "Rank", 0.60, 1.19, GRPCOK).Set(attrGRPCPrevTries, []string{"1"})
	e.Span(try1, Live().Attempt(1))
	e.Span(try2, Live().Attempt(2).Run(Success, 2, ok))

	cSrv := liveAgentCall(e, root, Coder, 0.01, 2.00, 0.02, 1.99)
	win, winSrv := searchCall(cSrv, 0.20, 0.90, 200)
	lose := cSrv.HTTPClient("GET", SearchTool, HTTPPort, searchPath, 0.40, 0.91, 0).ErrorType("context canceled")
	e.Span(win, Live().Attempt(1).Run(Success, 2, ok))
	e.Span(winSrv, Live())
	e.Span(lose, Live().Attempt(2))

	kSrv := liveAgentCall(e, root, Critic, 0.01, 2.00, 0.02, 1.99)
	for _, tm := range [2][2]float64{{0.30, 0.80}, {0.35, 0.85}} {
		get, tool := searchCall(kSrv, tm[0], tm[1], 200)
		e.Span(get, Live().Single(Success, ok))
		e.Span(tool, Live())
	}

	e.OneRun(Planner, "rank.Ranker/Rank", Success, LLive, 2)
	e.OneRun(Coder, opSearch, Success, LLive, 2)
	e.Runs(Critic, opSearch, Success, 2)
	e.Attempts(Critic, opSearch, LLive, 2)
	e.SpendSeconds(Gateway, LLive, 5.97)
	e.SpendSeconds(Planner, LLive, 1.69) // both tries: 1.10 + 0.59
	e.SpendSeconds(Coder, LLive, 1.21)   // 0.70 + 0.51
	e.SpendSeconds(Critic, LLive, 1.00)
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S22

// S22: a SERVER span is never an attempt; arrays of one value.
//
// Root gateway POST /ask 0.00-2.00 (200). planner calls the search tool server over MCP-style
// HTTP (CLIENT POST search-tool 0.10-1.00, 200); search-tool's SERVER span carries
// gen_ai.tool.name web_search: the callee's side of the call, no run of its own. planner then
// calls ranker through Envoy, whose x-envoy-attempt-count request header is captured as a
// string array: ["2"] 1.10-1.30 (503) and ["3"] 1.40-1.60 (200), the first try not traced: one
// run of 2, numbered 2 and 3, success.
func S22() (ptrace.Traces, Expected) {
	b, tr, e := begin(22)
	srv := askedAgent(e, tr, 2.00, Planner, 0.01, 1.90, 0.02, 1.89)
	tool := srv.HTTPClient("POST", SearchTool, HTTPPort, "/mcp", 0.10, 1.00, 200).Set(attrToolName, "web_search")
	toolSrv := tool.HTTPServer(SearchTool, "/mcp", 0.11, 0.99, 200).Set(attrToolName, "web_search")
	e.Span(tool, Live().Single(Success, ok))
	e.Span(toolSrv, Live())
	r1 := srv.HTTPClient("GET", "ranker", HTTPPort, "/rank", 1.10, 1.30, 503).Set(attrEnvoyAttempt, []string{"2"})
	r2 := srv.HTTPClient("GET", "ranker", HTTPPort, "/rank", 1.40, 1.60, 200).Set(attrEnvoyAttempt, []string{"3"})
	e.Span(r1, Live().Attempt(2))
	e.Span(r2, Live().Attempt(3).Run(Success, 2, ok))

	e.OneRun(Planner, "POST "+SearchTool+":8080", Success, LLive, 1)
	e.OneRun(Planner, "GET ranker:8080", Success, LLive, 2)
	e.SpendSeconds(Gateway, LLive, 1.89)
	e.SpendSeconds(Planner, LLive, 1.30) // 0.90 + 0.20 + 0.20
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S23

// S23: a proxy that saw its client leave.
//
// Envoy's ingress span is the root (SERVER, 0.00-2.00), in Envoy's own attribute form: the
// client disconnected (response_flags "DC", http.status_code "0", error "true"): the root ended
// cancelled, gone at 2.00. Envoy's upstream span (CLIENT, 0.01-2.00), reset at that moment, has
// http.status_code "0" and error "true": a cancelled run. The backend api never heard: its
// SERVER span 0.02-5.00 (200) is orphaned (caller envoy), and its chat gpt-4o 2.50-4.90
// (1000/200) was dispatched after the gone time: delivered to nobody. The news reached the
// proxy's own upstream call and stopped there: reach 0 hops, orphaned depth 1.
func S23() (ptrace.Traces, Expected) {
	b, tr, e := begin(23)
	e.Gone(tr, 2.00, Envoy)
	root := tr.Span(Envoy, "ingress", Server, 0.00, 2.00).
		Set("http.method", "POST").Set("http.url", "http://shop.example/ask").Set("http.status_code", "0").
		Set("component", "proxy").Set(attrResponseFlags, "DC").Set("error", "true")
	e.Span(root, Live().Root(Cancelled).Reach(0, 1))
	up := root.Child(Envoy, "router api egress", Client, 0.01, 2.00).
		Set("http.method", "POST").Set("http.url", "http://api:8080/ask").Set("http.status_code", "0").
		Set("upstream_cluster", "api").Set("component", "proxy").Set("error", "true")
	e.Span(up, Live().Single(Cancelled, bad))
	srv := up.HTTPServer(API, "/ask", 0.02, 5.00, 200)
	e.Span(srv, Orphaned(3.00, false).Caller(Envoy))
	chatForNobody(e, srv, GPT4o, 2.50, 4.90, 1000, 200, 0.0045, Orphaned(2.90, true))

	e.Roots(Envoy, Cancelled, 1)
	// Envoy's upstream span is an HTTP CLIENT span: its operation is method and target.
	e.OneRun(Envoy, "POST api:8080", Cancelled, LLive, 1)
	e.SpendSeconds(Envoy, LLive, 1.99)
	e.SpendSeconds(API, LOrphaned, 2.40)
	e.Reach(Envoy, 1, 0, 1)
	unheardChat(e, Envoy, API, GPT4o, LStartedAfterGone, 1000, 200, 0.0045, 5.90) // 3.00 + 2.90
	return b.Traces(), e.Build()
}

// ---------------------------------------------------------------------------------------
// S24

// S24: request-reply over a queue.
//
// Trace 1: the user leaves: gateway POST /ask 0.00-2.00 (499), its call to api 0.01-2.00
// (context canceled). api's handler (SERVER 0.02-5.00, 200) enqueues a report task (PRODUCER
// send reports 0.10-0.12, messaging.message.id t-24-1) and awaits its result: worker's CONSUMER
// process reports 0.30-4.90, a child of the PRODUCER, ends while the handler is still open, so
// the queue is a request-reply hop and the task is the request's own work: orphaned (2.90 s
// after the gone time), its chat gpt-4o 2.50-4.80 (1000/200) dispatched after the gone time,
// delivered to nobody. Trace 2: api POST /export 0.00-0.50 (200) enqueues an export (PRODUCER
// 0.10-0.12) and answers at once; worker's CONSUMER 1.00-3.00 and its chat gpt-4o-mini
// 1.10-2.90 (500/100) run after the request finished: fire and forget, detached.
func S24() (ptrace.Traces, Expected) {
	b, t1, e := begin(24)
	root := cancelledAsk(e, t1, 2.00, 0, 2)
	srv := unheardAgentCall(e, root, API, 0.01, 2.00, 0.02, 5.00, 3.00)
	pub := srv.Produce("celery", "reports", 0.10, 0.12).Set(attrMsgID, "t-24-1")
	e.Span(pub, Live().Single(Success, ok))
	task := pub.Child(Worker, "process reports", Consumer, 0.30, 4.90).
		Set(AttrMsgSystem, "celery").Set(AttrMsgOpType, "process").Set(AttrMsgDestination, "reports").Set(attrMsgID, "t-24-1")
	e.Span(task, Orphaned(2.90, false).Single(DeliveredToNobody, ok))
	chat := task.Chat(GPT4o, 2.50, 4.80).Usage(1000, 200)
	// The chat is an attempt inside the delivery, an attempt of its own service: its seconds
	// are the delivery's (spend.nested).
	e.Span(chat, Orphaned(2.80, true).Single(DeliveredToNobody, ok).Spend(GPT4o, 1000, 200, 0.0045).Nested())

	t2 := b.NewTrace()
	e.Gone(t2, 0.50, API)
	root2 := t2.HTTPServerRoot(API, "POST", "/export", 0.00, 0.50, 200)
	e.Span(root2, Live().Root(Completed))
	pub2 := root2.Produce("celery", "exports", 0.10, 0.12)
	e.Span(pub2, Live().Single(Success, ok))
	exp := pub2.Child(Worker, "process exports", Consumer, 1.00, 3.00).
		Set(AttrMsgSystem, "celery").Set(AttrMsgOpType, "process").Set(AttrMsgDestination, "exports")
	e.Span(exp, Detached())
	chat2 := exp.Chat(GPT4oMini, 1.10, 2.90).Usage(500, 100)
	e.Span(chat2, Detached().Single(Success, ok).Spend(GPT4oMini, 500, 100, 0.000135))

	e.Roots(API, Completed, 1)
	e.Unpropagated(Gateway, API, 1)
	e.OneRun(API, "send reports", Success, LLive, 1)
	e.OneRun(API, "send exports", Success, LLive, 1)
	e.SpendSeconds(Gateway, LLive, 1.99)
	e.SpendSeconds(API, LLive, 0.04)
	e.OneRun(Worker, "process reports", DeliveredToNobody, LOutlivedRoot, 1)
	e.OneRun(Worker, "chat "+GPT4o, DeliveredToNobody, LStartedAfterGone, 1)
	// live: the delivery 0.30-2.00; orphaned: its 2.00-4.90
	e.SpendSplit(Worker, 1.70, 2.90)
	e.ModelCall(Worker, GPT4o, LOrphaned, 1000, 200, 0.0045)
	e.Outlive(Worker, 2, 5.70) // 2.90 + 2.80
	e.Outlive(API, 1, 3.00)
	e.OneRun(Worker, "chat "+GPT4oMini, Success, LDetached, 1)
	e.SpendSeconds(Worker, LDetached, 1.80)
	e.ModelCall(Worker, GPT4oMini, LDetached, 500, 100, 0.000135)
	return b.Traces(), e.Build()
}
