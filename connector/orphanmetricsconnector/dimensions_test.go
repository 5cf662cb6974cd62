package orphanmetricsconnector

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/rulesconfig"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

var connectorDimensions = []orphanmetrics.DimensionConfig{
	{Name: "deployment.environment.name", Default: "unknown"}, {Name: "team"}, {Name: "tenant"},
}

// pointAttrs returns the attributes of every data point of the named metric, as maps.
func pointAttrs(md pmetric.Metrics, name string) []map[string]any {
	var out []map[string]any
	for m := range metricsNamed(md, name) {
		switch m.Type() {
		case pmetric.MetricTypeSum:
			for _, dp := range m.Sum().DataPoints().All() {
				out = append(out, dp.Attributes().AsRaw())
			}
		case pmetric.MetricTypeHistogram:
			for _, dp := range m.Histogram().DataPoints().All() {
				out = append(out, dp.Attributes().AsRaw())
			}
		}
	}
	return out
}

// TestDimensionsOnDataPoints (annotate): the data points of a service's metrics carry the
// dimensions under their label names, the span's attribute over its resource's; an empty
// dimension (tenant: nowhere, no default) is not sent; unpropagated carries none.
func TestDimensionsOnDataPoints(t *testing.T) {
	sink := new(consumertest.MetricsSink)
	c := newTestConnector(t, connectortest.NewNopSettings(metadata.Type), sink, func(cfg *Config) { cfg.Dimensions = connectorDimensions })
	td := orphanSpan("a", 1)
	rs := td.ResourceSpans().At(0)
	rs.Resource().Attributes().PutStr("deployment.environment.name", "prod")
	rs.Resource().Attributes().PutStr("team", "platform")
	sp := rs.ScopeSpans().At(0).Spans().At(0)
	sp.Attributes().PutStr("team", "research")
	sp.Attributes().PutStr("orphanwatch.caller.service", "gateway")
	require.NoError(t, c.ConsumeTraces(context.Background(), td))
	require.NoError(t, c.ConsumeTraces(context.Background(), orphanSpan("b", 2))) // no attribute
	require.NoError(t, c.flush(context.Background()))
	require.Len(t, sink.AllMetrics(), 1)
	md := sink.AllMetrics()[0]

	assert.ElementsMatch(t, []map[string]any{
		{"service_name": "a", "operation": "POST /run", "outcome": "delivered_to_nobody", "deployment_environment_name": "prod", "team": "research"},
		{"service_name": "b", "operation": "POST /run", "outcome": "delivered_to_nobody", "deployment_environment_name": "unknown"},
	}, pointAttrs(md, "orphanwatch.runs"))
	assert.ElementsMatch(t, []map[string]any{
		{"service_name": "a", "deployment_environment_name": "prod", "team": "research"},
		{"service_name": "b", "deployment_environment_name": "unknown"},
	}, pointAttrs(md, "orphanwatch.outlive"))
	assert.Equal(t, []map[string]any{{"caller_service": "gateway", "callee_service": "a"}}, pointAttrs(md, "orphanwatch.unpropagated"))
}

// TestDimensionsObserved: observing S2 with the dimension attributes, the connector's points of
// the researcher's orphaned model call carry the researcher's span attribute and its resource's
// environment; search-tool's, which has none, the default.
func TestDimensionsObserved(t *testing.T) {
	var td ptrace.Traces
	for _, sc := range scenarios.All() {
		if sc.ID == "S2" {
			td, _ = sc.Build()
		}
	}
	for _, rs := range td.ResourceSpans().All() {
		attrs := rs.Resource().Attributes()
		svc, _ := attrs.Get("service.name")
		if svc.Str() != scenarios.SearchTool {
			attrs.PutStr("deployment.environment.name", "prod")
		}
		if svc.Str() == scenarios.Researcher {
			for _, sp := range rs.ScopeSpans().At(0).Spans().All() {
				sp.Attributes().PutStr("team", "research")
			}
		}
	}
	sink := new(consumertest.MetricsSink)
	c := newTestConnector(t, connectortest.NewNopSettings(metadata.Type), sink, func(cfg *Config) {
		cfg.Mode = orphanmetrics.ModeObserve
		cfg.Dimensions = connectorDimensions
		cfg.DecisionWait = time.Hour
		cfg.Prices = map[string]rulesconfig.PriceConfig{"gpt-4o": {InputPerMillion: 2.50, OutputPerMillion: 10.00}}
	})
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, c.ConsumeTraces(context.Background(), td))
	require.NoError(t, c.Shutdown(context.Background())) // decides what waits, then flushes
	md := sink.AllMetrics()[len(sink.AllMetrics())-1]

	assert.Contains(t, pointAttrs(md, "orphanwatch.model_calls"), map[string]any{
		"service_name": "researcher", "model": "gpt-4o", "liveness": "orphaned", "deployment_environment_name": "prod", "team": "research",
	})
	assert.Contains(t, pointAttrs(md, "orphanwatch.outlive"), map[string]any{"service_name": "search-tool", "deployment_environment_name": "unknown"})
	for _, a := range pointAttrs(md, "orphanwatch.runs") {
		assert.Contains(t, a, "deployment_environment_name", a)
		assert.NotContains(t, a, "tenant", a)
	}
}

// metricsNamed yields every metric of md called name, in every resource and scope.
func metricsNamed(md pmetric.Metrics, name string) iter.Seq[pmetric.Metric] {
	return func(yield func(pmetric.Metric) bool) {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if m.Name() == name && !yield(m) {
						return
					}
				}
			}
		}
	}
}
