package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/otelcol"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/testpki"
)

// validate runs the distribution's `validate` command in-process on the config files, as
// `otelcol-orphanwatch validate --config a.yaml --config b.yaml` does.
func validate(t *testing.T, files ...string) error {
	t.Helper()
	cmd := otelcol.NewCommand(otelcol.CollectorSettings{
		BuildInfo: component.NewDefaultBuildInfo(),
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			ProviderFactories: providerFactories(),
		}},
	})
	args := []string{"validate"}
	for _, f := range files {
		args = append(args, "--config", filepath.Join("..", "..", "config", "scaleout", f))
	}
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	return cmd.Execute()
}

// TestTLSSASLExamplesValidate: the TLS + SASL overlays of config/scaleout, merged over the
// front and member configs, pass the distribution's validate with only the environment set;
// without the SASL user, validate names the missing field.
func TestTLSSASLExamplesValidate(t *testing.T) {
	t.Setenv("ORPHANWATCH_MEMBER", "1")
	t.Setenv("ORPHANWATCH_KEY_SECRET", "a-secret-of-at-least-16-bytes")
	t.Setenv("KAFKA_BROKERS", "kafka-0.kafka:9093")
	t.Setenv("KAFKA_SASL_PASSWORD", "s3cret")
	t.Setenv("KAFKA_SASL_USERNAME", "")
	t.Setenv("KAFKA_TLS_CA_FILE", writeCA(t))
	for _, tc := range [][2]string{{"front.yaml", "front-tls-sasl.yaml"}, {"member.yaml", "member-tls-sasl.yaml"}} {
		err := validate(t, tc[0], tc[1])
		require.Error(t, err, "%s + %s without KAFKA_SASL_USERNAME", tc[0], tc[1])
		assert.Contains(t, err.Error(), "username", tc[1])
	}
	t.Setenv("KAFKA_SASL_USERNAME", "orphanwatch")
	for _, tc := range [][2]string{{"front.yaml", "front-tls-sasl.yaml"}, {"member.yaml", "member-tls-sasl.yaml"}} {
		assert.NoError(t, validate(t, tc[0], tc[1]), "%s + %s", tc[0], tc[1])
	}
	t.Setenv("KAFKA_SASL_MECHANISM", "SCRAM-SHA-1")
	err := validate(t, "member.yaml", "member-tls-sasl.yaml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "SCRAM-SHA-1")
}

// TestMemberNeedsItsName: member.yaml does not validate without ORPHANWATCH_MEMBER (unset or
// empty), and the error names the variable; with it, it does. (The collector's own env
// provider reads an unset variable as empty: every member would be `orphanwatch-`.)
func TestMemberNeedsItsName(t *testing.T) {
	t.Setenv("ORPHANWATCH_KEY_SECRET", "a-secret-of-at-least-16-bytes")
	t.Setenv("ORPHANWATCH_MEMBER", "")
	err := validate(t, "member.yaml")
	require.Error(t, err, "ORPHANWATCH_MEMBER empty")
	assert.Contains(t, err.Error(), "environment variable ORPHANWATCH_MEMBER is unset or empty")
	require.NoError(t, os.Unsetenv("ORPHANWATCH_MEMBER")) // t.Setenv restores it
	err = validate(t, "member.yaml")
	require.Error(t, err, "ORPHANWATCH_MEMBER unset")
	assert.Contains(t, err.Error(), "environment variable ORPHANWATCH_MEMBER is unset or empty")
	t.Setenv("ORPHANWATCH_MEMBER", "1")
	require.NoError(t, validate(t, "member.yaml"))
	// Variables with a default, and other variables, keep the collector's rules: unset
	// ORPHANWATCH_KEYS_REPLICATION_FACTOR takes its default.
	require.NoError(t, os.Unsetenv("ORPHANWATCH_KEYS_REPLICATION_FACTOR"))
	require.NoError(t, validate(t, "member.yaml"))
}

// TestTraceStoreTLSOverlay: trace-store-tls.yaml merged over front.yaml (the front sends the
// spans to the store; the members forward nothing), alone and with the Kafka TLS + SASL
// overlay, validates with the environment set, turns the trace-store exporter's TLS on with the
// files from the environment, and a client certificate without its key fails validate.
func TestTraceStoreTLSOverlay(t *testing.T) {
	t.Setenv("ORPHANWATCH_MEMBER", "1")
	t.Setenv("ORPHANWATCH_KEY_SECRET", "a-secret-of-at-least-16-bytes")
	t.Setenv("KAFKA_SASL_USERNAME", "orphanwatch")
	t.Setenv("KAFKA_SASL_PASSWORD", "s3cret")
	t.Setenv("KAFKA_TLS_CA_FILE", writeCA(t))
	ca := writeCA(t)
	t.Setenv("TRACE_STORE_ENDPOINT", "tempo-distributor.tempo:4317")
	t.Setenv("TRACE_STORE_TLS_CA_FILE", ca)
	t.Setenv("TRACE_STORE_TLS_SERVER_NAME", "tempo.example")
	assert.NoError(t, validate(t, "front.yaml", "trace-store-tls.yaml"))
	assert.NoError(t, validate(t, "front.yaml", "front-tls-sasl.yaml", "trace-store-tls.yaml"))

	tls := resolved(t, "front.yaml", "trace-store-tls.yaml").Sub("exporters::otlp_grpc/store::tls")
	assert.Equal(t, false, tls["insecure"], "the overlay turns TLS on")
	assert.Equal(t, ca, tls["ca_file"])
	assert.Equal(t, "tempo.example", tls["server_name_override"])
	assert.Equal(t, "1.2", tls["min_version"])
	// Without the overlay the store is plaintext (front.yaml's default).
	assert.Equal(t, true, resolved(t, "front.yaml").Sub("exporters::otlp_grpc/store::tls")["insecure"])

	t.Setenv("TRACE_STORE_TLS_CERT_FILE", filepath.Join(t.TempDir(), "front.pem"))
	err := validate(t, "front.yaml", "trace-store-tls.yaml")
	require.Error(t, err, "a client certificate without its key")
	assert.Contains(t, err.Error(), "certificate and key")
	t.Setenv("TRACE_STORE_TLS_KEY_FILE", filepath.Join(t.TempDir(), "front-key.pem"))
	assert.NoError(t, validate(t, "front.yaml", "trace-store-tls.yaml"))
}

// resolvedConf is a resolved config, read by `::`-separated paths.
type resolvedConf map[string]any

// Sub returns the map at path ("" keys for a missing one).
func (c resolvedConf) Sub(path string) map[string]any {
	var cur any = map[string]any(c)
	for _, k := range strings.Split(path, "::") {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	m, _ := cur.(map[string]any)
	return m
}

// resolved resolves the config files of config/scaleout as the distribution does (its
// providers, the environment), merged in order.
func resolved(t *testing.T, files ...string) resolvedConf {
	t.Helper()
	var uris []string
	for _, f := range files {
		uris = append(uris, "file:"+filepath.Join("..", "..", "config", "scaleout", f))
	}
	r, err := confmap.NewResolver(confmap.ResolverSettings{URIs: uris, ProviderFactories: providerFactories(),
		DefaultScheme: "env"})
	require.NoError(t, err)
	conf, err := r.Resolve(context.Background())
	require.NoError(t, err)
	return conf.ToStringMap()
}

// writeCA writes a self-signed CA certificate (PEM) into a temporary folder and returns its path.
func writeCA(t *testing.T) string {
	return testpki.New(t).CAFile()
}

// TestShippedConfigsReadPortsFromEnv: every port of the shipped configs is a
// ${env:VAR:-default} with today's number as its default.
func TestShippedConfigsReadPortsFromEnv(t *testing.T) {
	want := map[string][]string{
		"collector.yaml": {"${env:OTLP_GRPC_PORT:-4317}", "${env:OTLP_HTTP_PORT:-4318}", "${env:ZIPKIN_PORT:-9411}",
			"${env:JAEGER_GRPC_PORT:-14250}", "${env:JAEGER_THRIFT_HTTP_PORT:-14268}", "${env:METRICS_PORT:-9464}",
			"${env:HEALTH_PORT:-13133}", "${env:TELEMETRY_PORT:-8888}"},
		"scaleout/front.yaml": {"${env:OTLP_GRPC_PORT:-4317}", "${env:OTLP_HTTP_PORT:-4318}", "${env:ZIPKIN_PORT:-9411}",
			"${env:JAEGER_GRPC_PORT:-14250}", "${env:JAEGER_THRIFT_HTTP_PORT:-14268}", "${env:HEALTH_PORT:-13133}",
			"${env:TELEMETRY_PORT:-8888}", "${env:KAFKA_BROKERS:-localhost:9092}"},
		"scaleout/member.yaml": {"${env:METRICS_PORT:-9464}", "${env:HEALTH_PORT:-13133}", "${env:TELEMETRY_PORT:-8888}",
			"${env:KAFKA_BROKERS:-localhost:9092}"},
	}
	for file, vars := range want {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", file))
		require.NoError(t, err)
		var body strings.Builder
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "#") {
				body.WriteString(l + "\n")
				// No port written as a bare number.
				for _, p := range []string{":4317", ":4318", ":9411", ":14250", ":14268", ":9464", ":13133", "port: 8888"} {
					assert.NotContains(t, l, p, "%s: a fixed port", file)
				}
			}
		}
		for _, v := range vars {
			assert.Contains(t, body.String(), v, file)
		}
	}
}

