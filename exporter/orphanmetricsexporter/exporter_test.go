package orphanmetricsexporter

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pipeline"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
)

func TestFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, component.MustNewType("orphanmetrics"), f.Type())
	assert.Equal(t, component.StabilityLevelAlpha, f.TracesStability())

	_, err := f.CreateMetrics(context.Background(), exportertest.NewNopSettings(metadata.Type), f.CreateDefaultConfig())
	require.ErrorIs(t, err, pipeline.ErrSignalNotSupported)
	_, err = f.CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), f.CreateDefaultConfig())
	require.ErrorIs(t, err, pipeline.ErrSignalNotSupported)

	bad := NewDefaultConfig()
	bad.OutliveBuckets = []float64{2, 1}
	_, err = f.CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), bad)
	require.ErrorContains(t, err, "outlive_buckets[1]")
}

// startExporter starts an exporter in annotate mode: the tests feed it spans with the
// orphan processor's attributes written by hand.
func startExporter(t *testing.T, mutate func(*Config)) (exporter.Traces, *Config) {
	t.Helper()
	cfg := NewDefaultConfig()
	cfg.Mode = orphanmetrics.ModeAnnotate
	cfg.NetAddr.Endpoint = freeEndpoint(t)
	if mutate != nil {
		mutate(cfg)
	}
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	return exp, cfg
}

// scrape GETs url with the given Accept header (none if empty).
func scrape(t *testing.T, url, accept string) (*http.Response, []byte) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequest(http.MethodGet, url, http.NoBody)
	require.NoError(t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

func TestServeMetrics(t *testing.T) {
	exp, cfg := startExporter(t, func(c *Config) { c.Path = "/orphan/metrics" })
	require.NoError(t, exp.ConsumeTraces(context.Background(), buildTraces(t, scenario(t)...)))
	url := "http://" + cfg.NetAddr.Endpoint + "/orphan/metrics"
	tid := traceA.String()

	// OpenMetrics, with exemplars.
	resp, body := scrape(t, url, "application/openmetrics-text; version=1.0.0")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "application/openmetrics-text")
	out := string(body)
	assert.True(t, strings.HasSuffix(out, "# EOF\n"))
	for _, series := range []string{
		`orphanwatch_attempts_total{liveness="started_after_gone",operation="call_tool",service_name="agent"} 1.0 # {`,
		`orphanwatch_unpropagated_total{callee_service="tools",caller_service="agent"} 1.0 # {`,
		`orphanwatch_spend_cost_usd_total{liveness="orphaned",model="gpt-4o",service_name="agent"} 0.0125 # {`,
	} {
		i := strings.Index(out, series)
		require.GreaterOrEqual(t, i, 0, "missing %s", series)
		line := out[i:]
		line = line[:strings.IndexByte(line, '\n')]
		assert.Contains(t, line, `trace_id="`+tid+`"`)
	}

	// Protobuf: structured check of values and exemplars.
	resp, body = scrape(t, url, `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	dec := expfmt.NewDecoder(strings.NewReader(string(body)), expfmt.ResponseFormat(resp.Header))
	families := map[string]*dto.MetricFamily{}
	for {
		var mf dto.MetricFamily
		err := dec.Decode(&mf)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		families[mf.GetName()] = &mf
	}
	runs := families["orphanwatch_runs_total"]
	require.NotNil(t, runs)
	var found bool
	for _, m := range runs.GetMetric() {
		if labelString(m.GetLabel()) != `{operation="call_tool",outcome="delivered_to_nobody",service_name="agent"}` {
			continue
		}
		found = true
		assert.Equal(t, 1.0, m.GetCounter().GetValue())
		ex := m.GetCounter().GetExemplar()
		require.NotNil(t, ex)
		assert.Equal(t, 1.0, ex.GetValue())
		labels := map[string]string{}
		for _, l := range ex.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		assert.Equal(t, tid, labels["trace_id"])
	}
	assert.True(t, found)
	outlive := families["orphanwatch_outlive_seconds"]
	require.NotNil(t, outlive)
	assert.Equal(t, dto.MetricType_HISTOGRAM, outlive.GetType())

	// Plain Prometheus text for scrapers that do not ask for OpenMetrics.
	resp, body = scrape(t, url, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err)
	seconds := map[string]float64{}
	for _, m := range mfs["orphanwatch_spend_seconds_total"].GetMetric() {
		seconds[labelString(m.GetLabel())] = m.GetCounter().GetValue()
	}
	assert.Equal(t, 2.75, seconds[`{liveness="orphaned",service_name="agent"}`])
	assert.Equal(t, 7.0, seconds[`{liveness="live",service_name="agent"}`])

	// Only the configured path serves metrics.
	resp, _ = scrape(t, "http://"+cfg.NetAddr.Endpoint+"/metrics", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	require.NoError(t, exp.Shutdown(context.Background()))
	_, err = net.Dial("tcp", cfg.NetAddr.Endpoint)
	require.Error(t, err, "the listener is closed after Shutdown")
	require.NoError(t, exp.Shutdown(context.Background()), "Shutdown twice is harmless")
}

func TestStartFailsWhenPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()

	cfg := NewDefaultConfig()
	cfg.NetAddr.Endpoint = ln.Addr().String()
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	err = exp.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, "orphanmetrics: listening on")
	require.NoError(t, exp.Shutdown(context.Background()))
}

func TestShutdownWithoutStart(t *testing.T) {
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), NewDefaultConfig())
	require.NoError(t, err)
	require.NoError(t, exp.Shutdown(context.Background()))
}

func TestConsumeBeforeStart(t *testing.T) {
	// Recording does not depend on the server: metrics consumed before
	// Start are served once it runs.
	cfg := NewDefaultConfig()
	cfg.Mode = orphanmetrics.ModeAnnotate
	cfg.NetAddr.Endpoint = freeEndpoint(t)
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.ConsumeTraces(context.Background(), buildTraces(t, scenario(t)...)))
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()
	_, body := scrape(t, "http://"+cfg.NetAddr.Endpoint+"/metrics", "")
	assert.Contains(t, string(body), `orphanwatch_roots_total{end_reason="cancelled",service_name="agent"} 1`)
	assert.False(t, exp.Capabilities().MutatesData)
}

func TestStartFailsWithUnknownAuthenticator(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.NetAddr.Endpoint = freeEndpoint(t)
	cfg.Auth = configoptional.Some(confighttp.AuthConfig{Config: configauth.Config{AuthenticatorID: component.MustNewID("missing")}})
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	err = exp.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, "orphanmetrics: creating HTTP server")
	require.NoError(t, exp.Shutdown(context.Background()))
	// The listener was released: the port can be bound again.
	ln, err := net.Listen("tcp", cfg.NetAddr.Endpoint)
	require.NoError(t, err)
	require.NoError(t, ln.Close())
}
