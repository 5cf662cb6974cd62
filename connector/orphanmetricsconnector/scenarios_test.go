package orphanmetricsconnector_test

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/otlptranslator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/judged"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// exporterText records the batches with the orphanmetrics exporter's recorder and returns its
// Prometheus text, as the exporter serves it.
func exporterText(t testing.TB, cfg *orphanmetrics.Settings, batches []ptrace.Traces) *orphanmetrics.Recorder {
	t.Helper()
	rec, err := orphanmetrics.NewRecorder(cfg)
	require.NoError(t, err)
	for _, td := range batches {
		rec.Record(td)
	}
	return rec
}

// exporterSeries is what the orphanmetrics exporter's scrape would show after batches: its text
// format parsed and flattened.
func exporterSeries(t testing.TB, batches []ptrace.Traces) map[string]sample {
	t.Helper()
	var text bytes.Buffer
	require.NoError(t, exporterText(t, nil, batches).WriteText(&text))
	return flatten(parseText(t, &text), nil)
}

// judgeScenario is what the orphan processor sends on for scenario sc (S8 as its shuffled
// batches, the others as one batch).
func judgeScenario(t testing.TB, sc scenarios.Scenario) []ptrace.Traces {
	t.Helper()
	if sc.ID == "S8" {
		batches, _ := scenarios.S8Batches()
		return judged.Traces(t, batches...)
	}
	td, _ := sc.Build()
	return judged.Traces(t, td)
}

// runConnector sends the batches through an orphanmetrics connector made by the factory and
// shuts it down (its final flush sends everything to next).
func runConnector(t testing.TB, cfg *orphanmetricsconnector.Config, next consumer.Metrics, batches []ptrace.Traces) {
	t.Helper()
	cfg.Mode = orphanmetrics.ModeAnnotate // the batches were judged by the orphan processor
	f := orphanmetricsconnector.NewFactory()
	c, err := f.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(f.Type()), cfg, next)
	require.NoError(t, err)
	componentcheck.Feed(t, c, batches...)
}

// prometheusLabel reports the labels contrib's prometheus exporter adds from the resource and
// scope (job and instance from service.name and service.instance.id, otel_scope_*): not part
// of the series' own labels.
func prometheusLabel(l string) bool {
	return l == "job" || l == "instance" || strings.HasPrefix(l, "otel_scope_")
}

// TestScenariosThroughPrometheusExporter runs every scenario (S8 as its shuffled batches)
// through the orphan processor, then through the orphanmetrics exporter's recorder and through
// the connector into contrib's prometheus exporter (v0.165.1, default translation: metric
// suffixes on), and requires the two scrapes to hold the same series: every name, label set,
// type and value, the health counters, zeroes and histogram buckets included. Only the labels
// the prometheus exporter takes from resource and scope (job, instance, otel_scope_*) and its
// target_info are left out.
func TestScenariosThroughPrometheusExporter(t *testing.T) {
	all := scenarios.All()
	for _, sc := range all {
		t.Run(sc.ID, func(t *testing.T) {
			judged := judgeScenario(t, sc)
			want := exporterSeries(t, judged)

			pf := prometheusexporter.NewFactory()
			pcfg := pf.CreateDefaultConfig().(*prometheusexporter.Config)
			addr := freeAddr(t)
			pcfg.ServerConfig.NetAddr.Endpoint = addr
			pcfg.QueueBatchConfig = configoptional.None[exporterhelper.QueueBatchConfig]() // synchronous
			pexp, err := pf.CreateMetrics(context.Background(), exportertest.NewNopSettings(pf.Type()), pcfg)
			require.NoError(t, err)
			require.NoError(t, pexp.Start(context.Background(), componenttest.NewNopHost()))
			t.Cleanup(func() { require.NoError(t, pexp.Shutdown(context.Background())) })

			runConnector(t, orphanmetricsconnector.NewDefaultConfig(), pexp, judged)
			var got map[string]sample
			for _, mf := range scrape(t, "http://"+addr+"/metrics") {
				if mf.GetName() == "target_info" {
					continue
				}
				for k, v := range flatten([]*dto.MetricFamily{mf}, prometheusLabel) {
					if got == nil {
						got = map[string]sample{}
					}
					_, dup := got[k]
					require.False(t, dup, "%s: series %s twice (the resource labels would be needed to tell them apart)", sc.ID, k)
					got[k] = v
				}
			}
			require.NotEmpty(t, got)
			assertSameSeries(t, want, got)
		})
	}
}

