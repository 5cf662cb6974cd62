// Package orphanmetricsconnector is an OpenTelemetry Collector connector, type
// "orphanmetrics", from traces to metrics: it turns the verdicts the orphan processor writes on
// spans (orphanwatch.* attributes, see docs/verdicts.md) into the orphanmetrics exporter's
// series as OTLP metrics (cumulative monotonic sums and explicit-bucket histograms, exemplars
// with trace and span ID), sent into a metrics pipeline every metrics_flush_interval, so they
// can be pushed (otlp_http, prometheusremotewrite, a vendor's exporter) instead of scraped.
//
// It records spans with the exporter's recorder (internal/orphanmetrics): the same code, label
// limits and validation, so the series cannot drift apart. Its OTLP names translate back to
// the exporter's Prometheus names (orphanwatch.runs -> orphanwatch_runs_total).
package orphanmetricsconnector // import "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"
