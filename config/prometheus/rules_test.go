// Package prometheus_test checks orphanwatch's Prometheus configuration: promtool's own checks
// and rule unit tests (when promtool is installed; required under CI=true), and, in plain Go,
// that every alert is complete, tested firing and not firing, and takes its threshold from
// orphanwatch-thresholds.yml.
package prometheus_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/orphanwatch/orphanwatch/dashboards"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tooltest"
)

const (
	alertsFile     = "rules/orphanwatch-alerts.yml"
	thresholdsFile = "rules/orphanwatch-thresholds.yml"
)

// promtool runs promtool with args (tooltest.Run) and returns its output.
func promtool(t *testing.T, args ...string) string {
	t.Helper()
	return tooltest.Run(t, "promtool", args...)
}

func TestPromtoolCheckConfig(t *testing.T) {
	out := promtool(t, "check", "config", "prometheus.yml")
	assert.Contains(t, out, "SUCCESS")
}

func TestPromtoolCheckRules(t *testing.T) {
	out := promtool(t, "check", "rules", thresholdsFile, alertsFile)
	assert.Contains(t, out, "SUCCESS")
}

// TestPromtoolTestRules runs the unit tests of tests/ (`promtool test rules tests/*.test.yml`).
func TestPromtoolTestRules(t *testing.T) {
	files, err := filepath.Glob("tests/*.test.yml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := promtool(t, append([]string{"test", "rules"}, files...)...)
	assert.NotContains(t, out, "FAILED")
	t.Log(out)
}

func readRules(t *testing.T, path string) e2e.RuleGroups {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	g, err := e2e.ParseRules(b)
	require.NoError(t, err, path)
	return g
}

var thresholdRef = regexp.MustCompile(`orphanwatch:threshold:[a-z0-9_]+`)

// Alerts without a threshold of their own: conditions that are true or false by nature.
var noThreshold = map[string]bool{
	"OrphanwatchNoSpans":                true,
	"OrphanwatchMetricsAbsent":          true,
	"OrphanwatchTargetDown":             true,
	"OrphanwatchAlertThresholdsMissing": true,
}

// Every alert has a severity, category and component, the four annotations, a runbook section
// in docs/monitoring.md, a parsable expression, and (but for noThreshold) compares against a
// threshold of orphanwatch-thresholds.yml; every threshold is used and checked for presence.
func TestAlertsAreComplete(t *testing.T) {
	thresholds := map[string]bool{}
	for _, g := range readRules(t, thresholdsFile).Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Record, "thresholds file holds only recording rules")
			assert.Regexp(t, `^vector\([0-9.]+\)$`, r.Expr, r.Record)
			thresholds[r.Record] = true
		}
	}
	doc, err := os.ReadFile("../../docs/monitoring.md")
	require.NoError(t, err)

	used := map[string]bool{}
	var missingCheck string
	alerts := 0
	for _, g := range readRules(t, alertsFile).Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "alerts file holds only alerting rules")
			alerts++
			assert.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], r.Alert)
			assert.Contains(t, []string{"orphaned_spend", "propagation", "pipeline"}, r.Labels["category"], r.Alert)
			assert.Equal(t, "orphanwatch", r.Labels["component"], r.Alert)
			for _, a := range []string{"summary", "description", "runbook", "runbook_url"} {
				assert.NotEmpty(t, strings.TrimSpace(r.Annotations[a]), "%s: annotation %s", r.Alert, a)
			}
			anchor := strings.ToLower(r.Alert)
			assert.True(t, strings.HasSuffix(r.Annotations["runbook_url"], "docs/monitoring.md#"+anchor), "%s: runbook_url", r.Alert)
			assert.Contains(t, string(doc), "\n### "+r.Alert+"\n", "docs/monitoring.md has no runbook section for %s", r.Alert)
			assert.NotZero(t, r.For, "%s has no for:", r.Alert)
			_, err := dashboards.Parse(r.Expr)
			assert.NoError(t, err, r.Alert)

			refs := thresholdRef.FindAllString(r.Expr, -1)
			if r.Alert == "OrphanwatchAlertThresholdsMissing" {
				missingCheck = r.Expr
				continue
			}
			if noThreshold[r.Alert] {
				assert.Empty(t, refs, r.Alert)
				continue
			}
			assert.NotEmpty(t, refs, "%s compares against no threshold of %s", r.Alert, thresholdsFile)
			for _, ref := range refs {
				assert.True(t, thresholds[ref], "%s: %s is not in %s", r.Alert, ref, thresholdsFile)
				used[ref] = true
			}
		}
	}
	assert.GreaterOrEqual(t, alerts, 6)
	for th := range thresholds {
		assert.True(t, used[th], "threshold %s is used by no alert", th)
		assert.Contains(t, missingCheck, "absent("+th+")", "OrphanwatchAlertThresholdsMissing does not check %s", th)
	}
}

// promtoolTests is the part of a promtool test file this test reads.
type promtoolTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// Every alert has a promtool test in which it fires and one in which it does not.
func TestEveryAlertTestedFiringAndNot(t *testing.T) {
	files, err := filepath.Glob("tests/*.test.yml")
	require.NoError(t, err)
	firing, silent := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var pt promtoolTests
		require.NoError(t, yaml.Unmarshal(b, &pt), f)
		for _, rf := range pt.RuleFiles {
			_, err := os.Stat(filepath.Join(filepath.Dir(f), rf))
			assert.NoError(t, err, "%s: rule file %s", f, rf)
		}
		for _, tc := range pt.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					firing[a.Alertname] = true
				} else {
					silent[a.Alertname] = true
				}
			}
		}
	}
	var names []string
	for _, g := range readRules(t, alertsFile).Groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
			assert.True(t, firing[r.Alert], "no promtool test where %s fires", r.Alert)
			assert.True(t, silent[r.Alert], "no promtool test where %s stays silent", r.Alert)
		}
	}
	sort.Strings(names)
	t.Logf("%d alerts: %s", len(names), strings.Join(names, ", "))
}

// The committed prometheus.yml loads both rule files and scrapes both endpoints.
func TestPrometheusConfigLoadsRules(t *testing.T) {
	b, err := os.ReadFile("prometheus.yml")
	require.NoError(t, err)
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName string `yaml:"job_name"`
		} `yaml:"scrape_configs"`
	}
	require.NoError(t, yaml.Unmarshal(b, &cfg))
	assert.ElementsMatch(t, []string{thresholdsFile, alertsFile}, cfg.RuleFiles)
	var jobs []string
	for _, s := range cfg.ScrapeConfigs {
		jobs = append(jobs, s.JobName)
	}
	assert.ElementsMatch(t, []string{"orphanwatch", "orphanwatch-collector"}, jobs)
}
