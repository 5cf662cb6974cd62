package orphanmetrics // import "github.com/orphanwatch/orphanwatch/internal/orphanmetrics"

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/badinput"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics/labellimit"
)

// Label names of the exported series.
const (
	labelServiceName   = "service_name"
	labelOperation     = "operation"
	labelOutcome       = "outcome"
	labelLiveness      = "liveness"
	labelEndReason     = "end_reason"
	labelModel         = "model"
	labelDirection     = "direction"
	labelCallerService = "caller_service"
	labelCalleeService = "callee_service"
	labelLabel         = "label"
	labelReason        = "reason"
	labelMetric        = "metric"

	exemplarTraceID = "trace_id"
	exemplarSpanID  = "span_id"
)

// Metric names without the namespace prefix. The exported name is
// "<namespace>_<name>", for example "orphanwatch_runs_total".
const (
	MetricRuns           = "runs_total"
	MetricAttempts       = "attempts_total"
	MetricRoots          = "roots_total"
	MetricSpendSeconds   = "spend_seconds_total"
	MetricSpendTokens    = "spend_tokens_total"
	MetricSpendCostUSD   = "spend_cost_usd_total"
	MetricModelCalls     = "model_calls_total"
	MetricOutlive        = "outlive_seconds"
	MetricUnpropagated   = "unpropagated_total"
	MetricCancelReach    = "cancel_reach_hops"
	MetricOrphanedDepth  = "orphaned_depth_hops"
	MetricLabelOverflow  = "label_overflow_total"
	MetricSpansSkipped   = "spans_skipped_total"
	MetricSeriesOverflow = "series_overflow_total"
)

// Reasons of <namespace>_spans_skipped_total: why a span did not feed a
// metric it carried data for.
const (
	ReasonInvalidLiveness         = "invalid_liveness"           // orphanwatch.liveness not one of live|orphaned|unknown (or not a string)
	ReasonInvalidDetached         = "invalid_detached"           // orphanwatch.detached not a bool
	ReasonInvalidStartedAfterGone = "invalid_started_after_gone" // orphanwatch.started_after_gone not a bool
	ReasonInvalidAfterGone        = "invalid_after_gone"         // orphanwatch.after_gone not a finite number >= 0
	ReasonInvalidAttempt          = "invalid_attempt"            // orphanwatch.attempt not an integer >= 1
	ReasonInvalidRunOutcome       = "invalid_run_outcome"        // orphanwatch.run.outcome not a known outcome
	ReasonInvalidEndReason        = "invalid_end_reason"         // orphanwatch.root.end_reason not a known reason
	ReasonInvalidCallerService    = "invalid_caller_service"     // orphanwatch.caller.service not a non-empty string
	ReasonInvalidModel            = "invalid_model"              // a model attribute that is not a non-empty string
	ReasonInvalidTokens           = "invalid_tokens"             // a token count that is not a finite number >= 0
	ReasonInvalidCost             = "invalid_cost"               // orphanwatch.spend.cost not a finite number >= 0
	ReasonZeroTime                = "zero_time"                  // an attempt span without start or end time
	ReasonEndBeforeStart          = "end_before_start"           // an attempt span that ends before it starts
	ReasonEndInFuture             = "end_in_future"              // an attempt span that ends beyond the clock plus future_tolerance
	ReasonOverMaxDuration         = "over_max_duration"          // an attempt span that lasts longer than max_request_duration
	ReasonInvalidReachHops        = "invalid_reach_hops"         // orphanwatch.cancel.reach_hops not an integer >= 0
	ReasonInvalidDepthHops        = "invalid_depth_hops"         // orphanwatch.orphaned.depth_hops not an integer >= 0
	ReasonInvalidSpendRepeated    = "invalid_spend_repeated"     // orphanwatch.spend.repeated not a bool (the span is not counted by its gen_ai attributes)
	ReasonInvalidSpendNested      = "invalid_spend_nested"       // orphanwatch.spend.nested not a bool (its seconds are counted)
	ReasonInvalidDeferred         = "invalid_deferred"           // orphanwatch.verdict.deferred not a bool (the span is counted as if it were absent)
	ReasonInvalidVerdictEvent     = "invalid_verdict_event"      // an orphanwatch.verdict event with a malformed orphanwatch.span.* or service.name (counted with what is usable)
)

