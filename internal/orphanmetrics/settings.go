package orphanmetrics // import "github.com/orphanwatch/orphanwatch/internal/orphanmetrics"

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/otlptranslator"

	"github.com/orphanwatch/orphanwatch/internal/rulesconfig"
)

// Defaults of the metric settings, see [Settings].
const (
	// DefaultNamespace prefixes every metric name.
	DefaultNamespace = "orphanwatch"
	// DefaultLabelLimit is the number of distinct values admitted per label.
	DefaultLabelLimit = 500
	// DefaultSeriesLimit is the number of distinct series admitted per counter (series_limit).
	// It keeps a scrape at a few MB whatever the span data: 8 counters of at most 2,000 series
	// (and their few overflow series), about 120 bytes a line, are under 2 MB; the 3 histograms,
	// bounded by label_limits to 501 series of 12 to 15 lines each, under 2.5 MB more
	// (TestSeriesLimitFlood measures a flood of every metric at the defaults: see the README).
	DefaultSeriesLimit = 2000
)

// DefaultOutliveBuckets returns the default upper bounds, in seconds, of the
// outlive_seconds histogram: 0.1 s to 10 min.
func DefaultOutliveBuckets() []float64 {
	return []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
}

// DefaultHopBuckets returns the default upper bounds, in service hops, of the
// cancel_reach_hops and orphaned_depth_hops histograms.
func DefaultHopBuckets() []float64 {
	return []float64{0, 1, 2, 3, 4, 5, 6, 8, 10}
}

// The modes of [Settings.Mode].
const (
	// ModeObserve decides the verdicts in the exporter (or connector) itself: the default.
	ModeObserve = "observe"
	// ModeAnnotate reads the verdicts the orphan processor wrote on the spans.
	ModeAnnotate = "annotate"
)

// LimitedLabels are the labels whose values come from span data and are
// therefore bounded by [LabelLimitsConfig]. All other labels take values from
// fixed sets.
var LimitedLabels = []string{labelServiceName, labelOperation, labelModel, labelCallerService, labelCalleeService}

