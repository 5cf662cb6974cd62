package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// StartCollectorWithConfig writes config to a file and starts bin with it, env added to the
// environment (ports, HOSTNAME, endpoints); it waits until readyURL answers 200 (the collector's
// own telemetry endpoint, say). The process is stopped when the test ends. The returned
// Collector's port fields are zero: the caller knows them from config and env.
func StartCollectorWithConfig(t testing.TB, bin string, config []byte, env []string, readyURL string, args ...string) *Collector {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, config, 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Collector{log: &SyncBuffer{}}
	c.cmd = exec.Command(bin, append([]string{"--config", path}, args...)...)
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(t) })
	if err := WaitReady(readyURL, 30*time.Second, nil); err != nil {
		t.Fatalf("collector %v; log:\n%s", err, c.log.String())
	}
	return c
}

// PushOverrides are what a test changes in a shipped push config (config/push/*.yaml): where
// the metrics go and how long it waits. Everything else stays as shipped; ports and endpoints
// that the config reads from the environment are set through the environment.
type PushOverrides struct {
	// MetricsEndpoint replaces the endpoint of the exporter of the metrics pipeline (its one
	// `endpoint` key, at any depth of its settings).
	MetricsEndpoint string
	// Settings sets keys of components (processors, connectors, exporters) that already have
	// them, wherever they are: {"decision_wait": "2s", "metrics_flush_interval": "1s"}. Every
	// key must be found at least once.
	Settings map[string]any
	// ReaderInterval is the interval of every periodic reader of service::telemetry; there must
	// be at least one.
	ReaderInterval time.Duration
}

// PushConfigForTest rewrites a shipped push config for a test that cannot wait for production
// intervals nor reach the example backend.
func PushConfigForTest(base []byte, o PushOverrides) ([]byte, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(base, &cfg); err != nil {
		return nil, err
	}
	service, _ := cfg["service"].(map[string]any)
	pipelines, _ := service["pipelines"].(map[string]any)
	metrics, _ := pipelines["metrics"].(map[string]any)
	exps, _ := metrics["exporters"].([]any)
	if len(exps) != 1 {
		return nil, fmt.Errorf("service::pipelines::metrics::exporters: want one exporter, got %v", exps)
	}
	exporters, _ := cfg["exporters"].(map[string]any)
	name := fmt.Sprint(exps[0])
	if n := setKey(exporters[name], "endpoint", o.MetricsEndpoint); n != 1 {
		return nil, fmt.Errorf("exporters::%s: %d endpoint keys, want 1", name, n)
	}

	keys := make([]string, 0, len(o.Settings))
	for k := range o.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n := 0
		for _, kind := range []string{"processors", "connectors", "exporters"} {
			comps, _ := cfg[kind].(map[string]any)
			for _, c := range comps {
				if m, ok := c.(map[string]any); ok {
					if _, ok := m[k]; ok {
						m[k] = o.Settings[k]
						n++
					}
				}
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("no component has %s", k)
		}
	}

	tel, _ := service["telemetry"].(map[string]any)
	tm, _ := tel["metrics"].(map[string]any)
	readers, _ := tm["readers"].([]any)
	periodic := 0
	for _, r := range readers {
		rm, _ := r.(map[string]any)
		if p, ok := rm["periodic"].(map[string]any); ok {
			p["interval"] = int(o.ReaderInterval / time.Millisecond)
			periodic++
		}
	}
	if periodic == 0 {
		return nil, errors.New("service::telemetry::metrics::readers: no periodic reader")
	}
	return yaml.Marshal(cfg)
}

// setKey sets every key named k in the maps of v (at any depth) to value and returns how many.
func setKey(v any, k string, value any) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		for kk, c := range x {
			if kk == k {
				x[kk] = value
				n++
				continue
			}
			n += setKey(c, k, value)
		}
	case []any:
		for _, c := range x {
			n += setKey(c, k, value)
		}
	}
	return n
}
