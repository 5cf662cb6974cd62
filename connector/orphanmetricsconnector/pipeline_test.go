package orphanmetricsconnector_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/otlptranslator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/otlprecv"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor"
)

// TestCollectorPipelinePushesOTLP runs a collector in-process: OTLP/HTTP traces in, the
// orphanmetrics connector observing them (the shipped default: no processor), and a metrics pipeline whose otlp_http exporter
// pushes to an OTLP receiver this test starts on 127.0.0.1. S2's traces go in; what the
// receiver gets must be S2's expected metrics (testdata/scenarios/s02_caller_leaves/expected.json),
// every series with its value once translated to Prometheus names, under the resource of its
// service, with exemplars pointing at S2's trace on the orphan series.
func TestCollectorPipelinePushesOTLP(t *testing.T) {
	// The OTLP receiver standing for a metrics backend.
	sink := new(consumertest.MetricsSink)
	backend := freeAddr(t)
	recv := otlprecv.StartHTTP(t, backend, sink)
	t.Cleanup(func() { require.NoError(t, recv.Shutdown(context.Background())) })

	in := freeAddr(t)
	cfg := fmt.Sprintf(`
receivers:
  otlp: {protocols: {http: {endpoint: %q}}}
connectors:
  orphanmetrics:
    metrics_flush_interval: 200ms
    decision_wait: 1s
    prices:
      gpt-4o: {input_per_million: 2.50, output_per_million: 10.00}
      gpt-4o-mini: {input_per_million: 0.15, output_per_million: 0.60}
exporters:
  otlp_http:
    endpoint: http://%s
    retry_on_failure: {enabled: false}
service:
  telemetry: {metrics: {level: none}, logs: {level: warn}}
  pipelines:
    traces: {receivers: [otlp], exporters: [orphanmetrics]}
    metrics: {receivers: [orphanmetrics], exporters: [otlp_http]}
`, in, backend)
	col, err := otelcol.NewCollector(otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol-test", Version: "test"},
		Factories: pipelineFactories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			URIs:              []string{"yaml:" + cfg},
			ProviderFactories: []confmap.ProviderFactory{yamlprovider.NewFactory()},
		}},
		SkipSettingGRPCLogger: true,
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- col.Run(context.Background()) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			col.Shutdown()
			select {
			case err := <-done:
				assert.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Error("collector did not stop in 30s")
			}
		})
	}
	t.Cleanup(stop)
	deadline := time.After(30 * time.Second)
	for col.GetState() != otelcol.StateRunning {
		select {
		case <-deadline:
			t.Fatal("collector did not start in 30s")
		case err := <-done:
			t.Fatalf("collector stopped: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}

	td, exp := scenarios.S2()
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	require.NoError(t, err)
	resp, err := http.Post("http://"+in+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)

	want := map[string]float64{}
	for _, m := range exp.Metrics {
		want[m.Name+scenarios.LabelKey(m.Labels)] = m.Value
	}
	require.NotEmpty(t, want)
	var got map[string]float64
	var exemplarTraces map[string]bool
	// The sums are cumulative: the last push holds everything.
	require.Eventually(t, func() bool {
		all := sink.AllMetrics()
		if len(all) == 0 {
			return false
		}
		got, exemplarTraces = received(t, all[len(all)-1])
		return sameValues(want, got)
	}, 30*time.Second, 100*time.Millisecond, "received %v", &got)
	stop()

	assertValues(t, want, got)
	trace := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()
	assert.Equal(t, map[string]bool{trace: true}, exemplarTraces, "exemplars point at S2's trace")
}

// received flattens pushed metrics into non-zero series keyed `prometheus_name{labels}` (as
// expected.json writes them), leaving out the health counters as internal/testsupport/scenarios does, and
// checks that each series sits under the resource of its service. It also returns the trace
// IDs of the exemplars.
func received(t *testing.T, md pmetric.Metrics) (map[string]float64, map[string]bool) {
	namer := otlptranslator.MetricNamer{WithMetricSuffixes: true}
	out := map[string]float64{}
	traces := map[string]bool{}
	for _, rm := range md.ResourceMetrics().All() {
		svc, _ := rm.Resource().Attributes().Get("service.name")
		for _, sm := range rm.ScopeMetrics().All() {
			assert.Equal(t, "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector", sm.Scope().Name())
			for _, m := range sm.Metrics().All() {
				var typ otlptranslator.MetricType = otlptranslator.MetricTypeMonotonicCounter
				if m.Type() == pmetric.MetricTypeHistogram {
					typ = otlptranslator.MetricTypeHistogram
				}
				name, err := namer.Build(otlptranslator.Metric{Name: m.Name(), Unit: m.Unit(), Type: typ})
				require.NoError(t, err)
				if strings.HasSuffix(name, "_label_overflow_total") || strings.HasSuffix(name, "_spans_skipped_total") || strings.HasSuffix(name, "_series_overflow_total") {
					continue
				}
				for _, p := range dataPoints(m) {
					labels := map[string]string{}
					for k, v := range p.attrs.All() {
						labels[k] = v.Str()
					}
					if s, ok := labels["service_name"]; ok {
						assert.Equal(t, s, svc.Str(), name)
					}
					for _, e := range p.exemplars.All() {
						traces[e.TraceID().String()] = true
					}
					switch p.typ {
					case pmetric.MetricTypeSum:
						if p.sum != 0 {
							out[name+scenarios.LabelKey(labels)] = p.sum
						}
					case pmetric.MetricTypeHistogram:
						if p.hist.Count() != 0 {
							out[name+"_count"+scenarios.LabelKey(labels)] = float64(p.hist.Count())
							out[name+"_sum"+scenarios.LabelKey(labels)] = p.hist.Sum()
						}
					}
				}
			}
		}
	}
	return out, traces
}

func sameValues(want, got map[string]float64) bool {
	if len(want) != len(got) {
		return false
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
			return false
		}
	}
	return true
}

func assertValues(t *testing.T, want, got map[string]float64) {
	for k, w := range want {
		if assert.Contains(t, got, k) {
			assert.InDelta(t, w, got[k], 1e-9*math.Max(1, math.Abs(w)), k)
		}
	}
	for k := range got {
		assert.Contains(t, want, k, "unexpected series")
	}
}

// pipelineFactories are the components of the test collector: the orphan processor and the
// connector with the collector's own OTLP receiver and otlp_http exporter.
func pipelineFactories() (otelcol.Factories, error) {
	f := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Processors, err = otelcol.MakeFactoryMap[processor.Factory](orphanprocessor.NewFactory()); err != nil {
		return f, err
	}
	if f.Connectors, err = otelcol.MakeFactoryMap[connector.Factory](orphanmetricsconnector.NewFactory()); err != nil {
		return f, err
	}
	f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](otlphttpexporter.NewFactory())
	return f, err
}
