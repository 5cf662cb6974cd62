package orphanmetricsconnector

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
)

func TestLoadConfig(t *testing.T) {
	load := func(name string) (*Config, error) {
		cfg := componentcheck.Config(t, NewFactory(), component.NewIDWithName(metadata.Type, name).String())
		return cfg.(*Config), confmap.Validate(cfg)
	}

	def, err := load("")
	require.NoError(t, err)
	e := orphanmetrics.NewDefaultSettings()
	assert.Equal(t, 60*time.Second, def.MetricsFlushInterval)
	assert.Equal(t, e.Namespace, def.Namespace)
	assert.Equal(t, e.LabelLimits, def.LabelLimits)
	assert.Equal(t, e.OutliveBuckets, def.OutliveBuckets)
	assert.Equal(t, e.HopBuckets, def.HopBuckets)
	assert.Equal(t, TemporalityCumulative, def.AggregationTemporality)

	custom, err := load("custom")
	require.NoError(t, err)
	assert.Equal(t, 15*time.Second, custom.MetricsFlushInterval)
	assert.Equal(t, "agents", custom.Namespace)
	assert.Equal(t, 50, custom.LabelLimits.Default)
	assert.Equal(t, map[string]int{"operation": 10, "model": 5}, custom.LabelLimits.PerLabel)
	assert.Equal(t, []float64{0.5, 1, 5, 30}, custom.OutliveBuckets)
	assert.Equal(t, []float64{0, 1, 2}, custom.HopBuckets)
	assert.Equal(t, map[string]string{"cluster": "eu-1"}, custom.ConstLabels)
	assert.Equal(t, TemporalityDelta, custom.AggregationTemporality)
	dims, err := load("dimensions")
	require.NoError(t, err)
	assert.Equal(t, []orphanmetrics.DimensionConfig{{Name: "deployment.environment.name", Default: "unknown"}, {Name: "team"}}, dims.Dimensions)
	dimsRec, err := orphanmetrics.NewRecorder(&dims.Settings) // what newConnector records with
	require.NoError(t, err)
	assert.Subset(t, dimsRec.LimitedLabels(), []string{"deployment_environment_name", "team"})
	sm, err := load("spanmetrics_temporality")
	require.NoError(t, err)
	assert.Equal(t, TemporalityDelta, sm.temporality())
	assert.Equal(t, TemporalityCumulative, def.temporality())

	for name, want := range map[string][]string{
		"bad_interval":     {"metrics_flush_interval: must be positive, got 0s"},
		"bad_namespace":    {`namespace: "orphan-watch" must match`},
		"bad_buckets":      {"outlive_buckets[1]: must be greater than the previous bound 1, got 0.5"},
		"bad_limits":       {"label_limits::default: must be positive, got 0", `label_limits::per_label: unknown label "span_id"`},
		"bad_const_labels": {`const_labels: "service_name" is used by the exporter's own labels`},
		"bad_temporality":  {`aggregation_temporality: must be cumulative or delta, got "deltas"`},
		"bad_dimensions":   {"dimensions[1].name: must not be empty", `dimensions[2].name: "model" gives label "model", which the exporter's own labels use`},
	} {
		_, err := load(name)
		if assert.Error(t, err, name) {
			for _, w := range want {
				assert.Contains(t, err.Error(), w, name)
			}
		}
	}
}

// TestEveryRecorderMetricHasAnOTLPName: every family the recorder gathers has an OTLP name, so
// none is left out of a flush.
func TestEveryRecorderMetricHasAnOTLPName(t *testing.T) {
	rec, err := orphanmetrics.NewRecorder(nil)
	require.NoError(t, err)
	mfs, err := rec.Gatherer().Gather()
	require.NoError(t, err)
	conv := newConverter("orphanwatch", "", 1, pcommon.NewResource())
	require.Len(t, conv.byProm, len(metricSpecs), "two specs for one metric")
	for _, mf := range mfs {
		assert.Contains(t, conv.byProm, mf.GetName())
	}
	// The histograms and vectors appear once used; the names are the exporter's constants.
	for _, s := range metricSpecs {
		assert.NotEmpty(t, s.otlp, s.prom)
	}
}

// TestHealthSeriesUnderCollectorResource: label_overflow and spans_skipped are sent under the
// collector's own resource, the service series under their service's.
func TestHealthSeriesUnderCollectorResource(t *testing.T) {
	rec, err := orphanmetrics.NewRecorder(nil)
	require.NoError(t, err)
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc")
	rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty().Attributes().PutStr("orphanwatch.root.end_reason", "completed")
	rec.Record(td)
	mfs, err := rec.Gatherer().Gather()
	require.NoError(t, err)
	col := pcommon.NewResource()
	col.Attributes().PutStr("service.name", "otelcol-orphanwatch")
	col.Attributes().PutStr("service.instance.id", "0f1e")
	conv := newConverter("orphanwatch", "v1", 1, col)
	md := conv.convert(mfs, 2)
	byResource := map[string][]string{}
	for _, rm := range md.ResourceMetrics().All() {
		key := ""
		for k, v := range rm.Resource().Attributes().All() {
			key += k + "=" + v.Str() + ";"
		}
		for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
			byResource[key] = append(byResource[key], m.Name())
		}
	}
	assert.Equal(t, map[string][]string{
		"service.name=otelcol-orphanwatch;service.instance.id=0f1e;": {"orphanwatch.label_overflow", "orphanwatch.series_overflow", "orphanwatch.spans_skipped"},
		"service.name=svc;": {"orphanwatch.roots"},
	}, byResource)
}

// keys is refused with a message naming the field: the connector does not share keys across a
// tier (the observing exporter and the orphan processor do).
func TestKeysRefused(t *testing.T) {
	cfg := NewDefaultConfig()
	require.NoError(t, cfg.Validate())
	id := component.MustNewID("orphan_keys")
	cfg.Keys = &id
	err := cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "keys: the orphanmetrics connector does not share keys")
}
