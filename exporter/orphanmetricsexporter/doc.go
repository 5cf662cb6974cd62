// Package orphanmetricsexporter is an OpenTelemetry Collector traces exporter,
// type "orphanmetrics", that turns the verdicts the orphan processor writes on
// spans (orphanwatch.* attributes, see docs/verdicts.md) into Prometheus
// counters and a histogram, served over HTTP in the Prometheus text format
// and in OpenMetrics with exemplars carrying the trace ID.
//
// It can also be used without the processor, with spans that applications
// annotate themselves, and without the collector: [NewRecorder] and
// [WriteText] give the same metrics in-process.
package orphanmetricsexporter // import "github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"
