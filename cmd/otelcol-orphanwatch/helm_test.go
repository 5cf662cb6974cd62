package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// helmValues is the part of deploy/helm/values.yaml this test reads.
type helmValues struct {
	Mode         string `yaml:"mode"`
	ReplicaCount int    `yaml:"replicaCount"`
	Image        struct {
		Repository string `yaml:"repository"`
	} `yaml:"image"`
	Command struct {
		Name string `yaml:"name"`
	} `yaml:"command"`
	PodSecurityContext struct {
		RunAsUser int `yaml:"runAsUser"`
	} `yaml:"podSecurityContext"`
	LivenessProbe  helmProbe `yaml:"livenessProbe"`
	ReadinessProbe helmProbe `yaml:"readinessProbe"`
	Ports          map[string]struct {
		Enabled       bool `yaml:"enabled"`
		ContainerPort int  `yaml:"containerPort"`
	} `yaml:"ports"`
	Config    map[string]any `yaml:"config"`
	ConfigMap struct {
		Create       bool   `yaml:"create"`
		ExistingName string `yaml:"existingName"`
	} `yaml:"configMap"`
	ExtraEnvs []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"extraEnvs"`
	UseGOMEMLIMIT bool `yaml:"useGOMEMLIMIT"`
	Resources     struct {
		Limits struct {
			Memory string `yaml:"memory"`
		} `yaml:"limits"`
	} `yaml:"resources"`
}

// checkMemory: the memory limiter's limit is about 80 % of the container's memory limit and
// GOMEMLIMIT about 80 % of the limiter's limit minus its spike (README "Memory"), the chart's
// own GOMEMLIMIT off.
func checkMemory(t *testing.T, v helmValues, limitMiB, spikeMiB float64) {
	t.Helper()
	assert.False(t, v.UseGOMEMLIMIT, "the chart's GOMEMLIMIT is 80 %% of the container's limit")
	gi, err := strconv.ParseFloat(strings.TrimSuffix(v.Resources.Limits.Memory, "Gi"), 64)
	require.NoError(t, err, "limits.memory %q in Gi", v.Resources.Limits.Memory)
	assert.InDelta(t, 0.8*gi*1024, limitMiB, 2, "memory_limiter's limit: 80 %% of %s", v.Resources.Limits.Memory)
	var gomem float64
	for _, e := range v.ExtraEnvs {
		if e.Name == "GOMEMLIMIT" {
			gomem, err = strconv.ParseFloat(strings.TrimSuffix(e.Value, "MiB"), 64)
			require.NoError(t, err, "GOMEMLIMIT %q in MiB", e.Value)
		}
	}
	assert.InDelta(t, 0.8*(limitMiB-spikeMiB), gomem, 2, "GOMEMLIMIT")
}

// helmProbe is a probe of the chart's values.
type helmProbe struct {
	HTTPGet struct {
		Port int `yaml:"port"`
	} `yaml:"httpGet"`
}

// withoutNulls drops the keys set to null, as the chart's merge of `config` into its default
// config removes them.
func withoutNulls(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		switch x := v.(type) {
		case nil:
		case map[string]any:
			out[k] = withoutNulls(x)
		default:
			out[k] = v
		}
	}
	return out
}

// TestHelmValues: deploy/helm/values.yaml runs the distribution's binary as one deployment
// replica, as the image's user; its `config` (without the chart defaults it sets to null)
// validates with this distribution; it removes the chart's defaults this distribution does not
// have; every listener's port is a container port and every enabled port is listened on; the
// probes ask the health_check extension.
func TestHelmValues(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "helm", "values.yaml"))
	require.NoError(t, err)
	var v helmValues
	require.NoError(t, yaml.Unmarshal(b, &v))
	assert.Equal(t, "deployment", v.Mode)
	assert.Equal(t, 1, v.ReplicaCount, "more replicas would split traces")
	assert.Equal(t, "otelcol-orphanwatch", v.Command.Name, "the binary the image holds")
	assert.Equal(t, "localhost/otelcol-orphanwatch", v.Image.Repository, "deploy/image/build.sh's image")
	assert.Equal(t, 65532, v.PodSecurityContext.RunAsUser, "the image's USER")

	// Chart defaults this distribution has no component for: set to null.
	recv, _ := v.Config["receivers"].(map[string]any)
	require.Contains(t, recv, "prometheus")
	assert.Nil(t, recv["prometheus"], "the chart's prometheus receiver")
	pipes := v.Config["service"].(map[string]any)["pipelines"].(map[string]any)
	for _, p := range []string{"logs", "metrics"} {
		require.Contains(t, pipes, p)
		assert.Nil(t, pipes[p], "the chart's %s pipeline", p)
	}

	cfg, err := yaml.Marshal(withoutNulls(v.Config))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "relay.yaml")
	require.NoError(t, os.WriteFile(path, cfg, 0o600))
	t.Setenv("MY_POD_IP", "127.0.0.1")
	require.NoError(t, dryRun(t, "file:"+path))

	ml := v.Config["processors"].(map[string]any)["memory_limiter"].(map[string]any)
	checkMemory(t, v, float64(ml["limit_mib"].(int)), float64(ml["spike_limit_mib"].(int)))

	listened := map[int]bool{}
	for _, m := range regexp.MustCompile(`endpoint: \$\{env:MY_POD_IP\}:(\d+)`).FindAllSubmatch(cfg, -1) {
		p, _ := strconv.Atoi(string(m[1]))
		listened[p] = true
	}
	require.Len(t, listened, 7, "otlp grpc+http, zipkin, jaeger grpc+thrift_http, orphanmetrics, health_check")
	ports := map[int]bool{8888: true} // the chart's telemetry reader, on ${env:MY_POD_IP}:8888
	for name, p := range v.Ports {
		if p.Enabled {
			assert.True(t, listened[p.ContainerPort] || p.ContainerPort == 8888, "port %s (%d) is listened on by nothing", name, p.ContainerPort)
			ports[p.ContainerPort] = true
		}
	}
	for p := range listened {
		if p != 13133 { // probed, not served
			assert.True(t, ports[p], "listener on %d has no container port", p)
		}
	}
	assert.True(t, listened[v.LivenessProbe.HTTPGet.Port], "liveness probe on %d", v.LivenessProbe.HTTPGet.Port)
	assert.Equal(t, 13133, v.LivenessProbe.HTTPGet.Port)
	assert.Equal(t, 13133, v.ReadinessProbe.HTTPGet.Port)
}

// TestHelmTierValues: values-front.yaml and values-member.yaml run config/scaleout's front.yaml
// and member.yaml from a ConfigMap made of the file itself (the command in their header), give
// the pods every variable the file needs without a default, and LISTEN_HOST and KAFKA_BROKERS;
// their enabled ports are the file's listeners (the health check probed, not published); the
// members are a StatefulSet (stable names for static membership).
func TestHelmTierValues(t *testing.T) {
	envNoDefault := regexp.MustCompile(`\$\{env:([A-Z_]+)\}`)
	listener := regexp.MustCompile(`\$\{env:LISTEN_HOST:-localhost\}:\$\{env:[A-Z_]+_PORT:-(\d+)\}`)
	for _, tc := range []struct{ values, config, mode string }{
		{"values-front.yaml", "front.yaml", "deployment"},
		{"values-member.yaml", "member.yaml", "statefulset"},
	} {
		t.Run(tc.values, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "helm", tc.values))
			require.NoError(t, err)
			var v helmValues
			require.NoError(t, yaml.Unmarshal(raw, &v))
			assert.Equal(t, tc.mode, v.Mode)
			assert.Equal(t, "otelcol-orphanwatch", v.Command.Name)
			assert.Equal(t, 65532, v.PodSecurityContext.RunAsUser)
			assert.False(t, v.ConfigMap.Create, "the ConfigMap is made of the file")
			require.NotEmpty(t, v.ConfigMap.ExistingName)
			assert.Contains(t, string(raw), "kubectl create configmap "+v.ConfigMap.ExistingName+" --from-file=relay=config/scaleout/"+tc.config)
			assert.Empty(t, v.Config, "the config is the ConfigMap's")

			cfg, err := os.ReadFile(filepath.Join("..", "..", "config", "scaleout", tc.config))
			require.NoError(t, err)
			var body []byte
			for _, l := range regexp.MustCompile(`(?m)^[^#\n]*$`).FindAll(cfg, -1) { // comments out
				body = append(append(body, l...), '\n')
			}
			envs := map[string]bool{}
			mib := map[string]float64{}
			for _, e := range v.ExtraEnvs {
				envs[e.Name] = true
				mib[e.Name], _ = strconv.ParseFloat(e.Value, 64)
			}
			// The config's memory_limiter reads MEMORY_LIMIT_MIB and MEMORY_SPIKE_LIMIT_MIB.
			for _, want := range []string{"${env:MEMORY_LIMIT_MIB:-", "${env:MEMORY_SPIKE_LIMIT_MIB:-"} {
				require.Contains(t, string(cfg), want, tc.config)
			}
			checkMemory(t, v, mib["MEMORY_LIMIT_MIB"], mib["MEMORY_SPIKE_LIMIT_MIB"])
			for _, want := range []string{"LISTEN_HOST", "KAFKA_BROKERS"} {
				assert.True(t, envs[want], "extraEnvs: %s", want)
			}
			needed := 0
			for _, m := range envNoDefault.FindAllSubmatch(body, -1) {
				needed++
				assert.True(t, envs[string(m[1])], "%s needs %s (no default): extraEnvs lacks it", tc.config, m[1])
			}
			listened := map[int]bool{8888: true} // the telemetry reader: host LISTEN_HOST, port TELEMETRY_PORT
			for _, m := range listener.FindAllSubmatch(body, -1) {
				p, _ := strconv.Atoi(string(m[1]))
				listened[p] = true
			}
			require.True(t, listened[13133], "%s: health_check", tc.config)
			enabled := map[int]bool{}
			for name, p := range v.Ports {
				if p.Enabled {
					enabled[p.ContainerPort] = true
					assert.True(t, listened[p.ContainerPort], "port %s (%d): %s listens on nothing there", name, p.ContainerPort, tc.config)
				}
			}
			for p := range listened {
				if p != 13133 {
					assert.True(t, enabled[p], "%s listens on %d: no container port", tc.config, p)
				}
			}
			assert.Equal(t, 13133, v.LivenessProbe.HTTPGet.Port)
			assert.Equal(t, 13133, v.ReadinessProbe.HTTPGet.Port)
			t.Logf("%s: %d variables without default, listeners %v", tc.config, needed, listened)
		})
	}
}
