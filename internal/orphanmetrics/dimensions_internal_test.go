package orphanmetrics

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDimensionsValidate: a dimension whose name is empty, makes no label, is another's after
// sanitising, or collides with the exporter's own labels or const_labels fails at start-up,
// naming dimensions[i].name; per_label accepts a dimension's label.
func TestDimensionsValidate(t *testing.T) {
	tests := map[string]struct {
		dims []DimensionConfig
		cnst map[string]string
		per  map[string]int
		want []string
	}{
		"empty": {dims: []DimensionConfig{{Name: "team"}, {Name: " "}}, want: []string{"dimensions[1].name: must not be empty"}},
		"duplicate after sanitising": {
			dims: []DimensionConfig{{Name: "deployment.environment.name"}, {Name: "deployment_environment_name"}},
			want: []string{`dimensions[1].name: "deployment_environment_name" gives label "deployment_environment_name", as dimensions[0].name "deployment.environment.name" does`},
		},
		"same name twice": {
			dims: []DimensionConfig{{Name: "team"}, {Name: "x"}, {Name: "team"}},
			want: []string{`dimensions[2].name: "team" gives label "team", as dimensions[0].name "team" does`},
		},
		"own labels": {
			dims: []DimensionConfig{{Name: "service.name"}, {Name: "operation"}, {Name: "end.reason"}, {Name: "le"}},
			want: []string{
				`dimensions[0].name: "service.name" gives label "service_name", which the exporter's own labels use`,
				`dimensions[1].name: "operation" gives label "operation"`,
				`dimensions[2].name: "end.reason" gives label "end_reason"`,
				`dimensions[3].name: "le" gives label "le"`,
			},
		},
		"const label": {
			dims: []DimensionConfig{{Name: "k8s.cluster"}}, cnst: map[string]string{"k8s_cluster": "eu-1"},
			want: []string{`dimensions[0].name: "k8s.cluster" gives label "k8s_cluster", a const_labels name`},
		},
		"reserved": {dims: []DimensionConfig{{Name: "__name__"}}, want: []string{`dimensions[0].name: "__name__" gives label "__name__": names starting with "__" are reserved`}},
		"no label": {dims: []DimensionConfig{{Name: "..."}}, want: []string{`dimensions[0].name: "..." makes no Prometheus label name`}},
		"per_label unknown": {
			dims: []DimensionConfig{{Name: "team"}}, per: map[string]int{"tenant": 3},
			want: []string{`label_limits::per_label: unknown label "tenant"`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := NewDefaultSettings()
			cfg.Dimensions, cfg.ConstLabels, cfg.LabelLimits.PerLabel = tc.dims, tc.cnst, tc.per
			err := validateSettings(cfg)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			_, err = NewRecorder(cfg)
			require.Error(t, err, "the recorder refuses it too")
		})
	}

	cfg := NewDefaultSettings()
	cfg.Dimensions = []DimensionConfig{{Name: "deployment.environment.name", Default: "unknown"}, {Name: "2fa"}, {Name: "team"}}
	cfg.LabelLimits.PerLabel = map[string]int{"team": 3, "deployment_environment_name": 2}
	require.NoError(t, validateSettings(cfg))
	rec, err := NewRecorder(cfg)
	require.NoError(t, err)
	assert.Equal(t, []string{"service_name", "operation", "model", "caller_service", "callee_service", "deployment_environment_name", "key_2fa", "team"}, rec.LimitedLabels())
}

// dimSpan is an annotated attempt span that closed a successful run, with attrs.
func dimSpan(attrs map[string]any) testSpan {
	a := map[string]any{
		"orphanwatch.liveness": "live", "orphanwatch.attempt": int64(1), "orphanwatch.run.outcome": "success",
	}
	for k, v := range attrs {
		a[k] = v
	}
	return testSpan{name: "work", traceID: traceA, start: 0, end: 2e9, attrs: a}
}

