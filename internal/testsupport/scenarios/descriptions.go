package scenarios

// descriptions holds the description of every scenario, the summary its expected.json carries;
// each builder's doc comment tells the same story with the choices it made.
var descriptions = map[string]string{
	"S1": "Happy fan-out: gateway POST /ask 0.00-6.00 (200) calls planner, researcher, coder and critic " +
		"(0.01-5.50); each makes one search-tool GET and one gpt-4o-mini chat (1200/300 tokens), all succeeding first try. " +
		"Root completed, every span live, every run success, zero orphaned spend.",
	"S2": "The caller leaves, the retry loop never hears (the seed's story). gateway POST /ask ends at 3.00 with 499 " +
		"(gone 3.00); gateway's CLIENT call to researcher ends 3.00 with error.type 'context canceled'. researcher's search-tool " +
		"attempts (same idempotency key, resend_count -,1,2,3): 0.10-0.30 503, 0.80-1.00 503, 2.00-2.20 503, 4.20-4.40 200; then " +
		"chat gpt-4o 4.45-6.45 (3000/800), PRODUCER 6.50-6.52, SERVER span ends 6.55. planner, coder, critic finish by 2.50.",
	"S3": "A loop that checks (the seed's fix). As S2 up to 2.20: gateway's root ends 3.00 with 499; " +
		"researcher's search attempts 0.10-0.30, 0.80-1.00, 2.00-2.20 all 503; the backoff is cancelled at 3.00, no attempt 4, " +
		"no chat, no publish; researcher's SERVER span ends 3.01 with error.type 'context canceled'. Search run cancelled " +
		"(3 attempts), researcher SERVER live within the 250 ms clock-skew tolerance, zero orphaned spend, no unpropagated edge.",
	"S4": "Dispatched after the deadline. gateway POST /ask carries x-deadline T0+2.00 (unix 1767225602), " +
		"passes it to coder, and ends 2.00 with 504. gateway's CLIENT call to coder is abandoned at 2.00 (status unset, no " +
		"response code). coder's search 0.10-1.50 succeeds; its gpt-4o-mini chat 2.50-3.50 (500/100) starts after the gone " +
		"time; coder's SERVER span ends 3.60. Root deadline_exceeded, chat started_after_gone and delivered_to_nobody, " +
		"coder SERVER outlived the root by 1.60 s.",
	"S5": "Retries exhausted while someone still waits. researcher's five search-tool attempts " +
		"(0.10-0.30, 0.60-0.80, 1.30-1.50, 2.40-2.60, 3.80-4.00) all get 503; researcher answers 200 at 4.05; the root ends " +
		"6.00 with 200 (degraded answer). Search run retryable_failure with 5 attempts; nothing orphaned.",
	"S6": "A hard failure, and gRPC. coder's search-tool GET gets 400: run hard_failure, 1 attempt. " +
		"planner's gRPC calls to search-tool: UNAVAILABLE, UNAVAILABLE, OK (run success, 3 attempts), then a new call " +
		"with INVALID_ARGUMENT (run hard_failure, 1 attempt). Root completed at 3.00; all live.",
	"S7": "Work crosses a queue, bound by its idempotency key. Trace A: gateway POST /ask cancelled at " +
		"1.00 (499); researcher publishes a job (PRODUCER 0.50-0.52) carrying key K (the queue is reached over HTTP and " +
		"the PRODUCER span captures its Idempotency-Key header). Trace B: CONSUMER (researcher's job worker) linked to that PRODUCER, detached itself; chat gpt-4o " +
		"with Idempotency-Key K 2.00-2.50 -> 429, 3.50-5.50 -> 200 (2000/500). Both attempts bound by K to A's root: " +
		"started_after_gone, run delivered_to_nobody (2 attempts), orphaned tokens 2000 + 500, orphaned cost 0.010 USD.",
	"S8": "S2's spans shuffled and split into six batches, the root arriving last. " +
		"Expected: exactly S2's verdicts and metric values.",
	"S9": "S2 without its root span (gateway POST /ask never arrives). No span live or orphaned: " +
		"all liveness unknown; every run unknown_root; spend counted under liveness unknown. The processor's own " +
		"telemetry must count the runs (or spans) whose root never arrived.",
	"S10": "Clocks disagree: planner's clock runs 80 ms ahead. Root gateway POST /ask 0.00-2.00 (200). " +
		"By the timestamps planner's SERVER span ends 2.06 (60 ms after the root) and its chat 2.03, though both really " +
		"finished before. Live under the default 250 ms tolerance; chat run success.",
	"S11": "Work meant to outlive the request. Root gateway POST /ask completes 1.00 (200) after a " +
		"PRODUCER 'send receipt' (no idempotency key, no deadline); trace B consumes it at 5.00 (CONSUMER, linked) and " +
		"calls the mail provider. Nothing orphaned: trace B is detached.",
	"S12": "The root answered, the fan-out went on. Root gateway POST /ask completes 2.00 (200) with " +
		"researcher's part only; gateway's call to critic is cancelled at 2.00; critic's gpt-4o chat 1.50-4.00 " +
		"(1000/200) succeeds and its SERVER span ends 4.05. Chat run delivered_to_nobody (ok), outlived by 2.00 s, " +
		"orphaned tokens 1000 + 200, cost 0.0045 USD.",
	"S13": "Bad input mixed with good spans. Trace 1 is good (root cancelled at 1.00, planner orphaned) " +
		"and trace 2 and 6 have good roots: these get exact verdicts, and so do trace 2's children, each bad in one attribute " +
		"only (resend_count as a string, input tokens -5, invalid UTF-8): the bad value is ignored and counted. Malformed " +
		"spans (attributes null) must carry no orphanwatch.* attribute except orphanwatch.liveness=unknown: all-zero trace ID, " +
		"end before start, zero timestamps, duplicate span ID, parent cycle. " +
		"Metrics: listed series are exact and no other series may exist, except series with liveness=\"unknown\" or " +
		"outcome=\"unknown_root\", which are not checked. The 10,000-span trace is S13HugeTrace() in Go, not in this file.",
	"S14": "A parent's cancellation is not the run noticing. gateway POST /v1/chat/completions ends 2.00 " +
		"with 499; its upstream chat gpt-4o retry loop (a child of the root) goes on: 0.10-1.00 429, 1.40-1.90 503, " +
		"3.00-3.40 503, 6.00-6.40 503, 12.00-12.30 503 -> delivered_to_nobody (error), not cancelled. researcher's " +
		"coroutine span records asyncio.CancelledError at 2.05 while its retry decorator's search-tool attempts go on " +
		"(0.20-0.60, 1.20-1.60, 2.50-2.90, 4.00-4.30, all 503) -> delivered_to_nobody (error). Reach 1, orphaned depth 2.",
	"S15": "The edge that dropped the news must not vanish. Root ends 3.00 with 499. gateway's CLIENT " +
		"call to planner records 'context canceled' and unwinds at 3.004 (live: it noticed); planner's SERVER runs to " +
		"5.00 with a chat 3.50-4.90: edge gateway->planner. gateway's agent acknowledges the cancel at 3.02 but its " +
		"execute_tool 2.50-6.00 calls search-tool (GET 2.60-5.90): edge gateway->search-tool. Reach 0, depth 1.",
	"S16": "A propagated deadline passes while the caller keeps its calls open. Root gateway POST /ask " +
		"0.00-5.00 (200) with x-envoy-expected-rq-timeout-ms 2000: deadline_exceeded, gone 2.00. gateway's call to coder " +
		"0.01-4.80 stays open; coder's SERVER 0.02-4.79 and chat gpt-4o 0.50-4.50 (1500/300) go on. Edge gateway->coder " +
		"named on coder's SERVER span though the caller's span is orphaned too. Reach 0, depth 1.",
	"S17": "Late entry is not detachment. Trace 1: the request is cancelled at 2.00; StartActivity " +
		"0.10-0.12 schedules the activity; RunActivity (coder) starts 2.50 and calls gpt-4o 2.60-5.90 (4000/900): " +
		"orphaned, dispatched for nobody. Trace 2: the root completes at 2.00; gateway's call to critic timed out at " +
		"1.10 (the caller gave up: critic's gone time is 1.10); critic works 1.50-4.00 (chat 1.60-3.90, 800/100): " +
		"orphaned, dispatched for nobody. planner's follow-up 2.50-3.20 after a clean " +
		"call 1.80-1.90 under a completed root: detached.",
	"S18": "Every parentless span is a root. web session 0.00-60.00, scheduler nightly-digest 0.50-8.00 " +
		"(chat gpt-4o-mini 4.00-7.50, 2000/300, live) and the request gateway POST /ask 1.00-3.00 (499, cancelled; " +
		"researcher to 5.00, chat gpt-4o 3.50-4.90 1000/200 orphaned) in one trace: each judged against its own root, " +
		"each root counted. A planner GET whose parent never arrives: unknown, unknown_root.",
	"S19": "Cancellations of more languages, and a tool call. Trace 1: root cancelled at 2.00; planner " +
		"(kotlinx JobCancellationException), coder (Swift CancellationError) and critic (tokio 'task 7 was cancelled') " +
		"stop their search loops and end at 2.60: live, runs cancelled, reach 1. Trace 2: Vercel AI SDK " +
		"ai.generateText repeats doGenerate's 412/27 (counted once; spend.repeated on the root); ai.toolCall 1.01-1.18 " +
		"after the root's end at 1.00: orphaned work, 0.17 s.",
	"S20": "Queue redelivery is one run. web POST /orders 0.00-0.50 publishes message m-20-1; " +
		"fulfilment's deliveries of it at 1.00-2.00 (commit lost) and 30.00-31.00 (new trace, same messaging.message.id) " +
		"are attempts 1 and 2 of one run, success, its outcome on the first delivery (the first that succeeded); detached. billing's deliveries of payments/3/42 (Kafka partition and " +
		"offset, no id) 2.00-3.00 CommitFailedException and 33.00-34.00 ok: one run of 2, success; offset 43: a run of 1.",
	"S21": "Hedged tries are one run. Root 0.00-3.00 (200). planner's gRPC hedge: try 1 0.10-1.20 " +
		"CANCELLED by its client when try 2 (grpc-previous-rpc-attempts 1) 0.60-1.19 succeeds: one run of 2, success. " +
		"coder's GET search-tool 0.20-0.90 200 and its twin 0.40-0.91 cancelled at the success: one run of 2, success. " +
		"critic's two GETs 0.30-0.80 and 0.35-0.85, both 200: parallel work, two runs of one.",
	"S22": "A SERVER span is never an attempt; arrays of one value. Root 0.00-2.00 (200). planner's tool " +
		"call POST search-tool 0.10-1.00: the tool server's SERVER span (gen_ai.tool.name web_search) makes no run. " +
		"planner's calls to ranker with x-envoy-attempt-count [\"2\"] 1.10-1.30 503 and [\"3\"] 1.40-1.60 200: one run " +
		"of 2, attempts 2 and 3, success.",
	"S23": "A proxy that saw its client leave. Envoy ingress (root) 0.00-2.00 with response_flags DC, " +
		"http.status_code 0, error true: cancelled. Its upstream request 0.01-2.00, status 0 with error: a cancelled " +
		"run. api's SERVER 0.02-5.00 orphaned (caller envoy); its chat gpt-4o 2.50-4.90 started after gone: " +
		"delivered_to_nobody. Reach 0, depth 1.",
	"S24": "Request-reply over a queue. Trace 1: root 0.00-2.00 (499); api's handler 0.02-5.00 " +
		"awaits its task (PRODUCER 0.10-0.12, worker CONSUMER 0.30-4.90 a child of it): the task is the request's work, " +
		"orphaned; its chat gpt-4o 2.50-4.80 delivered to nobody. Trace 2: api answers at 0.50, the worker's export " +
		"1.00-3.00 (chat 1.10-2.90) is fire and forget: detached.",
	"S25": "A loop outlives its parent. Root 0.00-3.00 (499); gateway's call to researcher cancelled. " +
		"researcher's handler 0.02-3.00 returns 504 while its background loop keeps trying search-tool: 0.10-1.00, " +
		"1.50-2.40, 2.90-4.00 (in flight at the handler's end), 5.00-5.80 (all 503), 7.00-7.60 (200): one run of five, " +
		"delivered_to_nobody (result ok) on the first that succeeded; not one run per attempt.",
	"S26": "A keyed re-send after a success. Trace 1: api POST /checkout 0.00-2.00; POST payments " +
		"(Idempotency-Key ord-26) 0.10-1.90 200. Trace 2, the client re-sending: POST /checkout 30.00-31.00; POST payments " +
		"with the same key 30.10-30.90 200. One run of 2 across the traces, success, its outcome on the first that succeeded.",
	"S27": "Hedged tries, the loser cancelled long before the winner finished. Root 0.00-3.00 (200). " +
		"planner's GET ranker /rank 0.10-0.40 cancelled by its client (context canceled) once its hedge 0.30-1.80 had " +
		"started; the hedge succeeds: one run of 2, success, on the winner.",
	"S28": "Two endpoints of one host are two operations. Root 0.00-2.00 (200). critic's GET search-tool " +
		"/search 0.10-0.50 503, then GET search-tool /fetch 0.60-0.90 200: two runs of one (retryable_failure, success), " +
		"not one run of two.",
	"S29": "The loop's span ended between two tries. Root 0.00-3.00 (499); researcher's handler " +
		"0.02-3.00 (504) ends during a backoff: tries 0.10-1.00, 1.50-2.40 (503) before it are one run, retryable_failure; " +
		"tries 4.00-4.50 (503) and 5.50-6.00 (200) after it a new run of 2, delivered_to_nobody.",
	"S30": "An SDK's per-try timeout. Root gateway 0.00-30.00 (200). gateway's call to researcher: " +
		"try 1 0.10-10.10 times out (httpx.ReadTimeout), try 2 10.60-20.60 (resend_count 1) 200: one run of 2, success. " +
		"researcher's server of try 1 works on 0.20-25.00: its caller gave up at 10.10, so it is orphaned " +
		"(caller.service gateway), its chat gpt-4o 12.00-24.50 delivered_to_nobody though the root still waits; its chat " +
		"gpt-4o-mini 0.50-9.00 and everything of try 2 live.",
	"S31": "An asynchronous API hands its work over. api POST /reports 0.00-0.30 answers 202 after " +
		"queuing two jobs with keys K1 and K2. The reports job (CONSUMER 1.00-46.00, end reason detached; chat gpt-4o " +
		"2.00-45.00 with K1) is bound to a request that completed: judged only by the deadline it carries, none: live, " +
		"success. The exports job's chat gpt-4o-mini 6.00-26.00 carries K2 and a deadline of 20.00: orphaned against " +
		"it, delivered_to_nobody.",
	"S32": "A redelivered Kafka message is one run, not bound to the producer. gateway POST /orders " +
		"0.00-1.00 cancelled (499) after send orders 0.10-0.12 (partition 2, offset 1017). billing's deliveries, children " +
		"of the PRODUCER: 2.00-3.00 CommitFailedException, redelivered 62.00-63.00 ok: one run of 2, success, detached, " +
		"not judged against the cancelled request.",
	"S33": "The roots of detached work end 'detached'. billing's parentless CONSUMER process invoices " +
		"0.00-4.00 (status ERROR) with chat gpt-4o-mini 0.20-1.20 503 and 1.50-3.80 200: end reason detached, run " +
		"success of 2. scheduler's linked root digest batch 0.00-2.00 with chat gpt-4o 0.10-1.90: end reason detached, " +
		"success.",
	"S34": "Timeouts of common SDKs are retryable. Root gateway 0.00-12.00 (200). researcher's chat " +
		"gpt-4o times out three times (openai.APITimeoutError): one run of 3, retryable_failure. coder's GET search-tool " +
		"fails with 'dial tcp ...: i/o timeout', its retry succeeds: one run of 2, success. All live.",
}
