package orphanmetricsconnector // import "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"

import (
	"errors"
	"fmt"
	"time"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"
	"github.com/orphanwatch/orphanwatch/internal/rules"
)

// DefaultMetricsFlushInterval is how often the accumulated metrics are sent down the metrics
// pipeline unless configured otherwise: spanmetrics' default.
const DefaultMetricsFlushInterval = 60 * time.Second

// Config is the configuration of the orphanmetrics connector. The metric settings are the
// orphanmetrics exporter's (same keys, same defaults, same validation): one recorder feeds
// both, so the series are the same.
type Config struct {
	// Namespace prefixes every metric name: OTLP "<namespace>.runs", which Prometheus
	// translation turns into "<namespace>_runs_total". It must be a valid Prometheus metric
	// name without colons. Default orphanwatch.
	Namespace string `mapstructure:"namespace"`

	// LabelLimits bounds the number of distinct values of the attributes that come from span
	// data (service_name, operation, model, caller_service, callee_service); later new values
	// become "other", counted in <namespace>.label_overflow{label}.
	LabelLimits orphanmetricsexporter.LabelLimitsConfig `mapstructure:"label_limits"`

	// SeriesLimit bounds the number of distinct data point attribute sets of each sum from span
	// data, as the exporter's series_limit bounds its counters' series: beyond it, new sets go
	// to the sum's overflow point (attributes from span data "other"), counted in
	// <namespace>.series_overflow{metric}. Must be positive. Default
	// orphanmetricsexporter.DefaultSeriesLimit.
	SeriesLimit int `mapstructure:"series_limit"`

	// OutliveBuckets are the explicit bounds, in seconds, of the <namespace>.outlive
	// histogram: positive, finite and strictly increasing.
	OutliveBuckets []float64 `mapstructure:"outlive_buckets"`

	// HopBuckets are the explicit bounds, in service hops, of the cancel.reach_hops and
	// orphaned.depth_hops histograms: non-negative, finite and strictly increasing.
	HopBuckets []float64 `mapstructure:"hop_buckets"`

	// ConstLabels are added as attributes to every data point, as the exporter adds them as
	// labels to every series. Names must be valid Prometheus label names not used by the
	// connector's own attributes.
	ConstLabels map[string]string `mapstructure:"const_labels"`

	// Dimensions are extra data point attributes taken from span data, as the exporter's
	// dimensions (same key, same rules): each names an attribute, looked up in the span's
	// attributes, then its resource's, else its default; the data point attribute is the
	// name made a Prometheus label name (deployment.environment.name:
	// deployment_environment_name), so the series after translation are the exporter's. An
	// empty value is not sent. Bounded by label_limits and series_limit.
	Dimensions []orphanmetricsexporter.DimensionConfig `mapstructure:"dimensions"`

	// MetricsFlushInterval is how often the accumulated metrics are sent to the metrics
	// pipeline. Default [DefaultMetricsFlushInterval]. Must be positive.
	MetricsFlushInterval time.Duration `mapstructure:"metrics_flush_interval"`

	// Mode says where the verdicts come from, as the exporter's: observe (the default) decides
	// them here, with the rule settings below; annotate reads the orphanwatch.* attributes the
	// orphan processor wrote.
	Mode string `mapstructure:"mode"`

	// Config holds the verdict rules used in observe mode, under the orphan processor's keys
	// (decision_wait, decision_wait_after_root, max_request_duration, clock_skew_tolerance,
	// run_timeout, max_attempts, attributes, cancellation, retryable, prices, detached).
	rules.Config `mapstructure:",squash"`
	// Limits bound what observe mode keeps (the processor's limits of the same names).
	Limits rules.LimitsConfig `mapstructure:"limits"`

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
	e := orphanmetricsexporter.NewDefaultConfig()
	return &Config{
		Namespace:              e.Namespace,
		LabelLimits:            e.LabelLimits,
		SeriesLimit:            e.SeriesLimit,
		OutliveBuckets:         e.OutliveBuckets,
		HopBuckets:             e.HopBuckets,
		MetricsFlushInterval:   DefaultMetricsFlushInterval,
		AggregationTemporality: TemporalityCumulative,
		Mode:                   e.Mode,
		Config:                 e.Config,
		Limits:                 e.Limits,
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
	rc := c.recorderConfig()
	return errors.Join(append(errs, rc.ValidateMetrics(), rc.ValidateMode())...)
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

// recorderConfig is the exporter configuration with the connector's metric, mode and rule
// settings: what the shared recorder and observe mode are made from (its HTTP settings are not
// used).
func (c *Config) recorderConfig() *orphanmetricsexporter.Config {
	e := orphanmetricsexporter.NewDefaultConfig()
	e.Namespace = c.Namespace
	e.LabelLimits = c.LabelLimits
	e.SeriesLimit = c.SeriesLimit
	e.OutliveBuckets = c.OutliveBuckets
	e.HopBuckets = c.HopBuckets
	e.ConstLabels = c.ConstLabels
	e.Dimensions = c.Dimensions
	e.Mode = c.Mode
	e.Config = c.Config
	e.Limits = c.Limits
	return e
}
