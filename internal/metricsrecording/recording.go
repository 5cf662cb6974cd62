// Package metricsrecording is how the orphanmetrics exporter and connector record the spans
// they receive, alike: with an orphanmetrics.Recorder (its skipped spans logged, its limited
// labels' admitted values read by the component's label_values gauge) and, in observe mode,
// through the orphanmetrics.Observing that decides the verdicts first, reporting through the
// component's observe-mode instruments.
package metricsrecording

import (
	"context"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
)

// Telemetry is where a component reports its recording (its metadata.TelemetryBuilder's
// instruments); every measurement carries ID (`exporter=<component ID>`,
// `connector=<component ID>`), so that two instances in one collector read apart.
type Telemetry struct {
	ID attribute.KeyValue
	// LabelValues registers the callback of the label_values gauge.
	LabelValues func(metric.Int64Callback) error
	// Observe registers the callbacks of the observe-mode instruments.
	Observe orphanmetrics.ObserveTelemetry
	// VerdictLatency is the verdict_latency histogram of observe mode.
	VerdictLatency metric.Float64Histogram
}

// Recording records a component's spans.
type Recording struct {
	// Recorder holds the metrics.
	Recorder *orphanmetrics.Recorder
	// Observing decides the verdicts in observe mode; nil in annotate mode.
	Observing *orphanmetrics.Observing
}

// New makes the recording of cfg, logging to logger and reporting through tel. On an error,
// callbacks it registered may remain: the caller unregisters them (its telemetry builder's
// Shutdown).
func New(cfg *orphanmetrics.Settings, logger *zap.Logger, tel Telemetry) (Recording, error) {
	rec, err := orphanmetrics.NewRecorder(cfg)
	if err != nil {
		return Recording{}, err
	}
	rec.LogSkips(logger)
	if err := rec.RegisterLabelValues(tel.LabelValues, tel.ID); err != nil {
		return Recording{}, err
	}
	r := Recording{Recorder: rec}
	if cfg.Mode != orphanmetrics.ModeObserve {
		return r, nil
	}
	one := metric.WithAttributes(tel.ID)
	latency := func(s float64) { tel.VerdictLatency.Record(context.Background(), s, one) }
	if r.Observing, err = orphanmetrics.NewObserving(cfg, rec, logger, latency, nil); err != nil {
		return Recording{}, err
	}
	if err := r.Observing.RegisterTelemetry(tel.Observe, tel.ID); err != nil {
		return Recording{}, err
	}
	return r, nil
}

// Consume records td: in observe mode through Observing, which decides its verdicts, in
// annotate mode with the Recorder, from the attributes the orphan processor wrote. td is only
// read.
func (r Recording) Consume(td ptrace.Traces) {
	if r.Observing != nil {
		r.Observing.Consume(td)
		return
	}
	r.Recorder.Record(td)
}

// Start starts Observing (observe mode).
func (r Recording) Start() {
	if r.Observing != nil {
		r.Observing.Start()
	}
}

// Stop stops Observing (observe mode): what it still owes is counted.
func (r Recording) Stop() {
	if r.Observing != nil {
		r.Observing.Shutdown()
	}
}
