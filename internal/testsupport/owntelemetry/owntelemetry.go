// Package owntelemetry reads a component's own telemetry as the tests of the orphanmetrics
// exporter and connector check it: the label-values gauge by component instance. (Their
// documentation.md and metadata.yaml checks are telemetrydoc.CheckComponent.)
package owntelemetry

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// LabelValues reads the gauge `metric` (a component's label_values) from tel and returns the
// values of its label="service_name" points by the instance named in their attribute idAttr
// ("exporter", "connector").
func LabelValues(t *testing.T, tel *componenttest.Telemetry, metric, idAttr string) map[string]int64 {
	t.Helper()
	m, err := tel.GetMetric(metric)
	require.NoError(t, err)
	got := map[string]int64{}
	for _, p := range m.Data.(metricdata.Gauge[int64]).DataPoints {
		label, _ := p.Attributes.Value(attribute.Key("label"))
		if label.AsString() == "service_name" {
			id, _ := p.Attributes.Value(attribute.Key(idAttr))
			got[id.AsString()] = p.Value
		}
	}
	return got
}