// skipReason indexes skipReasons.
type skipReason uint8

const (
	skipInvalidLiveness skipReason = iota
	skipInvalidDetached
	skipInvalidStartedAfterGone
	skipInvalidAfterGone
	skipInvalidAttempt
	skipInvalidRunOutcome
	skipInvalidEndReason
	skipInvalidCallerService
	skipInvalidModel
	skipInvalidTokens
	skipInvalidCost
	skipZeroTime
	skipEndBeforeStart
	skipInvalidReachHops
	skipInvalidDepthHops
	skipInvalidSpendRepeated
	skipInvalidSpendNested
	skipInvalidDeferred
	skipInvalidVerdictEvent
	skipEndInFuture
	skipOverMaxDuration
	numSkipReasons
)

var skipReasons = [numSkipReasons]string{
	ReasonInvalidLiveness, ReasonInvalidDetached, ReasonInvalidStartedAfterGone,
	ReasonInvalidAfterGone, ReasonInvalidAttempt, ReasonInvalidRunOutcome,
	ReasonInvalidEndReason, ReasonInvalidCallerService, ReasonInvalidModel,
	ReasonInvalidTokens, ReasonInvalidCost, ReasonZeroTime, ReasonEndBeforeStart,
	ReasonInvalidReachHops, ReasonInvalidDepthHops, ReasonInvalidSpendRepeated,
	ReasonInvalidSpendNested, ReasonInvalidDeferred, ReasonInvalidVerdictEvent,
	ReasonEndInFuture, ReasonOverMaxDuration,
}

// Recorder turns spans annotated with orphanwatch.* verdicts (and, for spans
// the processor never saw, gen_ai.* usage) into Prometheus metrics held in a
// private registry. It is what the exporter runs; other programs can use it
// directly, without the collector or HTTP, to obtain the same metrics.
//
// A Recorder is safe for concurrent use. Its counters only grow.
type Recorder struct {
	reg     *prometheus.Registry
	limiter *labellimit.Limiter

	// The counters from span data are bounded by series_limit (serieslimit.go).
	runs           *limitedCounterVec
	attempts       *limitedCounterVec
	roots          *limitedCounterVec
	spendSeconds   *limitedCounterVec
	spendTokens    *limitedCounterVec
	spendCost      *limitedCounterVec
	modelCalls     *limitedCounterVec
	outlive        *limitedHistogramVec
	reach          *limitedHistogramVec
	depth          *limitedHistogramVec
	unpropagated   *limitedCounterVec
	overflow       *prometheus.CounterVec
	skipped        *prometheus.CounterVec
	seriesOverflow *prometheus.CounterVec

	// dims are the configured dimensions (dimensions.go), nil without; limited are the labels
	// from span data: LimitedLabels and the dimensions' labels.
	dims    []dimension
	limited []string
	noAttrs pcommon.Map // an empty map: the attributes of a record kept without them

	// Series handles already used (series.go), and the health counters.
	now      func() time.Time // when exemplars are taken
	svcMu    sync.RWMutex
	services map[string]*serviceSeries
	// dimServices are the services' caches by service and dimension values (dimensions.go).
	dimServices map[string]*serviceSeries
	overflows   map[string]prometheus.Counter // by limited label
	skips       [numSkipReasons]prometheus.Counter

	// Times sane (annotate mode, spans.go recordSpendSeconds and recordOutlive): a span ending
	// more than futureTol (ns) after the Record call, or lasting longer than maxSpan (ns,
	// max_request_duration; 0: no bound), adds no seconds; an after_gone beyond maxSpan is
	// malformed.
	futureTol, maxSpan int64
	// skipLog logs the skips sampled (LogSkips); nil until set.
	skipLog     atomic.Pointer[badinput.Log]
	skippedName string
}

