package orphanmetricsconnector // import "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"

import (
	"encoding/hex"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"
	om "github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
)

// metricSpec names one metric of the recorder in OTLP. OTLP name and unit are chosen so that
// the OTLP-to-Prometheus translation (prometheus/otlptranslator, as used by contrib's
// prometheus and prometheusremotewrite exporters with metric suffixes, their default) gives
// back exactly the exporter's name: "." becomes "_", a unit in braces adds nothing, "s" adds
// "_seconds" unless the name has it, and a monotonic sum gets "_total".
type metricSpec struct {
	prom string // the exporter's name without namespace (orphanmetrics.Metric*)
	otlp string // the OTLP name without namespace
	unit string // UCUM
}

// metricSpecs are every metric of the recorder. OTLP name <namespace>.<otlp>.
var metricSpecs = []metricSpec{
	{om.MetricRuns, "runs", "{run}"},
	{om.MetricAttempts, "attempts", "{attempt}"},
	{om.MetricRoots, "roots", "{request}"},
	{om.MetricSpendSeconds, "spend", "s"},
	{om.MetricSpendTokens, "spend.tokens", "{token}"},
	{om.MetricSpendCostUSD, "spend.cost_usd", "{USD}"},
	{om.MetricModelCalls, "model_calls", "{call}"},
	{om.MetricOutlive, "outlive", "s"},
	{om.MetricUnpropagated, "unpropagated", "{span}"},
	{om.MetricCancelReach, "cancel.reach_hops", "{hop}"},
	{om.MetricOrphanedDepth, "orphaned.depth_hops", "{hop}"},
	{om.MetricLabelOverflow, "label_overflow", "{occurrence}"},
	{om.MetricSpansSkipped, "spans_skipped", "{span}"},
	{om.MetricSeriesOverflow, "series_overflow", "{occurrence}"},
}

// Attribute names the converter reads from a series to choose its resource.
const (
	labelServiceName   = "service_name"
	labelCalleeService = "callee_service"

	exemplarTraceID = "trace_id"
	exemplarSpanID  = "span_id"

	// attrServiceName is the resource attribute of the series of one service.
	attrServiceName = "service.name"
)

// converter turns the recorder's gathered state into OTLP metrics.
type converter struct {
	namespace string
	version   string
	start     pcommon.Timestamp // when no series carries its own creation time
	byProm    map[string]metricSpec
	collector pcommon.Resource // the collector's own resource: of the health series

	// exemplarsSince leaves out exemplars taken before it (sent by an earlier flush).
	exemplarsSince time.Time

	// delta sends what each series gained since the last successful flush
	// (aggregation_temporality: delta) instead of its totals.
	delta bool
	// last is what each series had at the last successful flush, at lastFlush (first: the
	// connector's start); next and nextFlush are the flush in progress, made last by commit.
	last, next           map[string]seriesState
	lastFlush, nextFlush pcommon.Timestamp
}

// seriesState is a series' totals at a flush: a counter's value, or a histogram's count, sum
// and per-bucket counts (not cumulative; the last is the +Inf bucket).
type seriesState struct {
	value   float64
	count   uint64
	sum     float64
	buckets []uint64
}

// commit records the flush in progress as sent: the next deltas start from it.
func (c *converter) commit() {
	if c.delta {
		c.last, c.next = c.next, nil
		c.lastFlush = c.nextFlush
	}
}

// seriesKey identifies a series of the recorder: its family's name and its label pairs (which
// client_golang gathers sorted by name).
func seriesKey(family string, m *dto.Metric) string {
	var b strings.Builder
	b.WriteString(family)
	for _, lp := range m.GetLabel() {
		b.WriteByte(0xff)
		b.WriteString(lp.GetName())
		b.WriteByte(0xfe)
		b.WriteString(lp.GetValue())
	}
	return b.String()
}

func newConverter(namespace, version string, start pcommon.Timestamp, collector pcommon.Resource) converter {
	c := converter{namespace: namespace, version: version, start: start, byProm: map[string]metricSpec{}, collector: collector,
		last: map[string]seriesState{}, lastFlush: start}
	for _, s := range metricSpecs {
		c.byProm[namespace+"_"+s.prom] = s
	}
	return c
}

