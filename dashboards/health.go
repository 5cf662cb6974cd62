package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Selector of the health dashboard's instance variable (the collector's telemetry endpoint).
const inst = `instance=~"$instance"`

// counter selects a counter of the collector's own telemetry on the dashboard's instances,
// under both names it has in Prometheus: scraped from the collector's endpoint (name, no
// _total) and pushed as OTLP (config/push), translated by the OTLP-to-Prometheus rules
// (name_total). Gauges keep their name both ways.
func counter(name string) string {
	return `{__name__=~"` + name + `(_total)?", ` + inst + `}`
}

// buckets selects the buckets of a histogram of the collector's own telemetry, scraped
// (name_bucket) or pushed as OTLP (name_<unit>_bucket, unit the suffix of its unit: "seconds"
// for s).
func buckets(name, unit string) string {
	return `{__name__=~"` + name + `(_` + unit + `)?_bucket", ` + inst + `}`
}

// kafkaLag selects the kafka receiver's offset lag gauge (unit "1") on the dashboard's
// instances: scraped under its name, pushed as OTLP with the _ratio the OTLP-to-Prometheus
// rules give a gauge of unit 1.
const kafkaLag = `{__name__=~"otelcol_kafka_receiver_offset_lag(_ratio)?", ` + inst + `}`

// decider selects a metric of the component deciding the verdicts on the dashboard's
// instances, whichever the mode: the orphan processor's otelcol_processor_orphan_<proc>
// (annotate mode) or the observing orphanmetrics exporter's or connector's
// otelcol_{exporter,connector}_orphanmetrics_<obs> (observe mode, the default), scraped or
// pushed (counters with _total). extra are further matchers, e.g. `state=~"waiting|"` (a
// label only one side has: empty matches the other).
func decider(proc, obs string, extra ...string) string {
	sel := `{__name__=~"(otelcol_processor_orphan_` + proc + `|otelcol_(exporter|connector)_orphanmetrics_` + obs + `)(_total)?", ` + inst
	for _, m := range extra {
		sel += ", " + m
	}
	return sel + "}"
}

// deciderBuckets selects the buckets of a histogram of the deciding component (as decider),
// scraped (name_bucket) or pushed (name_seconds_bucket).
func deciderBuckets(proc, obs string) string {
	return `{__name__=~"(otelcol_processor_orphan_` + proc + `|otelcol_(exporter|connector)_orphanmetrics_` + obs + `)(_seconds)?_bucket", ` + inst + `}`
}

// AnnotateOnly ends the title of a panel, or the legend of a query, that has data only in
// annotate mode (the orphan processor's telemetry); ObserveOnly one that has data only in
// observe mode (the observing exporter's or connector's). Every other query has data in both.
const (
	AnnotateOnly = " (annotate mode)"
	ObserveOnly  = " (observe mode)"
)