// NewRecorder returns a Recorder for the metric settings of cfg (namespace,
// label limits, series limit, buckets, constant labels, dimensions; in annotate mode also
// future_tolerance and max_request_duration). A nil cfg means [NewDefaultSettings]. It returns
// an error if the metric settings are invalid ([Settings.ValidateMetrics]).
func NewRecorder(cfg *Settings) (*Recorder, error) {
	if cfg == nil {
		cfg = NewDefaultSettings()
	}
	if err := cfg.ValidateMetrics(); err != nil {
		return nil, err
	}
	r := &Recorder{reg: prometheus.NewRegistry(), services: map[string]*serviceSeries{}, now: time.Now}
	r.setDimensions(cfg)
	limited := func(l string) bool { return slices.Contains(r.limited, l) }
	// The labels of a service's series: its own, then the dimensions'.
	svcLabels := func(labels ...string) []string { return append(labels, r.dimLabels()...) }

	health := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace:   cfg.Namespace,
			Name:        name,
			Help:        help,
			ConstLabels: cfg.ConstLabels,
		}, labels)
	}
	// Made first: the limited counters count their overflows in it.
	r.seriesOverflow = health(MetricSeriesOverflow,
		"Uses of a metric's overflow series (labels from span data \"other\") because the metric reached series_limit distinct series, by metric.",
		labelMetric)
	counter := func(name, help string, labels ...string) *limitedCounterVec {
		return newLimitedCounterVec(health(name, help, labels...), labels, limited, cfg.SeriesLimit, r.seriesOverflow.WithLabelValues(name))
	}
	r.runs = counter(MetricRuns,
		"Runs (retry loops of one logical operation) by outcome, counted on the span that closed the run.",
		svcLabels(labelServiceName, labelOperation, labelOutcome)...)
	r.attempts = counter(MetricAttempts,
		"Attempt spans by liveness: live, outlived_root (orphaned, started before the root was gone), started_after_gone, unknown, detached.",
		svcLabels(labelServiceName, labelOperation, labelLiveness)...)
	r.roots = counter(MetricRoots,
		"Root requests by end reason.",
		svcLabels(labelServiceName, labelEndReason)...)
	r.spendSeconds = counter(MetricSpendSeconds,
		"Summed duration in seconds of attempt spans (and of model calls not judged by the processor), by liveness.",
		svcLabels(labelServiceName, labelLiveness)...)
	r.spendTokens = counter(MetricSpendTokens,
		"Model tokens by model, direction (input, output) and liveness.",
		svcLabels(labelServiceName, labelModel, labelDirection, labelLiveness)...)
	r.spendCost = counter(MetricSpendCostUSD,
		"Cost in US dollars of spans carrying orphanwatch.spend.cost, by model and liveness.",
		svcLabels(labelServiceName, labelModel, labelLiveness)...)
	r.modelCalls = counter(MetricModelCalls,
		"Model calls by model and liveness.",
		svcLabels(labelServiceName, labelModel, labelLiveness)...)
	histogram := func(name, help string, buckets []float64) *limitedHistogramVec {
		labels := svcLabels(labelServiceName)
		v := &limitedHistogramVec{HistogramVec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace:   cfg.Namespace,
			Name:        name,
			Help:        help,
			ConstLabels: cfg.ConstLabels,
			Buckets:     slices.Clone(buckets),
		}, labels)}
		if len(r.dims) > 0 {
			v.bound = newSeriesBound(labels, limited, cfg.SeriesLimit, r.seriesOverflow.WithLabelValues(name))
		}
		return v
	}
	r.outlive = histogram(MetricOutlive,
		"How long orphaned spans outlived their root's gone time, in seconds (orphanwatch.after_gone).",
		cfg.OutliveBuckets)
	r.reach = histogram(MetricCancelReach,
		"Cancelled and deadline-exceeded root requests by how many service hops down the cancellation travelled before something noticed it (orphanwatch.cancel.reach_hops).",
		cfg.HopBuckets)
	r.depth = histogram(MetricOrphanedDepth,
		"Cancelled and deadline-exceeded root requests by the deepest service hop still working after the gone time (orphanwatch.orphaned.depth_hops).",
		cfg.HopBuckets)
	r.unpropagated = counter(MetricUnpropagated,
		"Orphaned spans that entered a service whose caller was not orphaned: the edge the cancellation did not cross.",
		labelCallerService, labelCalleeService)
	r.overflow = health(MetricLabelOverflow,
		`Label value occurrences replaced by "other" because the label reached its limit of distinct values.`,
		labelLabel)
	r.skippedName = cfg.Namespace + "_" + MetricSpansSkipped
	r.skipped = health(MetricSpansSkipped,
		"Spans that could not feed a metric because of a malformed attribute or unusable times, by reason.",
		labelReason)

	for _, c := range []prometheus.Collector{
		r.runs, r.attempts, r.roots, r.spendSeconds, r.spendTokens, r.spendCost,
		r.modelCalls, r.outlive, r.reach, r.depth, r.unpropagated, r.overflow, r.skipped,
		r.seriesOverflow,
	} {
		if err := r.reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering metric: %w", err)
		}
	}
	// Create the health series up front so that they read 0, not absent.
	r.overflows = make(map[string]prometheus.Counter, len(r.limited))
	for _, l := range r.limited {
		r.overflows[l] = r.overflow.WithLabelValues(l)
	}
	for i, reason := range skipReasons {
		r.skips[i] = &loggedCounter{Counter: r.skipped.WithLabelValues(reason), r: r, reason: reason}
	}
	// Annotate mode does not validate the rule settings: a negative future_tolerance is read as
	// 0, a max_request_duration <= 0 as no bound.
	r.futureTol, r.maxSpan = max(int64(cfg.FutureTolerance), 0), max(int64(cfg.MaxRequestDuration), 0)

	// Overflows are counted by the recorder, once for every use of an "other" value.
	limiter, err := labellimit.New(cfg.LabelLimits.Default, cfg.LabelLimits.PerLabel, nil)
	if err != nil {
		return nil, fmt.Errorf("label_limits: %w", err)
	}
	r.limiter = limiter
	return r, nil
}

