package orphanmetricsconnector // import "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"

import (
	"errors"
	"fmt"
	"time"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
)

// DefaultMetricsFlushInterval is how often the accumulated metrics are sent down the metrics
// pipeline unless configured otherwise: spanmetrics' default.
const DefaultMetricsFlushInterval = 60 * time.Second

// Config is the configuration of the orphanmetrics connector. The metric, mode and rule
// settings are the orphanmetrics exporter's (internal/orphanmetrics.Settings: same keys, same
// defaults, same validation): one recorder feeds both, so the series are the same. In OTLP,
// the namespace prefixes "<namespace>.runs" (Prometheus translation: "<namespace>_runs_total"),
// label overflows are counted in <namespace>.label_overflow{label} and series overflows in
// <namespace>.series_overflow{metric}; const_labels and dimensions become data point
// attributes (an empty value is not sent).
type Config struct {
	// Settings are namespace, label_limits, series_limit, outlive_buckets, hop_buckets,
	// const_labels, dimensions, mode, and for observe mode the orphan processor's rule settings
	// (decision_wait, decision_wait_after_root, max_request_duration, clock_skew_tolerance,
	// run_timeout, max_attempts, attributes, cancellation, retryable, prices, detached) and
	// limits.
	orphanmetrics.Settings `mapstructure:",squash"`

	// MetricsFlushInterval is how often the accumulated metrics are sent to the metrics
	// pipeline. Default [DefaultMetricsFlushInterval]. Must be positive.
	MetricsFlushInterval time.Duration `mapstructure:"metrics_flush_interval"`

	// AggregationTemporality of the sums and histograms sent: [TemporalityCumulative] (the
	// default: totals since each series started, what Prometheus and remote write take) or
	// [TemporalityDelta] (what each series gained since the previous successful flush, which
	// is the start time of its points; series that gained nothing are not sent), as
	// spanmetrics' setting of that name (whose spellings AGGREGATION_TEMPORALITY_CUMULATIVE and
	// AGGREGATION_TEMPORALITY_DELTA are taken too).
	AggregationTemporality string `mapstructure:"aggregation_temporality"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Values of aggregation_temporality.
const (
	TemporalityCumulative = "cumulative"
	TemporalityDelta      = "delta"
)

// NewDefaultConfig returns the default configuration: the exporter's metric defaults and a
// flush every [DefaultMetricsFlushInterval].
func NewDefaultConfig() *Config {
	return &Config{
		Settings:               *orphanmetrics.NewDefaultSettings(),
		MetricsFlushInterval:   DefaultMetricsFlushInterval,
		AggregationTemporality: TemporalityCumulative,
	}
}

// Validate checks the configuration, each error naming its field.
func (c *Config) Validate() error {
	var errs []error
	if c.MetricsFlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("metrics_flush_interval: must be positive, got %v", c.MetricsFlushInterval))
	}
	if c.temporality() == "" {
		errs = append(errs, fmt.Errorf("aggregation_temporality: must be %s or %s, got %q", TemporalityCumulative, TemporalityDelta, c.AggregationTemporality))
	}
	if c.Keys != nil {
		// Key sharing across a tier is the orphanmetrics exporter's (observe) or the orphan
		// processor's (annotate): the connector does not look keys up in other members' records.
		errs = append(errs, fmt.Errorf("keys: the orphanmetrics connector does not share keys across a tier: set keys on the orphanmetrics exporter (mode: observe) or the orphan processor"))
	}
	return errors.Join(append(errs, c.ValidateMetrics(), c.ValidateMode())...)
}

// temporality is AggregationTemporality as TemporalityCumulative or TemporalityDelta, or ""
// when it is neither (nor spanmetrics' spelling of either).
func (c *Config) temporality() string {
	switch c.AggregationTemporality {
	case TemporalityCumulative, "AGGREGATION_TEMPORALITY_CUMULATIVE":
		return TemporalityCumulative
	case TemporalityDelta, "AGGREGATION_TEMPORALITY_DELTA":
		return TemporalityDelta
	}
	return ""
}