// TestDefaultConfigPortsFromEnvAndSet starts the built distribution without --config, as the
// README's quick start does, with its ports moved by environment variables and the telemetry
// port by the README's --set form (a YAML-flow list for service::telemetry::metrics::readers),
// and reads each listener.
func TestDefaultConfigPortsFromEnvAndSet(t *testing.T) {
	bin := e2e.BuildCollector(t, t.TempDir())
	ports := map[string]int{}
	var env []string
	for _, v := range []string{"OTLP_GRPC_PORT", "OTLP_HTTP_PORT", "ZIPKIN_PORT", "JAEGER_GRPC_PORT", "JAEGER_THRIFT_HTTP_PORT", "METRICS_PORT", "HEALTH_PORT"} {
		ports[v] = e2e.FreePort(t)
		env = append(env, fmt.Sprintf("%s=%d", v, ports[v]))
	}
	telemetry := e2e.FreePort(t)
	// The README's form, with its port replaced by a free one.
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	form := regexp.MustCompile(`'(--set=service::telemetry::metrics::readers=\[.*port: 18888.*\])'`).FindSubmatch(readme)
	require.NotNil(t, form, "README: the --set form for the telemetry port")
	set := strings.Replace(string(form[1]), "18888", strconv.Itoa(telemetry), 1)
	log := &e2e.SyncBuffer{}
	cmd := exec.Command(bin, set)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	get := func(port int, path string) (int, string) {
		resp, err := http.Get(fmt.Sprintf("http://localhost:%d%s", port, path))
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	require.True(t, e2e.WaitFor(60*time.Second, func() bool { code, _ := get(ports["HEALTH_PORT"], "/"); return code == 200 }),
		"health_check not on HEALTH_PORT; log:\n%s", log.String())
	code, body := get(telemetry, "/metrics")
	require.Equal(t, 200, code, "telemetry not on the --set port; log:\n%s", log.String())
	assert.Contains(t, body, "otelcol_process_uptime")
	code, _ = get(ports["METRICS_PORT"], "/metrics")
	assert.Equal(t, 200, code, "orphanmetrics not on METRICS_PORT")
	code, _ = get(ports["OTLP_HTTP_PORT"], "/v1/traces")
	assert.NotZero(t, code, "OTLP/HTTP not on OTLP_HTTP_PORT")
	code, _ = get(ports["ZIPKIN_PORT"], "/api/v2/spans")
	assert.NotZero(t, code, "zipkin not on ZIPKIN_PORT")
}

// TestReadmeManifestIsBuilt: the manifest README "Build your own distribution" shows is
// testdata/your-builder-config.yaml, which .ci/run builds with OCB, and it adds exactly the
// orphanwatch processor and exporter, at the versions of the distribution's manifest.
func TestReadmeManifestIsBuilt(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	manifest, err := os.ReadFile(filepath.Join("testdata", "your-builder-config.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "```yaml\n"+string(manifest)+"```\n")
	dist, err := os.ReadFile("builder-config.yaml")
	require.NoError(t, err)
	var imports []string
	for _, l := range strings.Split(string(manifest), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "- gomod: ") {
			// Every module of the example is in the distribution's manifest at the same version.
			assert.Contains(t, string(dist), l)
		}
		if strings.HasPrefix(l, "import: github.com/orphanwatch/") {
			imports = append(imports, strings.TrimPrefix(l, "import: "))
		}
	}
	assert.Equal(t, []string{"github.com/orphanwatch/orphanwatch/processor/orphanprocessor", "github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"}, imports)
}
