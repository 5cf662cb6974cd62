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
	om "github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"
)

// metricSpec names one metric of the recorder in OTLP. OTLP name and unit are chosen so that
// the OTLP-to-Prometheus translation (prometheus/otlptranslator, as used by contrib's
// prometheus and prometheusremotewrite exporters with metric suffixes, their default) gives
// back exactly the exporter's name: "." becomes "_", a unit in braces adds nothing, "s" adds
// "_seconds" unless the name has it, and a monotonic sum gets "_total".
type metricSpec struct {
	prom string // the exporter's name without namespace (orphanmetricsexporter.Metric*)
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
}

func newConverter(namespace, version string, start pcommon.Timestamp, collector pcommon.Resource) converter {
	c := converter{namespace: namespace, version: version, start: start, byProm: map[string]metricSpec{}, collector: collector}
	for _, s := range metricSpecs {
		c.byProm[namespace+"_"+s.prom] = s
	}
	return c
}

// convert returns the series of mfs as OTLP metrics at now: cumulative monotonic sums for the
// counters, cumulative explicit-bucket histograms for the histograms. The series of one
// service (its service_name label, or callee_service for unpropagated) share a resource with
// service.name set to that label value, as spanmetrics puts a service's metrics under its
// resource; the health series (label_overflow, spans_skipped), which are about the collector,
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
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			default:
				sum := m.SetEmptySum()
				sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				sum.SetIsMonotonic(true)
			}
			s.metrics[mf.GetName()] = m
		}
		return m
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
			metric := metricOf(resource, mf, spec)
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				dp := metric.Sum().DataPoints().AppendEmpty()
				c.point(m, dp.Attributes(), dp.SetStartTimestamp, dp.SetTimestamp, m.GetCounter().GetCreatedTimestamp(), now)
				dp.SetDoubleValue(m.GetCounter().GetValue())
				c.exemplar(dp.Exemplars(), m.GetCounter().GetExemplar())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				dp := metric.Histogram().DataPoints().AppendEmpty()
				c.point(m, dp.Attributes(), dp.SetStartTimestamp, dp.SetTimestamp, h.GetCreatedTimestamp(), now)
				dp.SetCount(h.GetSampleCount())
				dp.SetSum(h.GetSampleSum())
				bounds := dp.ExplicitBounds()
				counts := dp.BucketCounts()
				var below uint64
				for _, b := range h.GetBucket() {
					bounds.Append(b.GetUpperBound())
					counts.Append(b.GetCumulativeCount() - below)
					below = b.GetCumulativeCount()
					c.exemplar(dp.Exemplars(), b.GetExemplar())
				}
				counts.Append(h.GetSampleCount() - below) // (last bound, +Inf)
			}
		}
	}
	return md
}

func (c *converter) point(m *dto.Metric, attrs pcommon.Map, setStart, setTime func(pcommon.Timestamp), created *timestamppb.Timestamp, now pcommon.Timestamp) {
	for _, lp := range m.GetLabel() {
		attrs.PutStr(lp.GetName(), lp.GetValue())
	}
	start := c.start // the series' creation time, when client_golang gives it
	if created != nil && created.IsValid() {
		if t := pcommon.NewTimestampFromTime(created.AsTime()); t > 0 && t <= now {
			start = t
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