// TestDimensionsValues: a span's attribute wins over its resource's, then the default, else
// the label is empty; values of other types are written as strings, sanitised.
func TestDimensionsValues(t *testing.T) {
	cfg := NewDefaultSettings()
	cfg.Dimensions = []DimensionConfig{{Name: "env", Default: "unknown"}, {Name: "team"}, {Name: "shard"}}
	rec, err := NewRecorder(cfg)
	require.NoError(t, err)
	td := buildTraces(t,
		testResource{service: "api", spans: []testSpan{
			dimSpan(map[string]any{"team": "a"}),
			dimSpan(map[string]any{"team": "a", "env": "canary"}),
			dimSpan(nil),
			dimSpan(map[string]any{"shard": int64(7), "team": "  b  "}),
			dimSpan(map[string]any{"shard": true, "team": ""}), // an empty value: the resource's
		}},
		testResource{service: "db", spans: []testSpan{dimSpan(nil)}},
	)
	res := td.ResourceSpans().At(0).Resource().Attributes()
	res.PutStr("env", "prod")
	res.PutStr("team", "platform")
	rec.Record(td)

	assert.Equal(t, map[string]float64{
		`{env="prod",operation="work",outcome="success",service_name="api",shard="",team="a"}`:            1,
		`{env="canary",operation="work",outcome="success",service_name="api",shard="",team="a"}`:          1,
		`{env="prod",operation="work",outcome="success",service_name="api",shard="",team="platform"}`:     1,
		`{env="prod",operation="work",outcome="success",service_name="api",shard="7",team="b"}`:           1,
		`{env="prod",operation="work",outcome="success",service_name="api",shard="true",team="platform"}`: 1,
		`{env="unknown",operation="work",outcome="success",service_name="db",shard="",team=""}`:           1,
	}, samples(t, rec.Gatherer(), "orphanwatch_runs_total"))
	assert.Equal(t, 2.0, samples(t, rec.Gatherer(), "orphanwatch_spend_seconds_total")[`{env="prod",liveness="live",service_name="api",shard="",team="a"}`])
}

// TestDimensionsLabelLimit: a dimension with more values than its label limit exports the later
// ones as "other", counting each use in label_overflow_total{label}; the default and the empty
// value take no room.
func TestDimensionsLabelLimit(t *testing.T) {
	cfg := NewDefaultSettings()
	cfg.Dimensions = []DimensionConfig{{Name: "team", Default: "none"}, {Name: "tenant"}}
	cfg.LabelLimits.PerLabel = map[string]int{"team": 2}
	rec, err := NewRecorder(cfg)
	require.NoError(t, err)
	var spans []testSpan
	for _, team := range []string{"a", "b", "c", "d", "c", "", "a"} {
		attrs := map[string]any{}
		if team != "" {
			attrs["team"] = team
		}
		spans = append(spans, dimSpan(attrs))
	}
	rec.Record(buildTraces(t, testResource{service: "api", spans: spans}))

	assert.Equal(t, map[string]float64{
		`{operation="work",outcome="success",service_name="api",team="a",tenant=""}`:     2,
		`{operation="work",outcome="success",service_name="api",team="b",tenant=""}`:     1,
		`{operation="work",outcome="success",service_name="api",team="other",tenant=""}`: 3,
		`{operation="work",outcome="success",service_name="api",team="none",tenant=""}`:  1,
	}, samples(t, rec.Gatherer(), "orphanwatch_runs_total"))
	overflow := samples(t, rec.Gatherer(), "orphanwatch_label_overflow_total")
	assert.Equal(t, 3.0, overflow[`{label="team"}`], "c, d, c")
	assert.Equal(t, 0.0, overflow[`{label="tenant"}`], "read 0, not absent")
	assert.Contains(t, overflow, `{label="tenant"}`)
	assert.Equal(t, 2, rec.LabelValues("team"), "a and b: not the default")
}

