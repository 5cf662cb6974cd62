package orphanmetricsexporter

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
)

func loadConfig(t *testing.T, name string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}

func TestDefaultConfig(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, componenttest.CheckConfigStruct(cfg))
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, "localhost:9464", cfg.NetAddr.Endpoint)
	assert.Equal(t, "/metrics", cfg.Path)
	assert.Equal(t, "orphanwatch", cfg.Namespace)
	assert.Equal(t, 500, cfg.LabelLimits.Default)
	assert.Empty(t, cfg.LabelLimits.PerLabel)
	assert.Equal(t, []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}, cfg.OutliveBuckets)
	assert.Empty(t, cfg.ConstLabels)
}

func TestLoadConfig(t *testing.T) {
	// An empty section gives the defaults.
	assert.Equal(t, NewDefaultConfig(), loadConfig(t, ""))

	cfg := loadConfig(t, "custom")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, "0.0.0.0:19464", cfg.NetAddr.Endpoint)
	assert.Equal(t, "/orphan/metrics", cfg.Path)
	assert.Equal(t, "agents", cfg.Namespace)
	assert.Equal(t, 50, cfg.LabelLimits.Default)
	assert.Equal(t, map[string]int{"operation": 10, "model": 5}, cfg.LabelLimits.PerLabel)
	assert.Equal(t, []float64{0.5, 1, 5, 30}, cfg.OutliveBuckets)
	assert.Equal(t, map[string]string{"cluster": "eu-1"}, cfg.ConstLabels)
	// Squashed server settings other than the endpoint keep their defaults.
	assert.Equal(t, NewDefaultConfig().WriteTimeout, cfg.WriteTimeout)
}

func TestLoadConfigInvalid(t *testing.T) {
	tests := map[string][]string{
		"bad_path":      {`path: must start with "/", got "metrics"`},
		"bad_namespace": {`namespace: "orphan-watch" must match`},
		"bad_buckets":   {"outlive_buckets[1]: must be greater than the previous bound 1, got 0.5"},
		"bad_limits": {
			"label_limits::default: must be positive, got 0",
			`label_limits::per_label: unknown label "span_id"`,
		},
	}
	for name, wants := range tests {
		t.Run(name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, name))
			require.Error(t, err)
			for _, want := range wants {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   []string // substrings of the error; nil means valid
	}{
		{name: "defaults", mutate: func(*Config) {}},
		{name: "root path", mutate: func(c *Config) { c.Path = "/" }},
		{name: "namespace with underscore", mutate: func(c *Config) { c.Namespace = "_my_ns1" }},
		{name: "empty endpoint", mutate: func(c *Config) { c.NetAddr.Endpoint = " " }, want: []string{"endpoint: must not be empty"}},
		{name: "empty path", mutate: func(c *Config) { c.Path = "" }, want: []string{`path: must start with "/"`}},
		{name: "path with query", mutate: func(c *Config) { c.Path = "/metrics?x=1" }, want: []string{"path: must be a plain URL path"}},
		{name: "path with space", mutate: func(c *Config) { c.Path = "/my metrics" }, want: []string{"path: must be a plain URL path"}},
		{name: "empty namespace", mutate: func(c *Config) { c.Namespace = "" }, want: []string{"namespace: must not be empty"}},
		{name: "namespace leading digit", mutate: func(c *Config) { c.Namespace = "1orphan" }, want: []string{`namespace: "1orphan" must match`}},
		{name: "namespace colon", mutate: func(c *Config) { c.Namespace = "orphan:watch" }, want: []string{`namespace: "orphan:watch" must match`}},
		{name: "negative default limit", mutate: func(c *Config) { c.LabelLimits.Default = -1 }, want: []string{"label_limits::default: must be positive, got -1"}},
		{name: "zero per-label limit", mutate: func(c *Config) { c.LabelLimits.PerLabel = map[string]int{"model": 0} }, want: []string{"label_limits::per_label::model: must be positive, got 0"}},
		{name: "per-label limit on fixed label", mutate: func(c *Config) { c.LabelLimits.PerLabel = map[string]int{"outcome": 3} }, want: []string{`label_limits::per_label: unknown label "outcome"`}},
		{name: "no buckets", mutate: func(c *Config) { c.OutliveBuckets = nil }, want: []string{"outlive_buckets: must not be empty"}},
		{name: "zero bucket", mutate: func(c *Config) { c.OutliveBuckets = []float64{0, 1} }, want: []string{"outlive_buckets[0]: must be positive, got 0"}},
		{name: "equal buckets", mutate: func(c *Config) { c.OutliveBuckets = []float64{1, 2, 2} }, want: []string{"outlive_buckets[2]: must be greater than the previous bound 2, got 2"}},
		{name: "infinite bucket", mutate: func(c *Config) { c.OutliveBuckets = []float64{1, math.Inf(1)} }, want: []string{"outlive_buckets[1]: must be finite"}},
		{name: "NaN bucket", mutate: func(c *Config) { c.OutliveBuckets = []float64{math.NaN()} }, want: []string{"outlive_buckets[0]: must be finite"}},
		{name: "zero hop bucket", mutate: func(c *Config) { c.HopBuckets = []float64{0, 1} }},
		{name: "no hop buckets", mutate: func(c *Config) { c.HopBuckets = nil }, want: []string{"hop_buckets: must not be empty"}},
		{name: "negative hop bucket", mutate: func(c *Config) { c.HopBuckets = []float64{-1, 1} }, want: []string{"hop_buckets[0]: must not be negative, got -1"}},
		{name: "decreasing hop buckets", mutate: func(c *Config) { c.HopBuckets = []float64{2, 1} }, want: []string{"hop_buckets[1]: must be greater than the previous bound 2, got 1"}},
		{name: "const label bad name", mutate: func(c *Config) { c.ConstLabels = map[string]string{"my-label": "x"} }, want: []string{`const_labels: "my-label" is not a valid Prometheus label name`}},
		{name: "const label reserved prefix", mutate: func(c *Config) { c.ConstLabels = map[string]string{"__name": "x"} }, want: []string{`const_labels: "__name": names starting with "__" are reserved`}},
		{name: "const label clashes", mutate: func(c *Config) { c.ConstLabels = map[string]string{"service_name": "x"} }, want: []string{`const_labels: "service_name" is used by the exporter's own labels`}},
		{name: "const label empty", mutate: func(c *Config) { c.ConstLabels = map[string]string{"collector": ""} }, want: []string{"const_labels::collector: value is empty (an unset environment variable? Prometheus drops empty labels)"}},
		{name: "const label invalid utf8", mutate: func(c *Config) { c.ConstLabels = map[string]string{"team": "\xff"} }, want: []string{"const_labels::team: value must be valid UTF-8"}},
		{
			name: "all errors reported",
			mutate: func(c *Config) {
				c.Path = "x"
				c.Namespace = "a-b"
				c.LabelLimits.Default = 0
			},
			want: []string{"path:", "namespace:", "label_limits::default:"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			tt.mutate(cfg)
			err := cfg.Validate()
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, want := range tt.want {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

// TestLoadConfigDimensions: the YAML of the README.
func TestLoadConfigDimensions(t *testing.T) {
	cfg := loadConfig(t, "dimensions")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, []orphanmetrics.DimensionConfig{{Name: "deployment.environment.name", Default: "unknown"}, {Name: "team"}}, cfg.Dimensions)
}
