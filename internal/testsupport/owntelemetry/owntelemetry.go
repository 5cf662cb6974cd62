// Package owntelemetry holds the checks of a component's own telemetry that the tests of the
// orphanmetrics exporter and connector share: documentation.md and metadata.yaml in step with
// the instruments the generated telemetry builder creates, and the label-values gauge read per
// component instance.
package owntelemetry

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/telemetrydoc"
)

// CheckDocumentation creates the telemetry builder with newBuilder (the component's
// metadata.NewTelemetryBuilder) on a recording provider and requires the instruments it creates
// to match documentation.md (names, descriptions, units and types) and metadata.yaml (every
// metric as mdatagen would generate it, and no other), both in the test's working directory.
func CheckDocumentation[B interface{ Shutdown() }, O any](t *testing.T, newBuilder func(component.TelemetrySettings, ...O) (B, error)) {
	t.Helper()
	prov := &telemetrydoc.Provider{}
	set := componenttest.NewNopTelemetrySettings()
	set.MeterProvider = prov
	tb, err := newBuilder(set)
	require.NoError(t, err)
	tb.Shutdown()
	insts := prov.Instruments()
	require.NotEmpty(t, insts, "no instruments recorded")
	for _, p := range telemetrydoc.Check("documentation.md", insts) {
		t.Error(p)
	}
	want, err := telemetrydoc.FromMetadata("metadata.yaml")
	require.NoError(t, err)
	assert.Equal(t, want, insts, "metadata.yaml")
}

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
