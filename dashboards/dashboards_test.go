package dashboards_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.yaml.in/yaml/v3"

	"github.com/orphanwatch/orphanwatch/dashboards"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/telemetrydoc"
)

// The committed JSON files are exactly what the generator writes.
func TestCommittedDashboardsAreGenerated(t *testing.T) {
	for _, f := range dashboards.Files() {
		want, err := dashboards.Render(f)
		require.NoError(t, err)
		got, err := os.ReadFile(f.Name)
		require.NoError(t, err, "dashboards/%s is missing: run go run ./cmd/gendashboards", f.Name)
		if !bytes.Equal(got, want) {
			t.Errorf("dashboards/%s differs from the generator's output: run go run ./cmd/gendashboards", f.Name)
		}
	}
}

// vars stands in for what Grafana substitutes.
var vars = map[string]string{
	"__rate_interval": "1m", "__interval": "30s", "__range": "1h",
	"service": ".*", "instance": ".*", "datasource": "prometheus",
}

func committed(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range dashboards.Files() {
		b, err := os.ReadFile(f.Name)
		require.NoError(t, err)
		out[f.Name] = b
	}
	return out
}

// Every query parses as PromQL once Grafana's variables are substituted.
func TestQueriesParse(t *testing.T) {
	n := 0
	for name, b := range committed(t) {
		qs, err := dashboards.Queries(b)
		require.NoError(t, err)
		require.NotEmpty(t, qs, name)
		for _, q := range qs {
			n++
			expanded := dashboards.Expand(q.Expr, vars)
			assert.NotContains(t, expanded, "$", "%s: unexpanded variable in %q", q, expanded)
			_, err := dashboards.Parse(expanded)
			assert.NoError(t, err, "%s: %s", q, q.Expr)
		}
	}
	t.Logf("%d queries parsed", n)
}

// Every query, and every variable query, names only metrics that orphanwatch serves, under the
// names they have when scraped and when pushed as OTLP (config/push): a plain name must be
// served both ways, a name pattern must match a name of each way.
func TestQueriesNameServedMetrics(t *testing.T) {
	scraped, pushed := servedMetrics(t)
	matchesOne := func(m *labels.Matcher, set map[string]bool) bool {
		for n := range set {
			if m.Matches(n) {
				return true
			}
		}
		return false
	}
	used := map[string]bool{}
	for name, b := range committed(t) {
		qs, err := dashboards.Queries(b)
		require.NoError(t, err)
		for _, q := range qs {
			ms, err := dashboards.NameMatchers(dashboards.Expand(q.Expr, vars))
			require.NoError(t, err, "%s", q)
			require.NotEmpty(t, ms, "%s names no metric", q)
			for _, m := range ms {
				if m.Type == labels.MatchEqual {
					used[m.Value] = true
				}
				assert.True(t, matchesOne(m, scraped), "%s: %s matches no metric served by the exporter, the processor or the collector", q, m)
				assert.True(t, matchesOne(m, pushed), "%s: %s matches no metric as pushed over OTLP", q, m)
			}
		}
		vq, err := dashboards.VariableQueries(b)
		require.NoError(t, err)
		for v, q := range vq {
			m, _, err := dashboards.LabelValuesMetric(q)
			require.NoError(t, err, "%s: variable %s", name, v)
			if !strings.HasPrefix(m, "{") {
				assert.True(t, scraped[m] && pushed[m], "%s: variable %s: %s is not served under one name both ways", name, v, m)
				continue
			}
			// A selector ({__name__=~"a|b"}, gauges of either mode): each name it matches is
			// served under one name both ways, and it matches some.
			ms, err := dashboards.NameMatchers(m)
			require.NoError(t, err, "%s: variable %s", name, v)
			require.Len(t, ms, 1, "%s: variable %s", name, v)
			assert.True(t, matchesOne(ms[0], scraped) && matchesOne(ms[0], pushed), "%s: variable %s: %s matches no metric served both ways", name, v, m)
			for n := range scraped {
				if ms[0].Matches(n) {
					assert.True(t, pushed[n], "%s: variable %s: %s is scraped as %s but not pushed so", name, v, m, n)
				}
			}
		}
	}
	// Every metric of the exporter's contract appears on some dashboard.
	for _, m := range []string{
		"orphanwatch_runs_total", "orphanwatch_attempts_total", "orphanwatch_roots_total",
		"orphanwatch_spend_seconds_total", "orphanwatch_spend_tokens_total", "orphanwatch_spend_cost_usd_total",
		"orphanwatch_model_calls_total", "orphanwatch_outlive_seconds_bucket", "orphanwatch_unpropagated_total",
		"orphanwatch_label_overflow_total", "orphanwatch_spans_skipped_total", "orphanwatch_series_overflow_total",
		"orphanwatch_cancel_reach_hops_bucket", "orphanwatch_orphaned_depth_hops_bucket",
	} {
		assert.True(t, used[m], "no dashboard shows %s", m)
	}
}

