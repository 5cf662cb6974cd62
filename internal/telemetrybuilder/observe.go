package telemetrybuilder

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
)

// Observe is the internal telemetry the orphanmetrics exporter and connector share: their
// metadata.yaml declare the same instruments, named otelcol_exporter_orphanmetrics_* and
// otelcol_connector_orphanmetrics_*. LabelValues reads the admitted values of the limited
// labels; the others report the orphanmetrics.Observing of observe mode: what it keeps, what it
// evicted and judged, and how long verdicts took.
type Observe struct {
	b                   *Builder
	Evictions           metric.Int64ObservableCounter
	HeldRoots           metric.Int64ObservableGauge
	LabelValues         metric.Int64ObservableGauge
	OpenRuns            metric.Int64ObservableGauge
	Records             metric.Int64ObservableGauge
	SpansJudged         metric.Int64ObservableCounter
	SpansWithoutVerdict metric.Int64ObservableCounter
	Traces              metric.Int64ObservableGauge
	VerdictLatency      metric.Float64Histogram
}

// NewObserve creates Observe's instruments on b, each named prefix
// ("otelcol_exporter_orphanmetrics_") and its metadata.yaml key's last part ("records").
func NewObserve(b *Builder, prefix string) Observe {
	return Observe{
		b: b,
		Evictions: b.Int64ObservableCounter(prefix+"evictions", "{items}",
			"Observe mode: state evicted to stay within the configured limits, by state. [Alpha]"),
		HeldRoots: b.Int64ObservableGauge(prefix+"held_roots", "{spans}",
			"Observe mode: verdicts of abandoned roots held until abandoned_root_hold (unset: decision_wait) after they arrived, so that later orphans deepen their reach. [Alpha]"),
		LabelValues: b.Int64ObservableGauge(prefix+"label_values", "{values}",
			"Distinct values admitted for a label taken from span data; at label_limits, later new values are exported as other. [Alpha]"),
		OpenRuns: b.Int64ObservableGauge(prefix+"open_runs", "{runs}",
			"Observe mode: runs left open by a decision (their final attempt so far not terminal). [Alpha]"),
		Records: b.Int64ObservableGauge(prefix+"records", "{records}",
			"Observe mode: span records kept, by state: waiting (for their trace's decision), kept (between decisions, for later spans of their trace), pending (of those, waiting for their root or chain). [Alpha]"),
		SpansJudged: b.Int64ObservableCounter(prefix+"spans_judged", "{spans}",
			"Observe mode: spans whose verdicts were decided and counted. [Alpha]"),
		SpansWithoutVerdict: b.Int64ObservableCounter(prefix+"spans_without_verdict", "{spans}",
			"Observe mode: spans that got no verdict or liveness unknown, by reason. [Alpha]"),
		Traces: b.Int64ObservableGauge(prefix+"traces", "{traces}",
			"Observe mode: traces whose records wait for their decision. [Alpha]"),
		VerdictLatency: b.Float64Histogram(prefix+"verdict_latency", "s",
			"Observe mode: time from a request's root span arriving to the last verdict counted for the request, observed once nothing more can come for it. [Alpha]",
			0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600),
	}
}

// Recording makes what the exporter and the connector record spans with, every measurement of
// o carrying id (`exporter=<component ID>`, `connector=<component ID>`): the Recorder of cfg,
// its skipped spans logged to logger and its limited labels' admitted values read into
// LabelValues on collection, and in observe mode (cfg.Mode) the Observing that decides the
// verdicts, reporting through o's other instruments (nil in annotate mode). On an error, what
// was registered is unregistered again (the builder's Shutdown).
func (o Observe) Recording(cfg *orphanmetrics.Settings, logger *zap.Logger, id attribute.KeyValue) (*orphanmetrics.Recorder, *orphanmetrics.Observing, error) {
	rec, err := orphanmetrics.NewRecorder(cfg)
	if err != nil {
		return nil, nil, err
	}
	rec.LogSkips(logger)
	if err := rec.RegisterLabelValues(o.registrar(o.LabelValues), id); err != nil {
		o.b.Shutdown()
		return nil, nil, err
	}
	if cfg.Mode != orphanmetrics.ModeObserve {
		return rec, nil, nil
	}
	one := metric.WithAttributes(id)
	latency := func(s float64) { o.VerdictLatency.Record(context.Background(), s, one) }
	obs, err := orphanmetrics.NewObserving(cfg, rec, logger, latency, nil)
	if err == nil {
		err = obs.RegisterTelemetry(orphanmetrics.ObserveTelemetry{
			Records:             o.registrar(o.Records),
			Traces:              o.registrar(o.Traces),
			OpenRuns:            o.registrar(o.OpenRuns),
			HeldRoots:           o.registrar(o.HeldRoots),
			Evictions:           o.registrar(o.Evictions),
			SpansJudged:         o.registrar(o.SpansJudged),
			SpansWithoutVerdict: o.registrar(o.SpansWithoutVerdict),
		}, id)
	}
	if err != nil {
		o.b.Shutdown()
		return nil, nil, err
	}
	return rec, obs, nil
}

// registrar returns the Register of inst's callback.
func (o Observe) registrar(inst metric.Int64Observable) func(metric.Int64Callback) error {
	return func(cb metric.Int64Callback) error { return o.b.Register(inst, cb) }
}