// convert returns the series of mfs as OTLP metrics at now: monotonic sums for the counters,
// explicit-bucket histograms for the histograms; cumulative, or with delta the difference since
// the last successful flush (commit) of each series that changed since, starting at that flush
// (or at the series' creation, if later). The series of one
// service (its service_name label, or callee_service for unpropagated) share a resource with
// service.name set to that label value, as spanmetrics puts a service's metrics under its
// resource; the health series (label_overflow, spans_skipped, series_overflow), which are about the collector,
// are under the collector's own resource (its service.name and service.instance.id), as its
// internal telemetry is. Every label stays a data point attribute, so the Prometheus series are the
// exporter's.
func (c *converter) convert(mfs []*dto.MetricFamily, now pcommon.Timestamp) pmetric.Metrics {
	md := pmetric.NewMetrics()
	type scopeMetrics struct {
		sm      pmetric.ScopeMetrics
		metrics map[string]pmetric.Metric
	}
	scopes := map[string]*scopeMetrics{}
	var keys []string
	metricOf := func(resource string, mf *dto.MetricFamily, spec metricSpec) pmetric.Metric {
		s := scopes[resource]
		if s == nil {
			rm := md.ResourceMetrics().AppendEmpty()
			if resource != "" {
				rm.Resource().Attributes().PutStr(attrServiceName, resource)
			} else {
				c.collector.Attributes().CopyTo(rm.Resource().Attributes())
			}
			sm := rm.ScopeMetrics().AppendEmpty()
			sm.Scope().SetName(metadata.ScopeName)
			sm.Scope().SetVersion(c.version)
			s = &scopeMetrics{sm: sm, metrics: map[string]pmetric.Metric{}}
			scopes[resource] = s
			keys = append(keys, resource)
		}
		m, ok := s.metrics[mf.GetName()]
		if !ok {
			m = s.sm.Metrics().AppendEmpty()
			m.SetName(c.namespace + "." + spec.otlp)
			m.SetUnit(spec.unit)
			m.SetDescription(mf.GetHelp())
			temporality := pmetric.AggregationTemporalityCumulative
			if c.delta {
				temporality = pmetric.AggregationTemporalityDelta
			}
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				m.SetEmptyHistogram().SetAggregationTemporality(temporality)
			default:
				sum := m.SetEmptySum()
				sum.SetAggregationTemporality(temporality)
				sum.SetIsMonotonic(true)
			}
			s.metrics[mf.GetName()] = m
		}
		return m
	}

	if c.delta {
		c.next, c.nextFlush = make(map[string]seriesState, len(c.last)), now
	}
	for _, mf := range mfs {
		spec, ok := c.byProm[mf.GetName()]
		if !ok {
			continue // not a metric of the recorder (none today)
		}
		for _, m := range mf.GetMetric() {
			resource := ""
			for _, lp := range m.GetLabel() {
				if n := lp.GetName(); n == labelServiceName || (n == labelCalleeService && resource == "") {
					resource = lp.GetValue()
				}
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				cnt := m.GetCounter()
				st := seriesState{value: cnt.GetValue()}
				value, start, send := st.value, c.start, true
				if c.delta {
					prev, created := c.previous(mf.GetName(), m, st, cnt.GetCreatedTimestamp(), now)
					value, start = st.value-prev.value, created
					send = value != 0
				}
				if !send {
					continue
				}
				dp := metricOf(resource, mf, spec).Sum().DataPoints().AppendEmpty()
				c.point(m, dp.Attributes(), dp.SetStartTimestamp, dp.SetTimestamp, start, cnt.GetCreatedTimestamp(), now)
				dp.SetDoubleValue(value)
				c.exemplar(dp.Exemplars(), cnt.GetExemplar())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				st := seriesState{count: h.GetSampleCount(), sum: h.GetSampleSum(), buckets: make([]uint64, 0, len(h.GetBucket())+1)}
				var below uint64
				for _, b := range h.GetBucket() {
					st.buckets = append(st.buckets, b.GetCumulativeCount()-below)
					below = b.GetCumulativeCount()
				}
				st.buckets = append(st.buckets, h.GetSampleCount()-below) // (last bound, +Inf)
				out, start := st, c.start
				if c.delta {
					prev, created := c.previous(mf.GetName(), m, st, h.GetCreatedTimestamp(), now)
					out, start = st.minus(prev), created
					if out.count == 0 {
						continue
					}
				}
				dp := metricOf(resource, mf, spec).Histogram().DataPoints().AppendEmpty()
				c.point(m, dp.Attributes(), dp.SetStartTimestamp, dp.SetTimestamp, start, h.GetCreatedTimestamp(), now)
				dp.SetCount(out.count)
				dp.SetSum(out.sum)
				for _, b := range h.GetBucket() {
					dp.ExplicitBounds().Append(b.GetUpperBound())
					c.exemplar(dp.Exemplars(), b.GetExemplar())
				}
				dp.BucketCounts().FromRaw(out.buckets)
			}
		}
	}
	return md
}