// Panels are complete: a title, a description, unique ids, queries on the ${datasource}
// variable; the propagation dashboard asks for exemplars.
func TestPanels(t *testing.T) {
	uids := map[string]bool{}
	for _, f := range dashboards.Files() {
		d, err := f.Build()
		require.NoError(t, err)
		require.NotNil(t, d.Uid)
		assert.False(t, uids[*d.Uid], "duplicate uid %s", *d.Uid)
		uids[*d.Uid] = true
		assert.Contains(t, d.Tags, dashboards.Tag)

		b, err := dashboards.Render(f)
		require.NoError(t, err)
		var raw struct {
			Panels []struct {
				Type        string `json:"type"`
				ID          int    `json:"id"`
				Title       string `json:"title"`
				Description string `json:"description"`
				Datasource  struct {
					UID string `json:"uid"`
				} `json:"datasource"`
				Targets []struct {
					RefID      string `json:"refId"`
					Datasource struct {
						UID string `json:"uid"`
					} `json:"datasource"`
				} `json:"targets"`
				Panels []json.RawMessage `json:"panels"`
			} `json:"panels"`
		}
		require.NoError(t, json.Unmarshal(b, &raw))
		ids := map[int]bool{}
		for _, p := range raw.Panels {
			assert.False(t, ids[p.ID], "%s: duplicate panel id %d", f.Name, p.ID)
			ids[p.ID] = true
			assert.NotEmpty(t, p.Title, "%s: panel %d", f.Name, p.ID)
			if p.Type == "row" {
				assert.Empty(t, p.Panels, "%s: row %q is collapsed", f.Name, p.Title)
				continue
			}
			assert.NotEmpty(t, p.Description, "%s: %s", f.Name, p.Title)
			assert.Equal(t, "${datasource}", p.Datasource.UID, "%s: %s", f.Name, p.Title)
			require.NotEmpty(t, p.Targets, "%s: %s has no query", f.Name, p.Title)
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				assert.False(t, refs[tg.RefID], "%s: %s: duplicate refId %s", f.Name, p.Title, tg.RefID)
				refs[tg.RefID] = true
				assert.Equal(t, "${datasource}", tg.Datasource.UID, "%s: %s", f.Name, p.Title)
			}
		}
	}

	b, err := os.ReadFile("cancellation-propagation.json")
	require.NoError(t, err)
	qs, err := dashboards.Queries(b)
	require.NoError(t, err)
	exemplars := 0
	for _, q := range qs {
		if q.Exemplar {
			exemplars++
		}
	}
	assert.GreaterOrEqual(t, exemplars, 3, "the propagation dashboard links to traces through exemplars")
}

