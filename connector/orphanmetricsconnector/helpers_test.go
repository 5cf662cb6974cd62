package orphanmetricsconnector_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/httpbody"
)

// freeAddr returns a 127.0.0.1 address with a port free a moment ago and not handed out before
// in this process (e2e.FreePort).
func freeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", e2e.FreePort(t))
}

// sample is one Prometheus sample as a scrape shows it: name, its labels sorted, the type of
// its family.
type sample struct {
	typ   dto.MetricType
	value float64
}

// flatten turns metric families into samples keyed `name{l="v",...}` (labels sorted), the
// histograms into their _bucket, _sum and _count samples. drop leaves labels out of the key.
func flatten(mfs []*dto.MetricFamily, drop func(label string) bool) map[string]sample {
	out := map[string]sample{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				if drop == nil || !drop(lp.GetName()) {
					labels = append(labels, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
				}
			}
			key := func(suffix string, extra ...string) string {
				l := slices.Sorted(slices.Values(append(slices.Clone(labels), extra...)))
				return mf.GetName() + suffix + "{" + strings.Join(l, ",") + "}"
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key("")] = sample{mf.GetType(), m.GetCounter().GetValue()}
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[key("_count")] = sample{mf.GetType(), float64(h.GetSampleCount())}
				out[key("_sum")] = sample{mf.GetType(), h.GetSampleSum()}
				for _, b := range h.GetBucket() {
					out[key("_bucket", fmt.Sprintf("le=%q", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)))] = sample{mf.GetType(), float64(b.GetCumulativeCount())}
				}
				out[key("_bucket", `le="+Inf"`)] = sample{mf.GetType(), float64(h.GetSampleCount())}
			default:
				out[key("")] = sample{mf.GetType(), m.GetGauge().GetValue()}
			}
		}
	}
	return out
}

// parseText parses the Prometheus text format.
func parseText(t testing.TB, r io.Reader) []*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	require.NoError(t, err)
	var out []*dto.MetricFamily
	for _, f := range fams {
		out = append(out, f)
	}
	return out
}

// scrape reads url in the Prometheus text format.
func scrape(t testing.TB, url string) []*dto.MetricFamily {
	t.Helper()
	code, b := httpbody.Get(t, url)
	require.Equal(t, http.StatusOK, code, "%s", b)
	return parseText(t, bytes.NewReader(b))
}

func ptr[T any](v T) *T { return &v }

// flatKey is a series' key as flatten writes it: name{labels sorted}.
func flatKey(name string, labels []*dto.LabelPair) string {
	var l []string
	for _, lp := range labels {
		l = append(l, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
	}
	slices.Sort(l)
	return name + "{" + strings.Join(l, ",") + "}"
}

// exemplarString writes an exemplar's value and labels (trace_id, span_id) for comparison.
func exemplarString(v float64, labels []*dto.LabelPair) string {
	return strconv.FormatFloat(v, 'g', -1, 64) + flatKey("", labels) + ";"
}

// point is an OTLP data point, a sum's or a histogram's.
type point struct {
	typ         pmetric.MetricType
	labels      []*dto.LabelPair
	attrs       pcommon.Map
	start, time pcommon.Timestamp
	sum         float64
	hist        pmetric.HistogramDataPoint
	exemplars   pmetric.ExemplarSlice
}

func dataPoints(m pmetric.Metric) []point {
	var out []point
	labels := func(attrs pcommon.Map) []*dto.LabelPair {
		var l []*dto.LabelPair
		for k, v := range attrs.All() {
			l = append(l, &dto.LabelPair{Name: ptr(k), Value: ptr(v.AsString())})
		}
		return l
	}
	switch m.Type() {
	case pmetric.MetricTypeSum:
		for _, dp := range m.Sum().DataPoints().All() {
			out = append(out, point{typ: m.Type(), labels: labels(dp.Attributes()), attrs: dp.Attributes(), start: dp.StartTimestamp(), time: dp.Timestamp(), sum: dp.DoubleValue(), exemplars: dp.Exemplars()})
		}
	case pmetric.MetricTypeHistogram:
		for _, dp := range m.Histogram().DataPoints().All() {
			out = append(out, point{typ: m.Type(), labels: labels(dp.Attributes()), attrs: dp.Attributes(), start: dp.StartTimestamp(), time: dp.Timestamp(), hist: dp, exemplars: dp.Exemplars()})
		}
	}
	return out
}

// samples are the point's Prometheus samples under name, keyed as flatten keys them.
func (p point) samples(name string) map[string]sample {
	out := map[string]sample{}
	switch p.typ {
	case pmetric.MetricTypeSum:
		out[flatKey(name, p.labels)] = sample{dto.MetricType_COUNTER, p.sum}
	case pmetric.MetricTypeHistogram:
		h := p.hist
		out[flatKey(name+"_count", p.labels)] = sample{dto.MetricType_HISTOGRAM, float64(h.Count())}
		out[flatKey(name+"_sum", p.labels)] = sample{dto.MetricType_HISTOGRAM, h.Sum()}
		var cum uint64
		for i, c := range h.BucketCounts().All() {
			cum += c
			le := "+Inf"
			if i < h.ExplicitBounds().Len() {
				le = strconv.FormatFloat(h.ExplicitBounds().At(i), 'g', -1, 64)
			}
			out[flatKey(name+"_bucket", append(slices.Clone(p.labels), &dto.LabelPair{Name: ptr("le"), Value: ptr(le)}))] = sample{dto.MetricType_HISTOGRAM, float64(cum)}
		}
	}
	return out
}

func strconvQuote(s string) string { return strconv.Quote(s) }