// Settings are the metric, mode and rule settings shared by the orphanmetrics exporter and
// connector: each squashes them into its configuration (same YAML keys, same defaults, same
// validation), and a [Recorder] and [Observing] are made from them.
//
// Settings has no Validate method on purpose: the collector validates every field of a
// component's configuration that has one, so the components call [Settings.ValidateMetrics]
// and [Settings.ValidateMode] from their own Validate, once.
type Settings struct {
	// Namespace prefixes every metric name ("<namespace>_runs_total"). It
	// must be a valid Prometheus metric name without colons. Default
	// [DefaultNamespace].
	Namespace string `mapstructure:"namespace"`

	// LabelLimits bounds the number of distinct values of the labels that
	// come from span data.
	LabelLimits LabelLimitsConfig `mapstructure:"label_limits"`

	// SeriesLimit bounds the number of distinct series of each counter from span data
	// (runs_total, attempts_total, roots_total, spend_*, model_calls_total,
	// unpropagated_total): once a counter holds SeriesLimit series, a new label tuple is counted
	// in its overflow series (labels from span data "other", the others kept) and in
	// <namespace>_series_overflow_total{metric}. Must be positive. Default
	// [DefaultSeriesLimit].
	SeriesLimit int `mapstructure:"series_limit"`

	// OutliveBuckets are the upper bounds, in seconds, of the buckets of the
	// outlive_seconds histogram: positive, finite and strictly increasing.
	// Default [DefaultOutliveBuckets].
	OutliveBuckets []float64 `mapstructure:"outlive_buckets"`

	// HopBuckets are the upper bounds, in service hops, of the buckets of
	// the cancel_reach_hops and orphaned_depth_hops histograms: non-negative,
	// finite and strictly increasing. Default [DefaultHopBuckets].
	HopBuckets []float64 `mapstructure:"hop_buckets"`

	// ConstLabels are added to every exported series. Names must be valid
	// Prometheus label names that do not start with "__" and are not used
	// by the exporter's own labels.
	ConstLabels map[string]string `mapstructure:"const_labels"`

	// Dimensions are extra labels taken from span data, as contrib spanmetrics' dimensions:
	// each names an attribute, looked up in the span's attributes first, then in its
	// resource's. Its label is the name made a Prometheus label name (otlptranslator, as the
	// prometheus exporters do: "deployment.environment.name" is
	// deployment_environment_name). The series of a service carry them (runs_total,
	// attempts_total, roots_total, spend_*, model_calls_total and the three histograms), not
	// unpropagated_total (an edge between two services) nor the health counters. Their values
	// are bounded as the other labels from span data are (label_limits, series_limit).
	// Default none.
	Dimensions []DimensionConfig `mapstructure:"dimensions"`

	// Mode says where the verdicts come from (DESIGN.md "Two ways to run"): [ModeObserve]
	// (the default) decides them here, from what is read of each span as it arrives, with the
	// rule settings below; [ModeAnnotate] reads the orphanwatch.* attributes that the orphan
	// processor wrote on the spans, and the rule settings are not used.
	Mode string `mapstructure:"mode"`

	// Config holds the verdict rules used in observe mode, under the orphan processor's keys
	// (decision_wait, max_request_duration, clock_skew_tolerance, run_timeout, max_attempts,
	// attributes, cancellation, retryable, prices, detached): internal/rulesconfig.
	rulesconfig.Config `mapstructure:",squash"`
	// Limits bound what observe mode keeps between decisions (the processor's limits of the
	// same names), each with its eviction counter.
	Limits rulesconfig.LimitsConfig `mapstructure:"limits"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// NewDefaultSettings returns the default settings: namespace [DefaultNamespace],
// [DefaultLabelLimit] values per label, [DefaultSeriesLimit] series per counter,
// [DefaultOutliveBuckets], [DefaultHopBuckets], observe mode with the default rules and limits.
func NewDefaultSettings() *Settings {
	return &Settings{
		Namespace:      DefaultNamespace,
		LabelLimits:    LabelLimitsConfig{Default: DefaultLabelLimit},
		SeriesLimit:    DefaultSeriesLimit,
		OutliveBuckets: DefaultOutliveBuckets(),
		HopBuckets:     DefaultHopBuckets(),
		Mode:           ModeObserve,
		Config:         rulesconfig.Default(),
		Limits:         rulesconfig.DefaultLimits(),
	}
}

// DimensionConfig is one entry of [Settings.Dimensions].
type DimensionConfig struct {
	// Name is the attribute key (a span attribute, else a resource attribute). Required.
	Name string `mapstructure:"name"`
	// Default is the label value of a span that has the attribute nowhere (or only with an
	// empty value). Without it the label is empty, which Prometheus reads as absent. A default
	// takes no room in the label's label_limits.
	Default string `mapstructure:"default"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// LabelLimitsConfig bounds label cardinality. For each limited label (see
// [LimitedLabels]) the first Default (or PerLabel[label]) distinct values are
// kept; later new values are exported as "other" and counted in
// <namespace>_label_overflow_total{label}.
type LabelLimitsConfig struct {
	// Default is the number of distinct values admitted per label. Default
	// [DefaultLabelLimit]. Must be positive.
	Default int `mapstructure:"default"`
	// PerLabel overrides Default for single labels, keyed by label name
	// (one of [LimitedLabels], or the label of one of [Settings.Dimensions]). Values must be
	// positive.
	PerLabel map[string]int `mapstructure:"per_label"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var (
	// namespaceRE is the Prometheus metric-name syntax without colons, which
	// are reserved for recording rules.
	namespaceRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	// labelNameRE is the Prometheus (legacy) label-name syntax.
	labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// ValidateMode checks mode and, in observe mode, the rule settings (each error naming its
// field as written in YAML).
func (c *Settings) ValidateMode() error {
	switch c.Mode {
	case ModeObserve:
		// keys (sharing idempotency keys across a tier) is checked at start, when the
		// extension it names can be found.
		return c.Config.Validate(c.Limits)
	case ModeAnnotate:
		return nil
	}
	return fmt.Errorf("mode: must be %q or %q, got %q", ModeObserve, ModeAnnotate, c.Mode)
}

// ValidateMetrics checks the fields that shape the metrics: namespace, label_limits,
// series_limit, outlive_buckets, hop_buckets, const_labels and dimensions, every problem
// reported, each error naming its field. It is what [NewRecorder] checks.
func (c *Settings) ValidateMetrics() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	switch {
	case c.Namespace == "":
		add("namespace: must not be empty")
	case !namespaceRE.MatchString(c.Namespace):
		add("namespace: %q must match %s (Prometheus metric-name characters, no colons)", c.Namespace, namespaceRE)
	}

	if c.LabelLimits.Default <= 0 {
		add("label_limits::default: must be positive, got %d", c.LabelLimits.Default)
	}
	dimLabels, dimErrs := c.dimensionLabels()
	errs = append(errs, dimErrs...)
	limited := append(slices.Clone(LimitedLabels), dimLabels...)
	for _, name := range sortedKeys(c.LabelLimits.PerLabel) {
		n := c.LabelLimits.PerLabel[name]
		if !slices.Contains(limited, name) {
			add("label_limits::per_label: unknown label %q (limited labels are %s)", name, strings.Join(limited, ", "))
		}
		if n <= 0 {
			add("label_limits::per_label::%s: must be positive, got %d", name, n)
		}
	}

	if c.SeriesLimit <= 0 {
		add("series_limit: must be positive, got %d", c.SeriesLimit)
	}

	errs = append(errs, validateBuckets("outlive_buckets", c.OutliveBuckets, false)...)
	errs = append(errs, validateBuckets("hop_buckets", c.HopBuckets, true)...)

	for _, name := range sortedKeys(c.ConstLabels) {
		v := c.ConstLabels[name]
		switch {
		case !labelNameRE.MatchString(name):
			add("const_labels: %q is not a valid Prometheus label name", name)
		case strings.HasPrefix(name, "__"):
			add("const_labels: %q: names starting with \"__\" are reserved", name)
		case slices.Contains(reservedLabels, name):
			add("const_labels: %q is used by the exporter's own labels", name)
		}
		switch {
		case v == "":
			// Prometheus treats an empty label as an absent one: the label would name nothing,
			// and two collectors meant to be told apart by it would write the same series. The
			// usual cause is an unset environment variable (${env:HOSTNAME} where the shell
			// does not export HOSTNAME), which the collector only warns about.
			add("const_labels::%s: value is empty (an unset environment variable? Prometheus drops empty labels)", name)
		case !utf8.ValidString(v):
			add("const_labels::%s: value must be valid UTF-8", name)
		}
	}

	return errors.Join(errs...)
}

// dimensionLabels returns the label name of each dimension ("" for an invalid one) and the
// errors of the dimensions: a name that is empty, that makes no label name, or whose label is
// another dimension's, one of the exporter's own labels or a const_labels name.
func (c *Settings) dimensionLabels() ([]string, []error) {
	var errs []error
	labels := make([]string, len(c.Dimensions))
	for i, d := range c.Dimensions {
		field := fmt.Sprintf("dimensions[%d].name", i)
		if strings.TrimSpace(d.Name) == "" {
			errs = append(errs, fmt.Errorf("%s: must not be empty", field))
			continue
		}
		label, err := DimensionLabel(d.Name)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %q makes no Prometheus label name: %w", field, d.Name, err))
			continue
		case strings.HasPrefix(label, "__"):
			errs = append(errs, fmt.Errorf("%s: %q gives label %q: names starting with \"__\" are reserved", field, d.Name, label))
			continue
		case slices.Contains(reservedLabels, label):
			errs = append(errs, fmt.Errorf("%s: %q gives label %q, which the exporter's own labels use", field, d.Name, label))
			continue
		}
		if _, ok := c.ConstLabels[label]; ok {
			errs = append(errs, fmt.Errorf("%s: %q gives label %q, a const_labels name", field, d.Name, label))
			continue
		}
		if j := slices.Index(labels[:i], label); j >= 0 {
			errs = append(errs, fmt.Errorf("%s: %q gives label %q, as dimensions[%d].name %q does", field, d.Name, label, j, c.Dimensions[j].Name))
			continue
		}
		if !utf8.ValidString(d.Default) {
			errs = append(errs, fmt.Errorf("dimensions[%d].default: must be valid UTF-8", i))
			continue
		}
		labels[i] = label
	}
	return labels, errs
}

// DimensionLabel returns the label name of a dimension's attribute name: the name made a
// Prometheus label name as the OTLP-to-Prometheus translation makes attribute names
// (otlptranslator.LabelNamer: characters other than letters, digits and "_" become "_", a
// leading digit gets "key_"), so "deployment.environment.name" is
// "deployment_environment_name" in the exporter's series and the connector's data points alike.
func DimensionLabel(name string) (string, error) {
	namer := otlptranslator.LabelNamer{}
	return namer.Build(name)
}

// validateBuckets checks histogram bounds: not empty, finite, strictly increasing, positive
// (or, with zeroOK, not negative).
func validateBuckets(field string, bounds []float64, zeroOK bool) []error {
	var errs []error
	if len(bounds) == 0 {
		errs = append(errs, fmt.Errorf("%s: must not be empty", field))
	}
	for i, b := range bounds {
		switch {
		case math.IsNaN(b) || math.IsInf(b, 0):
			errs = append(errs, fmt.Errorf("%s[%d]: must be finite, got %v", field, i, b))
		case b < 0 && zeroOK:
			errs = append(errs, fmt.Errorf("%s[%d]: must not be negative, got %v", field, i, b))
		case b <= 0 && !zeroOK:
			errs = append(errs, fmt.Errorf("%s[%d]: must be positive, got %v", field, i, b))
		case i > 0 && b <= bounds[i-1]:
			errs = append(errs, fmt.Errorf("%s[%d]: must be greater than the previous bound %v, got %v", field, i, bounds[i-1], b))
		}
	}
	return errs
}

// reservedLabels are every label name the exporter uses itself, plus the
// names Prometheus gives meaning to.
var reservedLabels = []string{
	labelServiceName, labelOperation, labelOutcome, labelLiveness, labelEndReason,
	labelModel, labelDirection, labelCallerService, labelCalleeService,
	labelLabel, labelReason, labelMetric, "le", "quantile", exemplarTraceID, exemplarSpanID,
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