func TestExpand(t *testing.T) {
	assert.Equal(t, `rate(x{a=~".*"}[1m]) + y[1h] + z[30s]`,
		dashboards.Expand(`rate(x{a=~"$service"}[$__rate_interval]) + y[${__range}] + z[[[__interval]]]`, vars))
	m, l, err := dashboards.LabelValuesMetric("label_values(orphanwatch_runs_total, service_name)")
	require.NoError(t, err)
	assert.Equal(t, []string{"orphanwatch_runs_total", "service_name"}, []string{m, l})
	_, err = dashboards.NameMatchers(`rate({job="x"}[1m])`)
	assert.Error(t, err)
	ms, err := dashboards.NameMatchers(`rate({__name__=~"otelcol_x(_total)?", a="b"}[1m]) / rate(y[1m]) + rate(y[5m])`)
	require.NoError(t, err)
	require.Len(t, ms, 2)
	assert.Equal(t, `__name__="y"`, ms[0].String())
	assert.Equal(t, `__name__=~"otelcol_x(_total)?"`, ms[1].String())
	assert.True(t, ms[1].Matches("otelcol_x_total") && ms[1].Matches("otelcol_x") && !ms[1].Matches("otelcol_x_y"))
}

// servedMetrics is every series name the distribution serves, scraped and pushed. Scraped:
// the exporter's (gathered from a Recorder fed one span of each kind), the orphan processor's
// (read from its telemetry source, named as the collector's Prometheus endpoint shows them:
// counters without _total, histograms as _bucket/_sum/_count), and the collector's own receiver
// counters the health dashboard uses. Pushed as OTLP (config/push): the exporter's names (the
// orphanmetrics connector's OTLP translates back to them), and the processor's and receivers'
// as the OTLP-to-Prometheus translation names them (prometheus/otlptranslator with suffixes,
// as contrib's prometheusremotewrite exporter and Prometheus' OTLP receiver do). The
// end-to-end tests in test/monitoring check both against a running collector.
func servedMetrics(t *testing.T) (scraped, pushed map[string]bool) {
	t.Helper()
	scraped, pushed = map[string]bool{}, map[string]bool{}

	rec, err := orphanmetrics.NewRecorder(orphanmetrics.NewDefaultSettings())
	require.NoError(t, err)
	rec.Record(verdictTraces())
	fams, err := rec.Gatherer().Gather()
	require.NoError(t, err)
	for _, f := range fams {
		addFamily(scraped, f.GetName(), f.GetType())
		addFamily(pushed, f.GetName(), f.GetType())
	}
	for _, m := range []string{"orphanwatch_runs_total", "orphanwatch_unpropagated_total", "orphanwatch_outlive_seconds_bucket", "orphanwatch_label_overflow_total"} {
		require.True(t, scraped[m], "the exporter did not serve %s: the test's traces miss a verdict", m)
	}

	type instrument struct{ kind, name, unit string }
	instruments := []instrument{
		{"Int64Counter", "otelcol_receiver_accepted_spans", "{spans}"},
		{"Int64Counter", "otelcol_receiver_refused_spans", "{spans}"},
		{"Int64Counter", "otelcol_receiver_failed_spans", "{spans}"},
		{"Int64Counter", "otelcol_exporter_sent_spans", "{spans}"},
		{"Int64Counter", "otelcol_exporter_send_failed_spans", "{spans}"},
	}
	// The telemetry of the components that decide verdicts: the processor (annotate mode), the
	// exporter and the connector (observe mode), as their metadata.yaml declares it (each
	// component's TestMetadataMatchesTelemetry checks its builder creates exactly that).
	kinds := map[string]string{"Sumtrue": "Counter", "Sumfalse": "UpDownCounter", "Gauge": "Gauge", "Histogram": "Histogram"}
	for _, f := range []string{
		"../processor/orphanprocessor/metadata.yaml",
		"../exporter/orphanmetricsexporter/metadata.yaml",
		"../connector/orphanmetricsconnector/metadata.yaml",
	} {
		declared, err := telemetrydoc.FromMetadata(f)
		require.NoError(t, err)
		require.NotEmpty(t, declared, f)
		for _, in := range declared {
			instruments = append(instruments, instrument{kinds[in.Type+in.Monotonic], in.Name, in.Unit})
		}
	}
	re := regexp.MustCompile(`\b(?:m|meter)\.(Int64Counter|Float64Counter|Int64UpDownCounter|Float64UpDownCounter|Float64Histogram|Int64Histogram|Int64ObservableGauge|Float64ObservableGauge|Int64ObservableCounter|Int64Gauge|Float64Gauge)\(\s*"([a-z0-9_]+)",\s*metric\.WithDescription\("(?:[^"\\]|\\.)*"\),\s*metric\.WithUnit\("([^"]*)"\)`)
	// The kafka receiver's own telemetry (the tier's members), from the contrib module this
	// repository is built with.
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/kafkareceiver").Output()
	require.NoError(t, err)
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "internal", "metadata", "generated_telemetry.go"))
	require.NoError(t, err)
	kafka := re.FindAllStringSubmatch(string(src), -1)
	require.NotEmpty(t, kafka, "no metric found in the kafka receiver's generated_telemetry.go")
	for _, m := range kafka {
		instruments = append(instruments, instrument{m[1], m[2], m[3]})
	}
	namer := otlptranslator.MetricNamer{WithMetricSuffixes: true}
	for _, in := range instruments {
		var typ otlptranslator.MetricType = otlptranslator.MetricTypeGauge
		prom := dto.MetricType_GAUGE
		switch {
		case strings.HasSuffix(in.kind, "Histogram"):
			typ, prom = otlptranslator.MetricTypeHistogram, dto.MetricType_HISTOGRAM
		case strings.HasSuffix(in.kind, "UpDownCounter"):
			typ = otlptranslator.MetricTypeNonMonotonicCounter
		case strings.HasSuffix(in.kind, "Counter"), strings.HasSuffix(in.kind, "ObservableCounter"):
			typ = otlptranslator.MetricTypeMonotonicCounter
		}
		addFamily(scraped, in.name, prom) // counters without _total on the collector's endpoint
		name, err := namer.Build(otlptranslator.Metric{Name: in.name, Unit: in.unit, Type: typ})
		require.NoError(t, err, in.name)
		addFamily(pushed, name, prom)
	}
	// The hop histograms of cancellation reach (issue 13), by root service, from the
	// orphanwatch.cancel.reach_hops and orphanwatch.orphaned.depth_hops attributes the processor
	// writes on cancelled and deadline_exceeded roots (verdictTraces carries both). Listed here
	// as well, so that the dashboards' names are checked even where the exporter does not serve
	// them yet.
	for _, m := range []string{"orphanwatch_cancel_reach_hops", "orphanwatch_orphaned_depth_hops"} {
		addFamily(scraped, m, dto.MetricType_HISTOGRAM)
		addFamily(pushed, m, dto.MetricType_HISTOGRAM)
	}
	for what, set := range map[string]map[string]bool{"scraped": scraped, "pushed": pushed} {
		names := make([]string, 0, len(set))
		for n := range set {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Logf("%s: %s", what, strings.Join(names, " "))
	}
	return scraped, pushed
}

