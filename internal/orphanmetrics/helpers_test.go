package orphanmetrics

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/recordertest"
)

// The traces the tests build are recordertest's, shared with the orphanmetrics exporter's tests.
type (
	testSpan     = recordertest.Span
	testResource = recordertest.Resource
)

var (
	t0     = recordertest.T0
	traceA = recordertest.TraceA
	traceB = recordertest.TraceB
)

// samples gathers g and returns every sample of the named metric family as
// `{label="value",...}` (labels sorted, constant labels included) -> value.
// Histograms give `_count`, `_sum` and `_bucket{...,le="x"}` entries.
func samples(t testing.TB, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := recordertest.LabelString(m.GetLabel())
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[labels] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out["_count"+labels] = float64(h.GetSampleCount())
				out["_sum"+labels] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					bl := append(slices.Clone(m.GetLabel()), &dto.LabelPair{Name: new("le"), Value: new(fmt.Sprint(b.GetUpperBound()))})
					out["_bucket"+recordertest.LabelString(bl)] = float64(b.GetCumulativeCount())
				}
			default:
				t.Fatalf("unexpected type %v of %s", mf.GetType(), name)
			}
		}
	}
	return out
}

// exemplars returns, per series of the named counter family, the labels of
// its exemplar (nil when the series has none). For histograms the exemplars
// of all buckets are merged.
func exemplars(t testing.TB, g prometheus.Gatherer, name string) map[string]map[string]string {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	out := map[string]map[string]string{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var exs []*dto.Exemplar
			if c := m.GetCounter(); c != nil && c.GetExemplar() != nil {
				exs = append(exs, c.GetExemplar())
			}
			if h := m.GetHistogram(); h != nil {
				for _, b := range h.GetBucket() {
					if b.GetExemplar() != nil {
						exs = append(exs, b.GetExemplar())
					}
				}
			}
			var labels map[string]string
			for _, ex := range exs {
				if labels == nil {
					labels = map[string]string{}
				}
				for _, l := range ex.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
			}
			out[recordertest.LabelString(m.GetLabel())] = labels
		}
	}
	return out
}

// gatherText returns the named families of g in the Prometheus text format,
// in the registry's (sorted) order.
func gatherText(t testing.TB, g prometheus.Gatherer, names ...string) string {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if slices.Contains(names, mf.GetName()) {
			require.NoError(t, enc.Encode(mf))
		}
	}
	return buf.String()
}
