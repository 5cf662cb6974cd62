package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
)

// Selector of the spend dashboard's service variable.
const svc = `service_name=~"$service"`

// OrphanedSpend is the overview: what the fan-out spends on callers that had gone, how runs end,
// and which services and models spend it.
func OrphanedSpend() (dashboard.Dashboard, error) {
	var id ids
	d := base("orphanwatch-spend", "orphanwatch / orphaned spend",
		"Money, tokens and time spent on requests whose caller had already gone, and how retry runs end. From the orphanmetrics exporter.").
		WithVariable(labelVariable("service", "service_name", "orphanwatch_runs_total", "Service"))

	section(d, &id, "Now",
		bigNumber(id.next(), "Orphaned cost per hour",
			"USD per hour spent on model calls that ended after their caller had gone.", "currencyUSD",
			query("A", `sum(rate(orphanwatch_spend_cost_usd_total{liveness="orphaned", `+svc+`}[$__rate_interval])) * 3600`, "orphaned")),
		bigNumber(id.next(), "Share of cost orphaned",
			"Orphaned cost divided by all model cost.", "percentunit",
			query("A", `sum(rate(orphanwatch_spend_cost_usd_total{liveness="orphaned", `+svc+`}[$__rate_interval]))
/
sum(rate(orphanwatch_spend_cost_usd_total{`+svc+`}[$__rate_interval]))`, "orphaned share")),
		bigNumber(id.next(), "Share of tokens orphaned",
			"Input and output tokens of orphaned model calls divided by all tokens.", "percentunit",
			query("A", `sum(rate(orphanwatch_spend_tokens_total{liveness="orphaned", `+svc+`}[$__rate_interval]))
/
sum(rate(orphanwatch_spend_tokens_total{`+svc+`}[$__rate_interval]))`, "orphaned share")),
		bigNumber(id.next(), "Runs delivered to nobody",
			"Share of runs (an operation and its retries) that finished after the caller had gone without noticing it. Runs whose root was never seen are left out.", "percentunit",
			query("A", `sum(rate(orphanwatch_runs_total{outcome="delivered_to_nobody", `+svc+`}[$__rate_interval]))
/
sum(rate(orphanwatch_runs_total{outcome!="unknown_root", `+svc+`}[$__rate_interval]))`, "delivered to nobody")),
	)

	section(d, &id, "Orphaned spend over the dashboard's time range",
		spendTable(id.next(), "Orphaned spend by service and model",
			"What was spent for callers that had gone over the dashboard's time range, per service and model: the cost of the model calls, their input and output tokens, and their number (increase over the range). Costs come from the processor's prices table or the spans' own cost.",
			instant("A", `sum by (service_name, model) (increase(orphanwatch_spend_cost_usd_total{liveness="orphaned", `+svc+`}[$__range]))`, "").Format(prometheus.PromQueryFormatTable),
			instant("B", `sum by (service_name, model) (increase(orphanwatch_spend_tokens_total{liveness="orphaned", `+svc+`}[$__range]))`, "").Format(prometheus.PromQueryFormatTable),
			instant("C", `sum by (service_name, model) (increase(orphanwatch_model_calls_total{liveness="orphaned", `+svc+`}[$__range]))`, "").Format(prometheus.PromQueryFormatTable)),
		bars(id.next(), "Runs by outcome",
			"Runs (an operation and its retries) over the dashboard's time range by how they ended: delivered_to_nobody (finished for a caller that had gone: the spend above) next to cancelled (noticed it: the good ending), success, retryable_failure, hard_failure, unknown_root.", "short", 8, 8,
			instant("A", `sum by (outcome) (increase(orphanwatch_runs_total{`+svc+`}[$__range]))`, "{{outcome}}")),
	)

	section(d, &id, "Spend over time",
		stacked(graph(id.next(), "Model cost per hour by liveness",
			"USD per hour of model calls: live (the caller still waited), orphaned (it had gone), unknown (no verdict), detached (work meant to outlive the request). Exemplars link orphaned cost to its traces.",
			"currencyUSD", 12, 8,
			query("A", `sum by (liveness) (rate(orphanwatch_spend_cost_usd_total{`+svc+`}[$__rate_interval])) * 3600`, "{{liveness}}").Exemplar(true))),
		stacked(graph(id.next(), "Tokens per hour by liveness",
			"Input and output tokens per hour of model calls, by liveness.",
			"short", 12, 8,
			query("A", `sum by (liveness, direction) (rate(orphanwatch_spend_tokens_total{`+svc+`}[$__rate_interval])) * 3600`, "{{liveness}} {{direction}}"))),
		graph(id.next(), "Share of spend that was orphaned",
			"Orphaned share of model cost, tokens, model calls, and the time spent in attempts.",
			"percentunit", 12, 8,
			query("A", `sum(rate(orphanwatch_spend_cost_usd_total{liveness="orphaned", `+svc+`}[$__rate_interval])) / sum(rate(orphanwatch_spend_cost_usd_total{`+svc+`}[$__rate_interval]))`, "cost"),
			query("B", `sum(rate(orphanwatch_spend_tokens_total{liveness="orphaned", `+svc+`}[$__rate_interval])) / sum(rate(orphanwatch_spend_tokens_total{`+svc+`}[$__rate_interval]))`, "tokens"),
			query("C", `sum(rate(orphanwatch_model_calls_total{liveness="orphaned", `+svc+`}[$__rate_interval])) / sum(rate(orphanwatch_model_calls_total{`+svc+`}[$__rate_interval]))`, "model calls"),
			query("D", `sum(rate(orphanwatch_spend_seconds_total{liveness="orphaned", `+svc+`}[$__rate_interval])) / sum(rate(orphanwatch_spend_seconds_total{`+svc+`}[$__rate_interval]))`, "attempt time")).
			Max(1),
		stacked(graph(id.next(), "Model calls per minute by liveness",
			"Model calls per minute, by liveness.",
			"short", 12, 8,
			query("A", `sum by (liveness) (rate(orphanwatch_model_calls_total{`+svc+`}[$__rate_interval])) * 60`, "{{liveness}}"))),
	)

	section(d, &id, "Outcomes",
		stacked(graph(id.next(), "Runs by outcome per minute",
			"How runs (an operation and its retries) end: success, retryable_failure, hard_failure, cancelled (noticed the caller had gone: the good ending), delivered_to_nobody (finished for a caller that had gone), unknown_root (root never seen). Exemplars link delivered_to_nobody runs to their traces.",
			"short", 12, 8,
			query("A", `sum by (outcome) (rate(orphanwatch_runs_total{`+svc+`}[$__rate_interval])) * 60`, "{{outcome}}").Exemplar(true))),
		stacked(graph(id.next(), "Attempt time per second by liveness",
			"Seconds of attempt work per second (busy workers), by liveness.",
			"s", 12, 8,
			query("A", `sum by (liveness) (rate(orphanwatch_spend_seconds_total{`+svc+`}[$__rate_interval]))`, "{{liveness}}"))),
	)

	section(d, &id, "Where it goes (over the dashboard's time range)",
		bars(id.next(), "Top services by orphaned cost",
			"Services whose model calls cost most after their caller had gone.", "currencyUSD", 12, 8,
			instant("A", `topk(10, sum by (service_name) (increase(orphanwatch_spend_cost_usd_total{liveness="orphaned", `+svc+`}[$__range])))`, "{{service_name}}")),
		bars(id.next(), "Top models by orphaned cost",
			"Models whose calls cost most after their caller had gone.", "currencyUSD", 12, 8,
			instant("A", `topk(10, sum by (model) (increase(orphanwatch_spend_cost_usd_total{liveness="orphaned", `+svc+`}[$__range])))`, "{{model}}")),
		bars(id.next(), "Top services by orphaned tokens",
			"Services that spent the most tokens after their caller had gone.", "short", 12, 8,
			instant("A", `topk(10, sum by (service_name) (increase(orphanwatch_spend_tokens_total{liveness="orphaned", `+svc+`}[$__range])))`, "{{service_name}}")),
		bars(id.next(), "Top operations delivering to nobody",
			"Operations whose runs most often finished for a caller that had gone.", "short", 12, 8,
			instant("A", `topk(10, sum by (service_name, operation) (increase(orphanwatch_runs_total{outcome="delivered_to_nobody", `+svc+`}[$__range])))`, "{{service_name}} {{operation}}")),
	)

	return d.Build()
}