func addFamily(set map[string]bool, name string, typ dto.MetricType) {
	if typ == dto.MetricType_HISTOGRAM {
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			set[name+s] = true
		}
		return
	}
	set[name] = true
}

// verdictTraces is a root and an orphaned model call as the processor writes them: enough to
// create every metric family of the exporter.
func verdictTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	now := time.Now()
	ts := func(d time.Duration) pcommon.Timestamp { return pcommon.NewTimestampFromTime(now.Add(d)) }

	gw := td.ResourceSpans().AppendEmpty()
	gw.Resource().Attributes().PutStr("service.name", "gateway")
	root := gw.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	root.SetTraceID(pcommon.TraceID{1})
	root.SetSpanID(pcommon.SpanID{1})
	root.SetName("POST /ask")
	root.SetKind(ptrace.SpanKindServer)
	root.SetStartTimestamp(ts(0))
	root.SetEndTimestamp(ts(time.Second))
	root.Attributes().PutStr("orphanwatch.liveness", "live")
	root.Attributes().PutStr("orphanwatch.root.end_reason", "cancelled")
	root.Attributes().PutInt("orphanwatch.cancel.reach_hops", 0)
	root.Attributes().PutInt("orphanwatch.orphaned.depth_hops", 1)

	ag := td.ResourceSpans().AppendEmpty()
	ag.Resource().Attributes().PutStr("service.name", "researcher")
	call := ag.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	call.SetTraceID(pcommon.TraceID{1})
	call.SetSpanID(pcommon.SpanID{2})
	call.SetParentSpanID(pcommon.SpanID{1})
	call.SetName("chat gpt-4o")
	call.SetKind(ptrace.SpanKindClient)
	call.SetStartTimestamp(ts(2 * time.Second))
	call.SetEndTimestamp(ts(3 * time.Second))
	a := call.Attributes()
	a.PutStr("orphanwatch.liveness", "orphaned")
	a.PutBool("orphanwatch.started_after_gone", true)
	a.PutDouble("orphanwatch.after_gone", 2)
	a.PutInt("orphanwatch.attempt", 1)
	a.PutStr("orphanwatch.run.outcome", "delivered_to_nobody")
	a.PutInt("orphanwatch.run.attempts", 1)
	a.PutStr("orphanwatch.run.result", "ok")
	a.PutStr("orphanwatch.caller.service", "gateway")
	a.PutStr("orphanwatch.spend.model", "gpt-4o")
	a.PutInt("orphanwatch.spend.input_tokens", 1000)
	a.PutInt("orphanwatch.spend.output_tokens", 100)
	a.PutDouble("orphanwatch.spend.cost", 0.0035)
	return td
}

