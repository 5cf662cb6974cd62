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

// PipelineHealth is the processor's and exporter's own health: throughput, refused spans, state
// held and evicted, decision wait, and why spans get no verdict.
func PipelineHealth() (dashboard.Dashboard, error) {
	var id ids
	d := base("orphanwatch-pipeline", "orphanwatch / pipeline health",
		"The orphan processor's and the orphanmetrics exporter's own health, from the collector's telemetry (otelcol_*) and the exporter.").
		WithVariable(labelVariable("instance", "instance", "otelcol_processor_orphan_traces_held", "Collector"))

	section(d, &id, "Throughput",
		graph(id.next(), "Spans per second",
			"Spans accepted by the receivers, decided by the orphan processor, and judged orphaned.",
			"short", 12, 8,
			query("A", `sum(rate(`+counter("otelcol_receiver_accepted_spans")+`[$__rate_interval]))`, "accepted"),
			query("B", `sum(rate(`+counter("otelcol_processor_orphan_spans_processed")+`[$__rate_interval]))`, "decided"),
			query("C", `sum(rate(`+counter("otelcol_processor_orphan_spans_orphaned")+`[$__rate_interval]))`, "orphaned")),
		graph(id.next(), "Spans refused or failed by the receivers (per second)",
			"Spans the receivers refused (usually the memory_limiter pushing back) or failed. Anything above zero is data lost or delayed.",
			"short", 12, 8,
			query("A", `sum by (receiver) (rate(`+counter("otelcol_receiver_refused_spans")+`[$__rate_interval]))`, "refused {{receiver}}"),
			query("B", `sum by (receiver) (rate(`+counter("otelcol_receiver_failed_spans")+`[$__rate_interval]))`, "failed {{receiver}}")),
	)

	section(d, &id, "State",
		graph(id.next(), "Held while waiting for a decision",
			"Traces and spans the processor holds: until decision_wait_after_root after their root arrived, at most decision_wait; abandoned roots until decision_wait after they arrived.",
			"short", 8, 8,
			query("A", `sum(otelcol_processor_orphan_traces_held{`+inst+`})`, "traces"),
			query("B", `sum(otelcol_processor_orphan_spans_held{`+inst+`})`, "spans")),
		graph(id.next(), "Verdicts owed and records kept",
			"Records of spans that left before their verdict was final (root not come, chain incomplete), runs left open waiting for a further attempt, and records of released spans kept for their trace's later spans (bounded by limits.max_pending_spans, max_open_runs, max_context_spans).",
			"short", 8, 8,
			query("A", `sum(otelcol_processor_orphan_pending_spans{`+inst+`})`, "pending spans"),
			query("B", `sum(otelcol_processor_orphan_open_runs{`+inst+`})`, "open runs"),
			query("C", `sum(otelcol_processor_orphan_context_spans{`+inst+`})`, "context spans")),
		graph(id.next(), "Deferred and carrier spans (per minute)",
			"Spans that left with their verdict deferred (carried later as orphanwatch.verdict events), and carrier spans made when no span of a trace passed any more (a root that never came within max_request_duration, a run closed by run_timeout).",
			"short", 8, 8,
			query("A", `sum(rate(`+counter("otelcol_processor_orphan_spans_deferred")+`[$__rate_interval])) * 60`, "deferred spans"),
			query("B", `sum(rate(`+counter("otelcol_processor_orphan_carrier_spans")+`[$__rate_interval])) * 60`, "carrier spans")).
			NoValue("0"),
		graph(id.next(), "Cross-trace memory",
			"Root records kept for late spans and key-bound traces, and idempotency-key hashes remembered.",
			"short", 8, 8,
			query("A", `sum(otelcol_processor_orphan_root_records{`+inst+`})`, "root records"),
			query("B", `sum(otelcol_processor_orphan_idempotency_keys{`+inst+`})`, "idempotency keys")),
		graph(id.next(), "Evictions per minute by state",
			"State evicted to stay within limits: traces and spans_per_trace are decided early; root_records and idempotency_keys are forgotten; pending_spans and request_duration judged without their root; open_runs closed early; context_spans forgotten (a cache's normal churn). Above zero (but context_spans), verdicts degrade.",
			"short", 8, 8,
			query("A", `sum by (state) (rate(`+counter("otelcol_processor_orphan_evictions")+`[$__rate_interval])) * 60`, "{{state}}")).
			NoValue("0"),
		graph(id.next(), "Decision wait",
			"Time from a trace's first span to its decision: decision_wait, shorter when a limit forces an early decision.",
			"s", 12, 8,
			query("A", `histogram_quantile(0.5, sum by (le) (rate(`+buckets("otelcol_processor_orphan_decision_wait", "seconds")+`[$__rate_interval])))`, "p50"),
			query("B", `histogram_quantile(0.99, sum by (le) (rate(`+buckets("otelcol_processor_orphan_decision_wait", "seconds")+`[$__rate_interval])))`, "p99")),
		graph(id.next(), "Late spans and missing roots (per minute)",
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
			query("A", `sum by (reason) (rate(`+counter("otelcol_processor_orphan_spans_without_verdict")+`[$__rate_interval])) * 60`, "{{reason}}")).
			NoValue("0")),
		stacked(graph(id.next(), "Attribute values ignored by reason (per minute)",
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