func assertSameSeries(t *testing.T, want, got map[string]sample) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		w, wok := want[k]
		g, gok := got[k]
		switch {
		case !gok:
			t.Errorf("missing from the connector: %s = %v", k, w.value)
		case !wok:
			t.Errorf("only from the connector: %s = %v", k, g.value)
		case w != g:
			t.Errorf("%s: exporter %v (%v), connector %v (%v)", k, w.value, w.typ, g.value, g.typ)
		}
	}
	t.Logf("%d series compared", len(want))
}

// TestScenariosAsData compares every scenario's series as data, with the names a Prometheus
// user sees (otlptranslator with suffixes, as prometheusremotewrite and the prometheus exporter
// translate them) and with their exemplars: each series carries the exemplar (trace ID, span
// ID, value) the exporter's OpenMetrics scrape shows for it.
func TestScenariosAsData(t *testing.T) {
	namer := otlptranslator.MetricNamer{WithMetricSuffixes: true}
	for _, sc := range scenarios.All() {
		t.Run(sc.ID, func(t *testing.T) {
			judged := judgeScenario(t, sc)
			rec := exporterText(t, nil, judged)
			mfs, err := rec.Gatherer().Gather()
			require.NoError(t, err)
			want := flatten(mfs, nil)
			wantEx := map[string]string{}
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					k := flatKey(mf.GetName(), m.GetLabel())
					if e := m.GetCounter().GetExemplar(); e != nil {
						wantEx[k] = exemplarString(e.GetValue(), e.GetLabel())
					}
					for _, b := range m.GetHistogram().GetBucket() {
						if e := b.GetExemplar(); e != nil {
							wantEx[k] += exemplarString(e.GetValue(), e.GetLabel())
						}
					}
				}
			}

			sink := new(consumertest.MetricsSink)
			start := time.Now()
			runConnector(t, orphanmetricsconnector.NewDefaultConfig(), sink, judged)
			require.Len(t, sink.AllMetrics(), 1, "one flush, at shutdown")
			md := sink.AllMetrics()[0]
			got := map[string]sample{}
			gotEx := map[string]string{}
			for _, rm := range md.ResourceMetrics().All() {
				svcVal, hasSvc := rm.Resource().Attributes().Get("service.name")
				svc := ""
				if hasSvc {
					svc = svcVal.Str()
				}
				for _, sm := range rm.ScopeMetrics().All() {
					for _, m := range sm.Metrics().All() {
						var typ otlptranslator.MetricType = otlptranslator.MetricTypeGauge
						switch m.Type() {
						case pmetric.MetricTypeSum:
							require.True(t, m.Sum().IsMonotonic())
							require.Equal(t, pmetric.AggregationTemporalityCumulative, m.Sum().AggregationTemporality())
							typ = otlptranslator.MetricTypeMonotonicCounter
						case pmetric.MetricTypeHistogram:
							require.Equal(t, pmetric.AggregationTemporalityCumulative, m.Histogram().AggregationTemporality())
							typ = otlptranslator.MetricTypeHistogram
						}
						name, err := namer.Build(otlptranslator.Metric{Name: m.Name(), Unit: m.Unit(), Type: typ})
						require.NoError(t, err)
						for _, dp := range dataPoints(m) {
							// The resource is the service of the series.
							if s, ok := dp.attrs.Get("service_name"); ok {
								require.True(t, hasSvc, name)
								assert.Equal(t, s.Str(), svc, name)
							} else if s, ok := dp.attrs.Get("callee_service"); ok {
								assert.Equal(t, s.Str(), svc, name)
							} else {
								assert.False(t, hasSvc, "%s: a health series under service %v", name, svc)
							}
							assert.GreaterOrEqual(t, dp.start.AsTime(), start.Add(-time.Second), name)
							assert.GreaterOrEqual(t, dp.time, dp.start, name)
							for k, v := range dp.samples(name) {
								got[k] = v
							}
							for _, e := range dp.exemplars.All() {
								gotEx[flatKey(name, dp.labels)] += exemplarString(e.DoubleValue(), []*dto.LabelPair{
									{Name: ptr("span_id"), Value: ptr(e.SpanID().String())},
									{Name: ptr("trace_id"), Value: ptr(e.TraceID().String())},
								})
							}
						}
					}
				}
			}
			assertSameSeries(t, want, got)
			assert.Equal(t, wantEx, gotEx, "exemplars")
			if sc.ID == "S2" {
				assert.NotEmpty(t, gotEx, "S2 has orphaned series: exemplars expected")
			}
		})
	}
}