// Record updates the metrics from every span of td, and from every
// orphanwatch.verdict event (a verdict carried for a span that passed
// before it was final) as from the span it is for. It never fails: spans
// with malformed attributes are counted in <namespace>_spans_skipped_total
// and otherwise ignored. td is only read.
func (r *Recorder) Record(td ptrace.Traces) {
	var v spanView
	var cs carried
	var res []string // a resource's dimension values
	now := r.now().UnixNano()
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		resAttrs := rs.Resource().Attributes()
		svc := r.service(serviceName(resAttrs))
		res = r.resourceDims(res, resAttrs) // nil without dimensions
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				span := spans.At(k)
				r.recordSpan(svc, res, span, &v, now)
				if span.Events().Len() != 0 {
					r.recordEvents(svc, res, span, &v, now, &cs)
				}
			}
		}
	}
}

// LogSkips makes the recorder log what it counts in <namespace>_spans_skipped_total to logger,
// sampled: at most one Warn line per reason per 10 s, with the spans skipped since the reason's
// previous line; never anything of the spans. The line cannot name the sender: Record reads
// batches, whose senders a batch processor may have mixed. A nil logger stops the lines.
func (r *Recorder) LogSkips(logger *zap.Logger) {
	if logger == nil {
		r.skipLog.Store(nil)
		return
	}
	r.skipLog.Store(badinput.New(logger, "Spans could not feed a metric (counted; one line per reason per interval)",
		r.skippedName, "spans", 0, nil))
}

// loggedCounter is a series of spans_skipped_total that also logs (LogSkips).
type loggedCounter struct {
	prometheus.Counter
	r      *Recorder
	reason string
}