// TestDimensionsSeriesLimit: with dimensions series_limit bounds the tuples of each metric,
// the histograms too: beyond it a new tuple goes to the overflow series, its labels from span
// data (the dimensions' too) "other".
func TestDimensionsSeriesLimit(t *testing.T) {
	cfg := NewDefaultSettings()
	cfg.Dimensions = []DimensionConfig{{Name: "team"}}
	cfg.SeriesLimit = 2
	rec, err := NewRecorder(cfg)
	require.NoError(t, err)
	var spans []testSpan
	for _, team := range []string{"a", "b", "c", "d"} {
		s := dimSpan(map[string]any{"team": team})
		s.attrs["orphanwatch.liveness"] = "orphaned"
		s.attrs["orphanwatch.after_gone"] = 1.0
		spans = append(spans, s)
	}
	rec.Record(buildTraces(t, testResource{service: "api", spans: spans}))

	assert.Equal(t, map[string]float64{
		`{operation="work",outcome="success",service_name="api",team="a"}`:        1,
		`{operation="work",outcome="success",service_name="api",team="b"}`:        1,
		`{operation="other",outcome="success",service_name="other",team="other"}`: 2,
	}, samples(t, rec.Gatherer(), "orphanwatch_runs_total"))
	outlive := samples(t, rec.Gatherer(), "orphanwatch_outlive_seconds")
	assert.Equal(t, 1.0, outlive[`_count{service_name="api",team="a"}`])
	assert.Equal(t, 1.0, outlive[`_count{service_name="api",team="b"}`])
	assert.Equal(t, 2.0, outlive[`_count{service_name="other",team="other"}`])
	over := samples(t, rec.Gatherer(), "orphanwatch_series_overflow_total")
	assert.Equal(t, 2.0, over[`{metric="runs_total"}`])
	assert.Equal(t, 2.0, over[`{metric="outlive_seconds"}`])
	n, ok := rec.Series(MetricOutlive)
	assert.True(t, ok)
	assert.Equal(t, 2, n)

	// Without dimensions the histograms have no series limit (label_limits bound them).
	plain, err := NewRecorder(NewDefaultSettings())
	require.NoError(t, err)
	_, ok = plain.Series(MetricOutlive)
	assert.False(t, ok)
}

// TestDimensionsCarriedEvent: in annotate mode a verdict carried on an orphanwatch.verdict event
// takes its dimension values from the event's attributes, else (for a span of the carrying
// span's service) that resource's, else the defaults; never the carrying span's attributes.
func TestDimensionsCarriedEvent(t *testing.T) {
	cfg := NewDefaultSettings()
	cfg.Dimensions = []DimensionConfig{{Name: "env", Default: "unknown"}, {Name: "team"}}
	rec, err := NewRecorder(cfg)
	require.NoError(t, err)
	td := buildTraces(t, testResource{service: "api", spans: []testSpan{{name: "root", traceID: traceA, end: 3e9, attrs: map[string]any{"team": "carrier"}}}})
	td.ResourceSpans().At(0).Resource().Attributes().PutStr("env", "prod")
	sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	event := func(service string, attrs map[string]any) {
		ev := sp.Events().AppendEmpty()
		ev.SetName(eventVerdict)
		a := ev.Attributes()
		a.PutStr(attrEventSpanName, "work")
		a.PutStr(attrEventService, service)
		a.PutStr("orphanwatch.run.outcome", "success")
		for k, v := range attrs {
			a.PutStr(k, v.(string))
		}
	}
	event("api", nil)
	event("api", map[string]any{"team": "t1", "env": "staging"})
	event("worker", nil)
	rec.Record(td)
	assert.Equal(t, map[string]float64{
		`{env="prod",operation="work",outcome="success",service_name="api",team=""}`:       1,
		`{env="staging",operation="work",outcome="success",service_name="api",team="t1"}`:  1,
		`{env="unknown",operation="work",outcome="success",service_name="worker",team=""}`: 1,
	}, samples(t, rec.Gatherer(), "orphanwatch_runs_total"))
}

// validateSettings checks cfg as a component's Validate does (the HTTP settings aside): its
// metric settings, then its mode and rules.
func validateSettings(cfg *Settings) error {
	return errors.Join(cfg.ValidateMetrics(), cfg.ValidateMode())
}
