package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPushConfigs: the pipelines README "Push the metrics" shows (config/push: the
// orphanmetrics connector into otlp_http, and into prometheusremotewrite) are valid for this
// distribution as shipped (`otelcol-orphanwatch validate`), and the READMEs show them as they
// are in config/push, so what is validated is what users copy.
func TestPushConfigs(t *testing.T) {
	t.Setenv("HOSTNAME", "collector-1")
	readmes := map[string]string{}
	for _, r := range []string{"README.md", "connector/orphanmetricsconnector/README.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", r))
		if err != nil {
			t.Fatal(err)
		}
		readmes[r] = string(b)
	}
	for _, f := range []string{"otlp_http.yaml", "prometheusremotewrite.yaml"} {
		b := validShipped(t, "push", f)
		for r, text := range readmes {
			if !strings.Contains(text, "```yaml\n"+string(b)+"```\n") {
				t.Errorf("%s does not show config/push/%s as it is", r, f)
			}
		}
	}
}

// TestPushConfigMistake: a connector mistake fails validation with a message naming the field.
func TestPushConfigMistake(t *testing.T) {
	err := dryRun(t, "yaml:"+`
receivers: {otlp: {protocols: {http: {endpoint: localhost:0}}}}
connectors: {orphanmetrics: {metrics_flush_interval: 0s, outlive_buckets: [1, 0.5]}}
exporters: {debug: {}}
service:
  pipelines:
    traces: {receivers: [otlp], exporters: [orphanmetrics]}
    metrics: {receivers: [orphanmetrics], exporters: [debug]}
`)
	if err == nil {
		t.Fatal("invalid connector config accepted")
	}
	for _, want := range []string{"metrics_flush_interval: must be positive", "outlive_buckets[1]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestPushConfigWithoutHostname: started where HOSTNAME is not exported (a plain shell, a
// systemd unit), the shipped push configs fail at start-up naming the const label, instead of
// pushing series whose collector label is empty (two collectors' sums would then collide).
func TestPushConfigWithoutHostname(t *testing.T) {
	t.Setenv("HOSTNAME", "")
	for _, f := range []string{"otlp_http.yaml", "prometheusremotewrite.yaml"} {
		err := dryRun(t, "file:"+filepath.Join("..", "..", "config", "push", f))
		if err == nil || !strings.Contains(err.Error(), "const_labels::collector: value is empty") {
			t.Errorf("%s without HOSTNAME: %v, want the empty const label named", f, err)
		}
	}
}
