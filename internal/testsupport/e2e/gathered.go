package e2e

import (
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// GatheredSeries flattens every non-zero series g gathers, leaving out the families named in
// skip: a counter as `name,label=value,...` (labels in the order gathered) with its value
// rounded to 1e-9, a histogram as its `_count`, `_sum` (rounded to 1e-9) and `_bucket_<le>`
// series. Two series maps from the same code compare equal where the counts do.
func GatheredSeries(t require.TestingT, g prometheus.Gatherer, skip ...string) map[string]float64 {
	fams, err := g.Gather()
	require.NoError(t, err)
	res := map[string]float64{}
	for _, f := range fams {
		name := f.GetName()
		if slices.Contains(skip, name) {
			continue
		}
		for _, m := range f.GetMetric() {
			key := name
			for _, lp := range m.GetLabel() {
				key += "," + lp.GetName() + "=" + lp.GetValue()
			}
			if c := m.GetCounter(); c != nil && c.GetValue() != 0 {
				res[key] = math.Round(c.GetValue()*1e9) / 1e9
			}
			if h := m.GetHistogram(); h != nil && h.GetSampleCount() != 0 {
				res[key+"_count"] = float64(h.GetSampleCount())
				res[key+"_sum"] = math.Round(h.GetSampleSum()*1e9) / 1e9
				for _, b := range h.GetBucket() {
					res[fmt.Sprintf("%s_bucket_%v", key, b.GetUpperBound())] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return res
}