// previous records st as the series' state of the flush in progress and returns its state at
// the last successful flush (zero if it had none, or if its totals went down: a new series)
// and the start of its delta: the last flush, or the series' creation if later.
func (c *converter) previous(family string, m *dto.Metric, st seriesState, created *timestamppb.Timestamp, now pcommon.Timestamp) (seriesState, pcommon.Timestamp) {
	key := seriesKey(family, m)
	c.next[key] = st
	prev, seen := c.last[key]
	start := c.lastFlush
	if ct := createdAt(created, now); ct > start {
		start = ct
	}
	if !seen || st.value < prev.value || st.count < prev.count || len(prev.buckets) != len(st.buckets) {
		return seriesState{buckets: make([]uint64, len(st.buckets))}, start
	}
	return prev, start
}

// minus is the histogram gained from p to h.
func (h seriesState) minus(p seriesState) seriesState {
	out := seriesState{count: h.count - p.count, sum: h.sum - p.sum, buckets: make([]uint64, len(h.buckets))}
	for i := range h.buckets {
		out.buckets[i] = h.buckets[i] - p.buckets[i]
	}
	return out
}

// createdAt is a series' creation time when client_golang gives it (and it is not after now),
// else 0.
func createdAt(created *timestamppb.Timestamp, now pcommon.Timestamp) pcommon.Timestamp {
	if created != nil && created.IsValid() {
		if t := pcommon.NewTimestampFromTime(created.AsTime()); t > 0 && t <= now {
			return t
		}
	}
	return 0
}

// point writes a data point's attributes (the series' labels) and times: now, and start; a
// cumulative point (start is then c.start) starts at the series' creation when known.
func (c *converter) point(m *dto.Metric, attrs pcommon.Map, setStart, setTime func(pcommon.Timestamp), start pcommon.Timestamp, created *timestamppb.Timestamp, now pcommon.Timestamp) {
	for _, lp := range m.GetLabel() {
		// An empty label is an absent one in Prometheus: a dimension without value (none of
		// the connector's own labels is ever empty).
		if lp.GetValue() != "" {
			attrs.PutStr(lp.GetName(), lp.GetValue())
		}
	}
	if !c.delta {
		if ct := createdAt(created, now); ct > 0 {
			start = ct
		}
	}
	setStart(start)
	setTime(now)
}

// exemplar appends e (the span that last fed the series: trace and span ID) unless it is
// absent or was sent by an earlier flush.
func (c *converter) exemplar(dst pmetric.ExemplarSlice, e *dto.Exemplar) {
	if e == nil {
		return
	}
	ts := e.GetTimestamp().AsTime()
	if e.GetTimestamp() != nil && ts.Before(c.exemplarsSince) {
		return
	}
	x := dst.AppendEmpty()
	x.SetDoubleValue(e.GetValue())
	if e.GetTimestamp() != nil {
		x.SetTimestamp(pcommon.NewTimestampFromTime(ts))
	}
	for _, lp := range e.GetLabel() {
		switch lp.GetName() {
		case exemplarTraceID:
			var id pcommon.TraceID
			if decodeID(id[:], lp.GetValue()) {
				x.SetTraceID(id)
			}
		case exemplarSpanID:
			var id pcommon.SpanID
			if decodeID(id[:], lp.GetValue()) {
				x.SetSpanID(id)
			}
		default:
			x.FilteredAttributes().PutStr(lp.GetName(), lp.GetValue())
		}
	}
}

func decodeID(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	_, err := hex.Decode(dst, []byte(strings.ToLower(s)))
	return err == nil
}
