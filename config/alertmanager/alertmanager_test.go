// Package alertmanager_test checks the example Alertmanager config with amtool (when installed;
// required under CI=true): it is valid, and each category of orphanwatch alert reaches its
// receiver.
package alertmanager_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/tooltest"
)

// amtool runs amtool with args (tooltest.Run) and returns its output.
func amtool(t *testing.T, args ...string) string {
	t.Helper()
	return tooltest.Run(t, "amtool", args...)
}

func TestAmtoolCheckConfig(t *testing.T) {
	assert.Contains(t, amtool(t, "check-config", "alertmanager.yml"), "SUCCESS")
}

func TestRoutes(t *testing.T) {
	for _, c := range []struct {
		labels   []string
		receiver string
	}{
		{[]string{"alertname=OrphanwatchOrphanedCostHigh", "component=orphanwatch", "category=orphaned_spend", "severity=warning", "service_name=researcher"}, "orphanwatch-spend"},
		{[]string{"alertname=OrphanwatchCancellationNotPropagated", "component=orphanwatch", "category=propagation", "severity=warning", "caller_service=gateway", "callee_service=researcher"}, "orphanwatch-spend"},
		{[]string{"alertname=OrphanwatchSpansDropped", "component=orphanwatch", "category=pipeline", "severity=critical", "instance=localhost:8888"}, "orphanwatch-pipeline"},
		{[]string{"alertname=SomethingElse", "severity=critical"}, "default"},
	} {
		args := append([]string{"config", "routes", "test", "--config.file=alertmanager.yml", "--verify.receivers=" + c.receiver}, c.labels...)
		out := amtool(t, args...)
		assert.Equal(t, c.receiver, strings.TrimSpace(lastLine(out)), "%v", c.labels)
	}
}

// The webhook receivers send resolved notifications too, and every orphanwatch route groups by
// alertname.
func TestReceiversAndGrouping(t *testing.T) {
	b, err := os.ReadFile("alertmanager.yml")
	require.NoError(t, err)
	var cfg struct {
		Route struct {
			Routes []struct {
				Matchers []string `yaml:"matchers"`
				Receiver string   `yaml:"receiver"`
				GroupBy  []string `yaml:"group_by"`
			} `yaml:"routes"`
		} `yaml:"route"`
		Receivers []struct {
			Name           string `yaml:"name"`
			WebhookConfigs []struct {
				URL          string `yaml:"url"`
				SendResolved bool   `yaml:"send_resolved"`
			} `yaml:"webhook_configs"`
		} `yaml:"receivers"`
	}
	require.NoError(t, yaml.Unmarshal(b, &cfg))
	hooks := map[string]bool{}
	for _, r := range cfg.Receivers {
		for _, w := range r.WebhookConfigs {
			assert.True(t, w.SendResolved, r.Name)
			assert.NotEmpty(t, w.URL, r.Name)
			hooks[r.Name] = true
		}
	}
	require.NotEmpty(t, cfg.Route.Routes)
	for _, r := range cfg.Route.Routes {
		assert.Contains(t, r.GroupBy, "alertname", r.Matchers)
		assert.True(t, hooks[r.Receiver], "%v routes to %s, which has no webhook", r.Matchers, r.Receiver)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