func (c *loggedCounter) Inc() { c.Add(1) }

func (c *loggedCounter) Add(v float64) {
	c.Counter.Add(v)
	if l := c.r.skipLog.Load(); l != nil {
		l.Add(c.reason, int64(v))
	}
}

// Series returns how many series metric (a Metric* name without namespace, one of the counters
// bounded by series_limit, or with dimensions one of the histograms) has admitted so far, and
// false for a metric without a series limit.
func (r *Recorder) Series(metric string) (int, bool) {
	for _, v := range r.limitedCounters() {
		if v.name == metric {
			return v.vec.lim.len(), true
		}
	}
	for _, h := range []struct {
		name string
		vec  *limitedHistogramVec
	}{{MetricOutlive, r.outlive}, {MetricCancelReach, r.reach}, {MetricOrphanedDepth, r.depth}} {
		if h.name == metric && h.vec.bound != nil {
			return h.vec.bound.lim.len(), true
		}
	}
	return 0, false
}

// limitedCounters lists the counters bounded by series_limit with their names.
func (r *Recorder) limitedCounters() []struct {
	name string
	vec  *limitedCounterVec
} {
	return []struct {
		name string
		vec  *limitedCounterVec
	}{
		{MetricRuns, r.runs}, {MetricAttempts, r.attempts}, {MetricRoots, r.roots},
		{MetricSpendSeconds, r.spendSeconds}, {MetricSpendTokens, r.spendTokens},
		{MetricSpendCostUSD, r.spendCost}, {MetricModelCalls, r.modelCalls},
		{MetricUnpropagated, r.unpropagated},
	}
}

// LimitedLabels returns the labels whose values come from span data, bounded by label_limits:
// [LimitedLabels] and the labels of the configured dimensions.
func (r *Recorder) LimitedLabels() []string { return slices.Clone(r.limited) }

// LabelValues returns how many distinct values label (one of [Recorder.LimitedLabels]) has
// admitted so far; once it reaches its limit, later new values are exported as "other". It is what the
// collector components report as their label_values gauge.
func (r *Recorder) LabelValues(label string) int { return r.limiter.Len(label) }

// Gatherer returns the registry holding the metrics, for use with
// client_golang (promhttp, testutil) or to merge into another registry via
// prometheus.Gatherers.
func (r *Recorder) Gatherer() prometheus.Gatherer { return r.reg }

// Handler returns an HTTP handler that serves the metrics, in OpenMetrics
// (with exemplars) when the scraper asks for it and in the Prometheus text
// format otherwise. It answers on any path; the exporter mounts it at its
// configured path.
func (r *Recorder) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// WriteText writes the current metrics to w in the Prometheus text
// exposition format (version 0.0.4, no exemplars).
func (r *Recorder) WriteText(w io.Writer) error {
	return r.write(w, expfmt.NewFormat(expfmt.TypeTextPlain))
}

// WriteOpenMetrics writes the current metrics to w in the OpenMetrics 1.0
// text format, including the exemplars and the closing "# EOF" line.
func (r *Recorder) WriteOpenMetrics(w io.Writer) error {
	return r.write(w, expfmt.NewFormat(expfmt.TypeOpenMetrics))
}

func (r *Recorder) write(w io.Writer, format expfmt.Format) error {
	mfs, err := r.reg.Gather()
	if err != nil {
		return fmt.Errorf("gathering metrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, format)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("encoding %s: %w", mf.GetName(), err)
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		return c.Close()
	}
	return nil
}

// WriteText is a shortcut for programs that want the metrics of some traces
// as Prometheus text without running the exporter: it records every td into
// a new [Recorder] for cfg (nil means defaults) and writes the result to w.
func WriteText(w io.Writer, cfg *Settings, td ...ptrace.Traces) error {
	r, err := NewRecorder(cfg)
	if err != nil {
		return err
	}
	for _, t := range td {
		r.Record(t)
	}
	return r.WriteText(w)
}