// PipelineHealth is the own health of the component deciding the verdicts (the orphanmetrics
// exporter or connector in observe mode, the orphan processor in annotate mode) and of the
// exporter: throughput, refused spans, state held and evicted, verdict latency, and why spans
// get no verdict. Panels and queries of one mode only say so in their title or legend.
func PipelineHealth() (dashboard.Dashboard, error) {
	var id ids
	d := base("orphanwatch-pipeline", "orphanwatch / pipeline health",
		"The own health of the component deciding the verdicts (the orphanmetrics exporter or connector in observe mode, the orphan processor in annotate mode) and of the exporter, from the collector's telemetry (otelcol_*) and the exporter.").
		WithVariable(labelVariable("instance", "instance", `{__name__=~"otelcol_processor_orphan_traces_held|otelcol_(exporter|connector)_orphanmetrics_traces"}`, "Collector"))

	section(d, &id, "Throughput",
		graph(id.next(), "Spans per second",
			"Spans accepted by the receivers, decided (by the observing exporter or connector, or by the orphan processor), judged orphaned (annotate mode: the processor counts them), and sent on by the collector's exporters (observe mode: the spans go to the trace store's exporter at once).",
			"short", 12, 8,
			query("A", `sum(rate(`+counter("otelcol_receiver_accepted_spans")+`[$__rate_interval]))`, "accepted"),
			query("B", `sum(rate(`+decider("spans_processed", "spans_judged")+`[$__rate_interval]))`, "decided"),
			query("C", `sum(rate(`+counter("otelcol_processor_orphan_spans_orphaned")+`[$__rate_interval]))`, "orphaned"+AnnotateOnly),
			query("D", `sum(rate(`+counter("otelcol_exporter_sent_spans")+`[$__rate_interval]))`, "sent by the exporters")),
		graph(id.next(), "Spans refused or failed by the receivers (per second)",
			"Spans the receivers refused (usually the memory_limiter pushing back) or failed. Anything above zero is data lost or delayed.",
			"short", 12, 8,
			query("A", `sum by (receiver) (rate(`+counter("otelcol_receiver_refused_spans")+`[$__rate_interval]))`, "refused {{receiver}}"),
			query("B", `sum by (receiver) (rate(`+counter("otelcol_receiver_failed_spans")+`[$__rate_interval]))`, "failed {{receiver}}")),
	)

	section(d, &id, "State",
		graph(id.next(), "Held while waiting for a decision",
			"Traces and spans waiting for their decision: until decision_wait_after_root after their root arrived, at most decision_wait. Observe mode keeps a compact record per span (records, state waiting); annotate mode holds the spans themselves (the processor's spans held).",
			"short", 8, 8,
			query("A", `sum(`+decider("traces_held", "traces")+`)`, "traces"),
			query("B", `sum(`+decider("spans_held", "records", `state=~"waiting|"`)+`)`, "spans")),
		graph(id.next(), "Verdicts owed and records kept",
			"Records of spans whose verdict was not final when decided (root not come, chain incomplete), runs left open waiting for a further attempt, records kept for their trace's later spans (bounded by limits.max_pending_spans, max_open_runs, max_context_spans), and abandoned roots whose verdict is held until decision_wait after they arrived (observe mode).",
			"short", 8, 8,
			query("A", `sum(`+decider("pending_spans", "records", `state=~"pending|"`)+`)`, "pending spans"),
			query("B", `sum(`+decider("open_runs", "open_runs")+`)`, "open runs"),
			query("C", `sum(`+decider("context_spans", "records", `state=~"kept|"`)+`)`, "context spans"),
			query("D", `sum({__name__=~"otelcol_(exporter|connector)_orphanmetrics_held_roots", `+inst+`})`, "held roots"+ObserveOnly)),
		graph(id.next(), "Deferred and carrier spans (per minute)"+AnnotateOnly,
			"Spans that left with their verdict deferred (carried later as orphanwatch.verdict events), and carrier spans made when no span of a trace passed any more (a root that never came within max_request_duration, a run closed by run_timeout).",
			"short", 8, 8,
			query("A", `sum(rate(`+counter("otelcol_processor_orphan_spans_deferred")+`[$__rate_interval])) * 60`, "deferred spans"),
			query("B", `sum(rate(`+counter("otelcol_processor_orphan_carrier_spans")+`[$__rate_interval])) * 60`, "carrier spans")).
			NoValue("0"),
		graph(id.next(), "Cross-trace memory"+AnnotateOnly,
			"Root records kept for late spans and key-bound traces, and idempotency-key hashes remembered.",
			"short", 8, 8,
			query("A", `sum(otelcol_processor_orphan_root_records{`+inst+`})`, "root records"),
			query("B", `sum(otelcol_processor_orphan_idempotency_keys{`+inst+`})`, "idempotency keys")),
		graph(id.next(), "Evictions per minute by state",
			"State evicted to stay within limits: traces and spans_per_trace are decided early; root_records and idempotency_keys are forgotten; pending_spans and request_duration judged without their root; open_runs closed early; context_spans forgotten (a cache's normal churn). Above zero (but context_spans), verdicts degrade.",
			"short", 8, 8,
			query("A", `sum by (state) (rate(`+decider("evictions", "evictions")+`[$__rate_interval])) * 60`, "{{state}}")).
			NoValue("0"),
		graph(id.next(), "Verdict latency",
			"Time from a request's root span arriving to the last verdict counted for it, observed once nothing more can come for the request: decision_wait_after_root at best; decision_wait, a run's timeout or a held root's wait when the request needs them.",
			"s", 12, 8,
			query("A", `histogram_quantile(0.5, sum by (le) (rate(`+deciderBuckets("verdict_latency", "verdict_latency")+`[$__rate_interval])))`, "p50"),
			query("B", `histogram_quantile(0.99, sum by (le) (rate(`+deciderBuckets("verdict_latency", "verdict_latency")+`[$__rate_interval])))`, "p99")),
		graph(id.next(), "Decision wait"+AnnotateOnly,
			"Time from a trace's first span to its decision: decision_wait, shorter when a limit forces an early decision.",
			"s", 12, 8,
			query("A", `histogram_quantile(0.5, sum by (le) (rate(`+buckets("otelcol_processor_orphan_decision_wait", "seconds")+`[$__rate_interval])))`, "p50"),
			query("B", `histogram_quantile(0.99, sum by (le) (rate(`+buckets("otelcol_processor_orphan_decision_wait", "seconds")+`[$__rate_interval])))`, "p99")),
		graph(id.next(), "Late spans and missing roots (per minute)"+AnnotateOnly,
			"Spans that arrived after their trace was decided (judged against the kept root record), traces decided without their root, and runs given unknown_root. Many of them: raise decision_wait, or keep whole traces together.",
			"short", 12, 8,
			query("A", `sum(rate(`+counter("otelcol_processor_orphan_spans_late")+`[$__rate_interval])) * 60`, "late spans"),
			query("B", `sum(rate(`+counter("otelcol_processor_orphan_traces_root_missing")+`[$__rate_interval])) * 60`, "traces without root"),
			query("C", `sum(rate(`+counter("otelcol_processor_orphan_runs_unknown_root")+`[$__rate_interval])) * 60`, "runs with unknown root")).
			NoValue("0"),
	)

	section(d, &id, "Verdict quality",
		stacked(graph(id.next(), "Spans without a verdict by reason (per minute)",
			"Spans that got no verdict or only liveness unknown: root_missing, malformed IDs or times, duplicates, parent cycles.",
			"short", 12, 8,
			query("A", `sum by (reason) (rate(`+decider("spans_without_verdict", "spans_without_verdict")+`[$__rate_interval])) * 60`, "{{reason}}")).
			NoValue("0")),
		stacked(graph(id.next(), "Attribute values ignored by reason (per minute)"+AnnotateOnly,
			"Attribute values present but unusable (wrong type, invalid token count, malformed deadline): ignored as if absent.",
			"short", 12, 8,
			query("A", `sum by (reason) (rate(`+counter("otelcol_processor_orphan_attributes_ignored")+`[$__rate_interval])) * 60`, "{{reason}}")).
			NoValue("0")),
	)

	section(d, &id, "Exporter",
		graph(id.next(), "Label values folded into other (per minute)",
			"New label values beyond the exporter's label_limits, exported as \"other\". Above zero: fix the instrumentation or raise the limit.",
			"short", 12, 8,
			query("A", `sum by (label) (rate(orphanwatch_label_overflow_total[$__rate_interval])) * 60`, "{{label}}")),
		graph(id.next(), "Spans skipped by the exporter (per minute)",
			"Spans whose orphanwatch.* attributes or times were malformed, by reason; they are missing from the metrics that need them.",
			"short", 12, 8,
			query("A", `sum by (reason) (rate(orphanwatch_spans_skipped_total[$__rate_interval])) * 60`, "{{reason}}")),
		graph(id.next(), "Series folded into the overflow series (per minute)",
			"New label combinations of a counter beyond the exporter's series_limit, counted in its overflow series (labels from span data \"other\", outcome and liveness kept). Above zero: raise series_limit or lower label_limits.",
			"short", 12, 8,
			query("A", `sum by (metric) (rate(orphanwatch_series_overflow_total[$__rate_interval])) * 60`, "{{metric}}")),
	)

	// The tier's members (config/scaleout/member.yaml) read their spans from Kafka: the kafka
	// receiver's own telemetry (contrib kafkareceiver, documentation.md), per partition.
	section(d, &id, "Kafka (scale-out members)",
		graph(id.next(), "Kafka consumer lag (seconds behind)",
			"How long the spans of a member's partitions wait in Kafka before the member reads them: the records not yet read (otelcol_kafka_receiver_offset_lag) over the rate the member reads them. Steady is fine; rising means the member does not keep up (alert OrphanwatchKafkaLagHigh). Only members with a kafka receiver show here.",
			"s", 12, 8,
			query("A", `sum by (instance, topic) (`+kafkaLag+`) / sum by (instance, topic) (rate(`+counter("otelcol_kafka_receiver_records")+`[$__rate_interval]))`, "{{instance}} {{topic}}")),
		graph(id.next(), "Kafka consumer lag (records)",
			"Records of the span topic not yet read, per member and partition, as the kafka receiver last saw them after a fetch. The sum over the tier is the group's lag (kafka-consumer-groups.sh --describe).",
			"short", 12, 8,
			query("A", `sum by (instance, partition) (`+kafkaLag+`)`, "{{instance}} partition {{partition}}")),
	)

	return d.Build()
}
