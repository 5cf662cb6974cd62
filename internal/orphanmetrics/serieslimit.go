package orphanmetrics // import "github.com/orphanwatch/orphanwatch/internal/orphanmetrics"

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics/labellimit"
)

// The series limit (series_limit): a counter of the recorder admits at most a fixed number of
// distinct label tuples. label_limits bound each label from span data on its own, but a metric
// with two of them (runs_total: service_name x operation) can still make limit x limit series
// (500 services x 500 operations made 495,606 series, a 42.9 MB scrape): series_limit bounds the
// product, per metric, like contrib spanmetrics' aggregation_cardinality_limit.
//
// Once a metric holds its limit of series, a new tuple is counted in that metric's overflow
// series: its labels from span data (LimitedLabels) become "other", the value label_limits
// already use, and its labels from fixed sets (outcome, liveness, end_reason, direction) keep
// their value, so that `outcome="delivered_to_nobody"` or `liveness="orphaned"` still count
// right in the overflow and the alerts that select them still fire; a metric has at most as many
// overflow series as combinations of its fixed labels (8 for spend_tokens_total). Every use of
// an overflow series increments <namespace>_series_overflow_total{metric}. Tuples admitted stay
// admitted for the recorder's life: a series never moves to the overflow half-way through.
//
// The limited vector has the call shape of *prometheus.CounterVec (WithLabelValues), so the
// recording code (spans.go) is the same with or without it. The histograms are bounded only with
// dimensions: without, their only label is service_name, so label_limits bound each to
// label_limits::service_name + 1 series already; with dimensions (service_name x each dimension)
// series_limit bounds them as it bounds the counters.

// seriesLimit admits at most limit distinct label tuples of one metric. It is safe for
// concurrent use; it is consulted only when a series handle is made (series.go caches them), so
// its lock is off the hot path.
type seriesLimit struct {
	limit     int
	overflows prometheus.Counter // <namespace>_series_overflow_total{metric}

	mu   sync.Mutex
	seen map[string]struct{} // admitted tuples, their values joined by "\xff"
}

// admit reports whether the tuple lvs has, or may take, a series of its own.
func (l *seriesLimit) admit(lvs []string) bool {
	key := strings.Join(lvs, "\xff") // "\xff" never occurs in valid UTF-8, which label values are
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[key]; ok {
		return true
	}
	if len(l.seen) >= l.limit {
		return false
	}
	l.seen[key] = struct{}{}
	return true
}

// len is the number of tuples admitted.
func (l *seriesLimit) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// seriesBound is a series limit with the labels of its metric that come from span data.
type seriesBound struct {
	lim seriesLimit
	// limited[i]: label i comes from span data (one of the recorder's limited labels:
	// LimitedLabels and the dimensions') and is "other" in the overflow series.
	limited []bool
}

func newSeriesBound(labels []string, limited func(string) bool, limit int, overflows prometheus.Counter) *seriesBound {
	b := &seriesBound{
		lim:     seriesLimit{limit: limit, overflows: overflows, seen: map[string]struct{}{}},
		limited: make([]bool, len(labels)),
	}
	for i, l := range labels {
		b.limited[i] = limited(l)
	}
	return b
}

// tuple returns the tuple lvs is counted in: lvs itself when it has (or may take) a series of
// its own, else the overflow tuple (its labels from span data "other") and true.
func (b *seriesBound) tuple(lvs []string) ([]string, bool) {
	if b.isOverflow(lvs) || b.lim.admit(lvs) {
		// The overflow tuple itself (already "other" by label_limits) is always the overflow
		// series: never refused, never counted as a series overflow.
		return lvs, false
	}
	over := make([]string, len(lvs))
	for i, val := range lvs {
		if b.limited[i] {
			val = labellimit.Overflow
		}
		over[i] = val
	}
	return over, true
}

// isOverflow reports whether every label of lvs from span data is "other".
func (b *seriesBound) isOverflow(lvs []string) bool {
	some := false
	for i, val := range lvs {
		if b.limited[i] {
			if val != labellimit.Overflow {
				return false
			}
			some = true
		}
	}
	return some
}

// limitedCounterVec is a counter vector bounded by a series limit.
type limitedCounterVec struct {
	*prometheus.CounterVec
	*seriesBound
}

// newLimitedCounterVec wraps vec, whose labels are labels (those for which limited is true come
// from span data), with a limit of limit series; overflows counts the uses of its overflow
// series.
func newLimitedCounterVec(vec *prometheus.CounterVec, labels []string, limited func(string) bool, limit int, overflows prometheus.Counter) *limitedCounterVec {
	return &limitedCounterVec{CounterVec: vec, seriesBound: newSeriesBound(labels, limited, limit, overflows)}
}

// WithLabelValues returns the counter of the tuple lvs, or, once the metric holds its limit of
// series and lvs is not one of them, a counter that adds to the metric's overflow series for
// lvs (its labels from span data "other") and counts every use in series_overflow_total.
func (v *limitedCounterVec) WithLabelValues(lvs ...string) prometheus.Counter {
	lvs, over := v.tuple(lvs)
	c := v.CounterVec.WithLabelValues(lvs...)
	if !over {
		return c
	}
	ea, _ := c.(prometheus.ExemplarAdder)
	return &overflowCounter{Counter: c, ea: ea, overflows: v.lim.overflows}
}

// limitedHistogramVec is a histogram vector bounded by a series limit when its labels from span
// data are more than service_name (with dimensions); bound is nil otherwise (label_limits
// bound it to label_limits::service_name + 1 series).
type limitedHistogramVec struct {
	*prometheus.HistogramVec
	bound *seriesBound
}

// WithLabelValues is limitedCounterVec's for a histogram.
func (v *limitedHistogramVec) WithLabelValues(lvs ...string) prometheus.Observer {
	if v.bound == nil {
		return v.HistogramVec.WithLabelValues(lvs...)
	}
	lvs, over := v.bound.tuple(lvs)
	o := v.HistogramVec.WithLabelValues(lvs...)
	if !over {
		return o
	}
	eo, _ := o.(prometheus.ExemplarObserver)
	return &overflowObserver{Observer: o, eo: eo, overflows: v.bound.lim.overflows}
}

// overflowObserver is overflowCounter for a histogram.
type overflowObserver struct {
	prometheus.Observer
	eo        prometheus.ExemplarObserver
	overflows prometheus.Counter
}

func (o *overflowObserver) Observe(v float64) {
	o.Observer.Observe(v)
	o.overflows.Inc()
}

// ObserveWithExemplar keeps the exemplar, as overflowCounter's AddWithExemplar does.
func (o *overflowObserver) ObserveWithExemplar(v float64, e prometheus.Labels) {
	if o.eo != nil {
		o.eo.ObserveWithExemplar(v, e)
	} else {
		o.Observer.Observe(v)
	}
	o.overflows.Inc()
}

// overflowCounter is the overflow series of a limited counter as seen by one tuple that did not
// get a series of its own: it adds to the overflow series and counts each use.
type overflowCounter struct {
	prometheus.Counter
	ea        prometheus.ExemplarAdder
	overflows prometheus.Counter
}

func (c *overflowCounter) Inc() { c.Add(1) }

func (c *overflowCounter) Add(v float64) {
	c.Counter.Add(v)
	c.overflows.Inc()
}

// AddWithExemplar keeps the exemplar: a trace of what overflowed is worth finding.
func (c *overflowCounter) AddWithExemplar(v float64, e prometheus.Labels) {
	if c.ea != nil {
		c.ea.AddWithExemplar(v, e)
	} else {
		c.Counter.Add(v)
	}
	c.overflows.Inc()
}
