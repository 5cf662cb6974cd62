package record

// Names of the span attributes that carry verdicts (docs/verdicts.md). The `orphanwatch.`
// prefix marks the project's own attributes, as the OpenTelemetry attribute naming rules ask
// of names outside the semantic conventions.
const (
	AttrLiveness         = "orphanwatch.liveness"
	AttrStartedAfterGone = "orphanwatch.started_after_gone"
	AttrAfterGone        = "orphanwatch.after_gone"
	AttrDetached         = "orphanwatch.detached"
	AttrAttempt          = "orphanwatch.attempt"
	AttrRunOutcome       = "orphanwatch.run.outcome"
	AttrRunAttempts      = "orphanwatch.run.attempts"
	AttrRunResult        = "orphanwatch.run.result"
	AttrRootEndReason    = "orphanwatch.root.end_reason"
	AttrCallerService    = "orphanwatch.caller.service"
	AttrSpendModel       = "orphanwatch.spend.model"
	AttrSpendInput       = "orphanwatch.spend.input_tokens"
	AttrSpendOutput      = "orphanwatch.spend.output_tokens"
	AttrSpendCost        = "orphanwatch.spend.cost"
	AttrSpendRepeated    = "orphanwatch.spend.repeated"
	AttrSpendNested      = "orphanwatch.spend.nested"
	AttrCancelReachHops  = "orphanwatch.cancel.reach_hops"
	AttrOrphanedDepth    = "orphanwatch.orphaned.depth_hops"
)

// Verdicts that could not be written on their own span (time model v2, docs/verdicts.md "When
// verdicts are decided"). A span that leaves the processor before its verdict is final (its
// root had not arrived) carries AttrDeferred = true and no other verdict attribute; its final
// verdict comes later as a span event named EventVerdict on another span of its trace (its
// root when it can, else a CarrierSpanName span made for the purpose). So does the outcome of
// a run whose final attempt had already left when the run was known to be over.
//
// An EventVerdict event's timestamp is the end time of the span it is for; its attributes are
// the verdict attributes above as they would have been written on that span (for a run's
// outcome alone: AttrRunOutcome, AttrRunAttempts, AttrRunResult), plus:
//   - AttrEventTraceID, AttrEventSpanID: the span's IDs, lowercase hex (32 and 16 digits);
//   - AttrEventSpanName, AttrEventSpanKind (internal, server, client, producer, consumer,
//     unspecified), AttrEventStart (unix nanoseconds, int);
//   - service.name: the span's service;
//   - the span's own attributes named in OperationAttributes, copied, so that a reader can
//     name its operation as it would have from the span; in a whole verdict also those named in
//     UsageAttributes (token usage a reader may count from a span that is no model call of the
//     processor's, as it would have from the span), never in a part.
const (
	AttrDeferred      = "orphanwatch.verdict.deferred"
	EventVerdict      = "orphanwatch.verdict"
	AttrEventTraceID  = "orphanwatch.span.trace_id"
	AttrEventSpanID   = "orphanwatch.span.span_id"
	AttrEventSpanName = "orphanwatch.span.name"
	AttrEventSpanKind = "orphanwatch.span.kind"
	AttrEventStart    = "orphanwatch.span.start_time_unix_nano"
	// CarrierSpanName names a span the processor makes only to carry EventVerdict events when
	// no span of their trace passes any more (a root that never came, a run closed by its
	// timeout). It carries AttrCarrier = true, is INTERNAL, starts and ends when it was made.
	CarrierSpanName = "orphanwatch.verdicts"
	AttrCarrier     = "orphanwatch.carrier"
)

// OperationAttributes are the span attributes a carried verdict copies from its span: those a
// metrics reader names a span's operation by (GenAI, RPC, messaging and HTTP semantic
// conventions).
var OperationAttributes = []string{
	"gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.agent.name",
	"gen_ai.request.model", "gen_ai.response.model",
	"rpc.system", "rpc.service", "rpc.method",
	"messaging.operation.name", "messaging.operation.type", "messaging.destination.name",
	"http.request.method", "http.method", "url.template", "http.route",
	"server.address", "server.port", "net.peer.name", "net.peer.port",
	"url.full", "http.url", "url.scheme",
}

// UsageAttributes are the token-usage attributes a whole carried verdict copies from its span
// (GenAI semantic conventions).
var UsageAttributes = []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"}