// The provisioning files load the dashboards from a folder and link exemplars' trace_id (the
// label the exporter writes) to a tracing datasource.
func TestProvisioning(t *testing.T) {
	var prov struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	b, err := os.ReadFile("provisioning/dashboards.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &prov))
	assert.Equal(t, 1, prov.APIVersion)
	require.Len(t, prov.Providers, 1)
	assert.Equal(t, "file", prov.Providers[0].Type)
	assert.NotEmpty(t, prov.Providers[0].Options.Path)

	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			UID      string `yaml:"uid"`
			Type     string `yaml:"type"`
			JSONData struct {
				Exemplars []struct {
					Name          string `yaml:"name"`
					DatasourceUID string `yaml:"datasourceUid"`
				} `yaml:"exemplarTraceIdDestinations"`
			} `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	b, err = os.ReadFile("provisioning/datasources.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &ds))
	uids := map[string]string{}
	for _, d := range ds.Datasources {
		uids[d.UID] = d.Type
	}
	linked := false
	for _, d := range ds.Datasources {
		for _, e := range d.JSONData.Exemplars {
			assert.Equal(t, "trace_id", e.Name)
			assert.Equal(t, "tempo", uids[e.DatasourceUID], "exemplar link to %s", e.DatasourceUID)
			linked = d.Type == "prometheus"
		}
	}
	assert.True(t, linked, "no Prometheus datasource links exemplars to traces")
}

// TestQueryMode: the pipeline-health queries of one mode only say so, and the rest are of both.
func TestQueryMode(t *testing.T) {
	b, err := os.ReadFile("pipeline-health.json")
	require.NoError(t, err)
	qs, err := dashboards.Queries(b)
	require.NoError(t, err)
	got := map[string]string{}
	count := map[string]int{}
	for _, q := range qs {
		got[q.Panel+"/"+q.RefID] = q.Mode()
		count[q.Mode()]++
	}
	assert.Equal(t, "", got["Spans per second/B"], "decided: either component")
	assert.Equal(t, "annotate", got["Spans per second/C"], "orphaned: the processor's count")
	assert.Equal(t, "observe", got["Verdicts owed and records kept/D"], "held roots")
	assert.Equal(t, "annotate", got["Decision wait (annotate mode)/A"])
	assert.Equal(t, "", got["Verdict latency/A"])
	assert.Greater(t, count[""], count["annotate"]+count["observe"], "most queries serve both modes")
}
