package orphanmetricsconnector_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tooltest"
)

var (
	scrapeLabel  = regexp.MustCompile(`(^|,)\s*(job|instance)="[^"]*"`)
	serviceLabel = regexp.MustCompile(`(?:^|[{,])\s*(?:service_name|callee_service)="([^"]*)"`)
)

// asConnectorSeries rewrites an input series of a promtool test the way it arrives from the
// connector through prometheusremotewrite (or a scrape of contrib's prometheus exporter): the
// same name and labels, plus job from the resource's service.name and no instance (the
// resource has no service.instance.id), the scope labels and the const label the README's
// pipelines set. The health series (label_overflow, spans_skipped, series_overflow) are under the collector's
// own resource: their job and instance are the collector's service.name and
// service.instance.id, which the tests' job and instance stand for. Series that are not the
// connector's (up, otelcol_*) are left alone.
func asConnectorSeries(s string) string {
	if !strings.HasPrefix(s, "orphanwatch_") {
		return s
	}
	name, labels, _ := strings.Cut(s, "{")
	labels = strings.TrimSuffix(labels, "}")
	if name != "orphanwatch_label_overflow_total" && name != "orphanwatch_spans_skipped_total" && name != "orphanwatch_series_overflow_total" {
		labels = strings.TrimPrefix(scrapeLabel.ReplaceAllString(labels, ""), ",")
	}
	extra := []string{`otel_scope_name="` + metadata.ScopeName + `"`, `otel_scope_version="v0.0.1"`, `collector="collector-1"`}
	if m := serviceLabel.FindStringSubmatch("{" + labels); m != nil {
		extra = append(extra, `job="`+m[1]+`"`)
	}
	if labels != "" {
		extra = append(extra, labels)
	}
	return name + "{" + strings.Join(extra, ",") + "}"
}

// TestRulesOnConnectorSeries runs config/prometheus/tests (`promtool test rules`) with every
// orphanwatch_* input series labelled as the connector's series arrive in Prometheus: the
// alerts fire and stay silent exactly as on the exporter's, with the same labels, because the
// rules aggregate by the series' own labels and the names are the exporter's
// (TestScenariosThroughPrometheusExporter).
func TestRulesOnConnectorSeries(t *testing.T) {
	dir := filepath.Join("..", "..", "config", "prometheus")
	files, err := filepath.Glob(filepath.Join(dir, "tests", "*.test.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	tmp := t.TempDir()
	var args []string
	rewritten := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, yaml.Unmarshal(b, &doc))
		rules, _ := doc["rule_files"].([]any)
		for i, r := range rules {
			abs, err := filepath.Abs(filepath.Join(dir, "tests", r.(string)))
			require.NoError(t, err)
			rules[i] = abs
		}
		tests, _ := doc["tests"].([]any)
		for _, tc := range tests {
			inputs, _ := tc.(map[string]any)["input_series"].([]any)
			for _, in := range inputs {
				m := in.(map[string]any)
				s := m["series"].(string)
				if r := asConnectorSeries(s); r != s {
					m["series"] = r
					rewritten++
				}
			}
		}
		out, err := yaml.Marshal(doc)
		require.NoError(t, err)
		p := filepath.Join(tmp, filepath.Base(f))
		require.NoError(t, os.WriteFile(p, out, 0o600))
		args = append(args, p)
	}
	require.Positive(t, rewritten)
	out := tooltest.Run(t, "promtool", append([]string{"test", "rules"}, args...)...)
	require.NotContains(t, out, "FAILED")
	t.Logf("%d input series relabelled; promtool:\n%s", rewritten, out)
}

func TestAsConnectorSeries(t *testing.T) {
	for in, want := range map[string]string{
		`orphanwatch_runs_total{job="orphanwatch",instance="localhost:9464",service_name="gw",outcome="x"}`: `orphanwatch_runs_total{otel_scope_name="` + metadata.ScopeName + `",otel_scope_version="v0.0.1",collector="collector-1",job="gw",service_name="gw",outcome="x"}`,
		`orphanwatch_unpropagated_total{caller_service="a",callee_service="b"}`:                             `orphanwatch_unpropagated_total{otel_scope_name="` + metadata.ScopeName + `",otel_scope_version="v0.0.1",collector="collector-1",job="b",caller_service="a",callee_service="b"}`,
		`orphanwatch_label_overflow_total{job="c",instance="i"}`:                                            `orphanwatch_label_overflow_total{otel_scope_name="` + metadata.ScopeName + `",otel_scope_version="v0.0.1",collector="collector-1",job="c",instance="i"}`,
		`up{job="orphanwatch"}`: `up{job="orphanwatch"}`,
	} {
		require.Equal(t, want, asConnectorSeries(in), in)
	}
}
