package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Propagation shows where cancellation stops travelling: the service edges that drop it, how
// long orphaned work outlives its root, how many hops deep the news travels against how deep
// orphaned work goes, and the attempts dispatched after the gone time, with exemplars that
// link to the traces.
func Propagation() (dashboard.Dashboard, error) {
	var id ids
	d := base("orphanwatch-propagation", "orphanwatch / cancellation propagation",
		"Where cancellation stops travelling down the fan-out: edges that drop it, how long orphans outlive their roots, attempts dispatched after the gone time. Points on the graphs are exemplars: click one to open its trace.").
		WithVariable(labelVariable("service", "service_name", "orphanwatch_attempts_total", "Service"))

	section(d, &id, "Edges that drop cancellation",
		graph(id.next(), "Edges that drop cancellation (per minute)",
			"Requests per minute that a callee kept working on after its caller (itself live) had stopped: the caller -> callee edge the cancellation did not cross. Exemplars link to the traces.",
			"short", 12, 9,
			query("A", `sum by (caller_service, callee_service) (rate(orphanwatch_unpropagated_total{callee_service=~"$service"}[$__rate_interval])) * 60`, "{{caller_service}} -> {{callee_service}}").Exemplar(true)),
		bars(id.next(), "Top edges dropping cancellation",
			"Edges by the number of requests that kept running in the callee after the caller had gone, over the dashboard's time range.", "short", 12, 9,
			instant("A", `topk(10, sum by (caller_service, callee_service) (increase(orphanwatch_unpropagated_total{callee_service=~"$service"}[$__range])))`, "{{caller_service}} -> {{callee_service}}")),
	)

	section(d, &id, "How long orphans outlive their roots",
		heat(id.next(), "Time orphaned spans outlive their root",
			"Distribution of how long orphaned spans ran past their root request's gone time (its end or deadline). Exemplars link to the traces.", 12, 9,
			query("A", `sum by (le) (rate(orphanwatch_outlive_seconds_bucket{`+svc+`}[$__rate_interval]))`, "{{le}}").
				Format("heatmap").Exemplar(true)),
		graph(id.next(), "Outlive time quantiles",
			"Median, 90th and 99th percentile of how long orphaned spans outlived their root.",
			"s", 12, 9,
			query("A", `histogram_quantile(0.5, sum by (le) (rate(orphanwatch_outlive_seconds_bucket{`+svc+`}[$__rate_interval])))`, "p50"),
			query("B", `histogram_quantile(0.9, sum by (le) (rate(orphanwatch_outlive_seconds_bucket{`+svc+`}[$__rate_interval])))`, "p90"),
			query("C", `histogram_quantile(0.99, sum by (le) (rate(orphanwatch_outlive_seconds_bucket{`+svc+`}[$__rate_interval])))`, "p99").Exemplar(true)),
		graph(id.next(), "Mean outlive time by service",
			"Average time orphaned spans of each service ran past their root's gone time.",
			"s", 12, 8,
			query("A", `sum by (service_name) (rate(orphanwatch_outlive_seconds_sum{`+svc+`}[$__rate_interval]))
/
sum by (service_name) (rate(orphanwatch_outlive_seconds_count{`+svc+`}[$__rate_interval]))`, "{{service_name}}")),
		stacked(graph(id.next(), "Root requests by end reason (per minute)",
			"How root requests end: completed, cancelled (the caller went away), deadline_exceeded, error. Cancellations and deadlines are what should travel down. The roots of detached work (end_reason detached: consumers, linked traces) are no requests and are left out.",
			"short", 12, 8,
			query("A", `sum by (end_reason) (rate(orphanwatch_roots_total{`+svc+`,end_reason!="detached"}[$__rate_interval])) * 60`, "{{end_reason}}"))),
	)

	section(d, &id, "How deep the news travels",
		graph(id.next(), "Cancellation reach vs orphaned depth (average, hops)",
			"For requests whose caller left or whose deadline passed, by root service: how many service hops down the fan-out the cancellation travelled before something noticed it (reach), against the deepest hop where work went on for nobody (orphaned depth). Healthy: reach at the full depth, orphaned depth 0. Orphaned depth above reach: the news stops before the work does.",
			"short", 12, 8,
			query("A", `sum by (service_name) (rate(orphanwatch_cancel_reach_hops_sum{`+svc+`}[$__rate_interval]))
/
sum by (service_name) (rate(orphanwatch_cancel_reach_hops_count{`+svc+`}[$__rate_interval]))`, "{{service_name}} reach"),
			query("B", `sum by (service_name) (rate(orphanwatch_orphaned_depth_hops_sum{`+svc+`}[$__rate_interval]))
/
sum by (service_name) (rate(orphanwatch_orphaned_depth_hops_count{`+svc+`}[$__rate_interval]))`, "{{service_name}} orphaned depth")),
		graph(id.next(), "Cancellation reach vs orphaned depth (p90, hops)",
			"90th percentile, by root service, of the cancellation's reach and of the orphaned depth of abandoned requests, in service hops (histogram buckets at 0, 1, 2, 3, 4, 5, 6, 8, 10 hops).",
			"short", 12, 8,
			query("A", `histogram_quantile(0.9, sum by (le, service_name) (rate(orphanwatch_cancel_reach_hops_bucket{`+svc+`}[$__rate_interval])))`, "{{service_name}} reach p90"),
			query("B", `histogram_quantile(0.9, sum by (le, service_name) (rate(orphanwatch_orphaned_depth_hops_bucket{`+svc+`}[$__rate_interval])))`, "{{service_name}} orphaned depth p90")),
	)

	section(d, &id, "Attempts after the gone time",
		graph(id.next(), "Attempts dispatched after the gone time (per minute)",
			"Attempts (calls, retries, model calls) started after their root request had ended or passed its deadline: dispatched for nobody. Exemplars link to the traces.",
			"short", 12, 8,
			query("A", `sum by (service_name, operation) (rate(orphanwatch_attempts_total{liveness="started_after_gone", `+svc+`}[$__rate_interval])) * 60`, "{{service_name}} {{operation}}").Exemplar(true)),
		stacked(graph(id.next(), "Attempts by liveness (per minute)",
			"All attempts: live, outlived_root (started in time, ended after the gone time), started_after_gone, unknown, detached.",
			"short", 12, 8,
			query("A", `sum by (liveness) (rate(orphanwatch_attempts_total{`+svc+`}[$__rate_interval])) * 60`, "{{liveness}}"))),
		bars(id.next(), "Top operations dispatched after the gone time",
			"Operations by attempts started after their root had gone, over the dashboard's time range.", "short", 24, 8,
			instant("A", `topk(10, sum by (service_name, operation) (increase(orphanwatch_attempts_total{liveness="started_after_gone", `+svc+`}[$__range])))`, "{{service_name}} {{operation}}")),
	)

	return d.Build()
}
