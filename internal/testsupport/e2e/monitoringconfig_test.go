package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func readRepo(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(), rel))
	require.NoError(t, err)
	return b
}

// RulesForTest cuts windows and for: durations and keeps everything else of the committed rules.
func TestRulesForTest(t *testing.T) {
	src := readRepo(t, "config/prometheus/rules/orphanwatch-alerts.yml")
	orig, err := ParseRules(src)
	require.NoError(t, err)
	out, err := RulesForTest(src, time.Minute, 5*time.Second)
	require.NoError(t, err)
	got, err := ParseRules(out)
	require.NoError(t, err)

	require.Len(t, got.Groups, len(orig.Groups))
	p := parser.NewParser(parser.Options{})
	for gi, g := range got.Groups {
		require.Len(t, g.Rules, len(orig.Groups[gi].Rules))
		for ri, r := range g.Rules {
			o := orig.Groups[gi].Rules[ri]
			assert.Equal(t, o.Alert, r.Alert)
			assert.Equal(t, o.Labels, r.Labels, r.Alert)
			assert.Equal(t, o.Annotations, r.Annotations, r.Alert)
			assert.LessOrEqual(t, time.Duration(r.For), 5*time.Second, r.Alert)
			e, err := p.ParseExpr(r.Expr)
			require.NoError(t, err, r.Alert)
			parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
				if m, ok := n.(*parser.MatrixSelector); ok {
					assert.LessOrEqual(t, m.Range, time.Minute, r.Alert)
				}
				return nil
			})
			// Only the ranges changed: with them put back, the expression prints the same.
			oe, err := p.ParseExpr(o.Expr)
			require.NoError(t, err)
			parser.Inspect(oe, func(n parser.Node, _ []parser.Node) error {
				if m, ok := n.(*parser.MatrixSelector); ok && m.Range > time.Minute {
					m.Range = time.Minute
				}
				return nil
			})
			assert.Equal(t, oe.String(), e.String(), r.Alert)
		}
	}
}

func TestPrometheusConfigForTest(t *testing.T) {
	out, err := PrometheusConfigForTest(readRepo(t, "config/prometheus/prometheus.yml"), PrometheusTargets{
		Jobs:         map[string]string{"orphanwatch": "127.0.0.1:1001", "orphanwatch-collector": "127.0.0.1:1002"},
		Alertmanager: "127.0.0.1:1003",
		RuleFiles:    []string{"a.yml"},
		Interval:     time.Second,
	})
	require.NoError(t, err)
	s := string(out)
	for _, want := range []string{"127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.1:1003", "a.yml", "evaluation_interval: 1s"} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "localhost")

	_, err = PrometheusConfigForTest(readRepo(t, "config/prometheus/prometheus.yml"), PrometheusTargets{
		Jobs: map[string]string{"orphanwatch": "127.0.0.1:1001"}, Interval: time.Second,
	})
	assert.Error(t, err, "a job without a test target")
}

func TestAlertmanagerConfigForTest(t *testing.T) {
	out, err := AlertmanagerConfigForTest(readRepo(t, "config/alertmanager/alertmanager.yml"), "http://127.0.0.1:1234", time.Second)
	require.NoError(t, err)
	var cfg struct {
		Route struct {
			GroupWait string `yaml:"group_wait"`
			Routes    []struct {
				GroupWait     string `yaml:"group_wait"`
				GroupInterval string `yaml:"group_interval"`
			} `yaml:"routes"`
		} `yaml:"route"`
		Receivers []struct {
			WebhookConfigs []struct {
				URL string `yaml:"url"`
			} `yaml:"webhook_configs"`
		} `yaml:"receivers"`
	}
	require.NoError(t, yaml.Unmarshal(out, &cfg))
	assert.Equal(t, "1s", cfg.Route.GroupWait)
	for _, r := range cfg.Route.Routes {
		assert.Equal(t, "1s", r.GroupWait)
		assert.Equal(t, "1s", r.GroupInterval)
	}
	hooks := 0
	for _, r := range cfg.Receivers {
		for _, w := range r.WebhookConfigs {
			hooks++
			assert.True(t, strings.HasPrefix(w.URL, "http://127.0.0.1:1234/orphanwatch/"), w.URL)
		}
	}
	assert.Equal(t, 2, hooks)
}

// PushConfigForTest changes the metrics exporter's endpoint, the named settings and the
// periodic readers' interval of a shipped push config, and nothing else.
func TestPushConfigForTest(t *testing.T) {
	for _, f := range []string{"otlp_http.yaml", "prometheusremotewrite.yaml"} {
		src := readRepo(t, "config/push/"+f)
		out, err := PushConfigForTest(src, PushOverrides{
			MetricsEndpoint: "http://127.0.0.1:1/x",
			Settings:        map[string]any{"decision_wait": "2s", "metrics_flush_interval": "1s"},
			ReaderInterval:  1500 * time.Millisecond,
		})
		require.NoError(t, err, f)
		var orig, got map[string]any
		require.NoError(t, yaml.Unmarshal(src, &orig))
		require.NoError(t, yaml.Unmarshal(out, &got))
		assert.Contains(t, string(out), "http://127.0.0.1:1/x", f)
		assert.Contains(t, string(out), "decision_wait: 2s", f)
		assert.Contains(t, string(out), "metrics_flush_interval: 1s", f)
		assert.Contains(t, string(out), "interval: 1500", f)
		// Put the originals back by the same rewrite: then the configs are equal.
		back, err := PushConfigForTest(out, PushOverrides{
			MetricsEndpoint: findKey(orig, "exporters", "endpoint").(string),
			Settings: map[string]any{
				"decision_wait":          findKey(orig, "connectors", "decision_wait"), // the push configs observe: the connector decides
				"metrics_flush_interval": findKey(orig, "connectors", "metrics_flush_interval"),
			},
			ReaderInterval: time.Duration(findKey(orig, "service", "interval").(int)) * time.Millisecond,
		})
		require.NoError(t, err)
		var again map[string]any
		require.NoError(t, yaml.Unmarshal(back, &again))
		assert.Equal(t, jsonNumbers(t, orig), jsonNumbers(t, again), f)
	}
	_, err := PushConfigForTest(readRepo(t, "config/push/otlp_http.yaml"), PushOverrides{
		MetricsEndpoint: "x", Settings: map[string]any{"no_such_setting": 1}, ReaderInterval: time.Second})
	assert.ErrorContains(t, err, "no component has no_such_setting")
}

// jsonNumbers returns v with every number a float64 (YAML writes 10.00 back as 10, an int).
func jsonNumbers(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// findKey returns the first value of key under cfg[top], at any depth.
func findKey(cfg map[string]any, top, key string) any {
	var walk func(v any) (any, bool)
	walk = func(v any) (any, bool) {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := x[key]; ok {
				return r, true
			}
			for _, c := range x {
				if r, ok := walk(c); ok {
					return r, true
				}
			}
		case []any:
			for _, c := range x {
				if r, ok := walk(c); ok {
					return r, true
				}
			}
		}
		return nil, false
	}
	r, _ := walk(cfg[top])
	return r
}
