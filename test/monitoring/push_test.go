package monitoring_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/orphanwatch/orphanwatch/dashboards"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
)

// Alerts that only a scrape can raise: a push has no `up` series.
var scrapeOnly = map[string]bool{"OrphanwatchTargetDown": true}

// Alerts whose selectors have data on a healthy collector in annotate mode only: in observe
// mode OrphanwatchDownstreamRefused reads the exporters' otelcol_exporter_send_failed_spans,
// which the collector creates on the first failure (its annotate-mode series, the processor's
// downstream_errors, starts at 0). In observe mode only its expression is evaluated.
var annotateOnlyAlerts = map[string]bool{"OrphanwatchDownstreamRefused": true}

// Alerts that fire on missing data: on healthy pushed traffic they must stay quiet.
var absenceAlerts = map[string]bool{
	"OrphanwatchNoSpans":                true,
	"OrphanwatchMetricsAbsent":          true,
	"OrphanwatchAlertThresholdsMissing": true,
}

// TestPushMonitoring proves push-only monitoring (docs/monitoring.md, "Push") on the real
// servers, all on 127.0.0.1: Prometheus (Debian's 2.42) with its remote write receiver and the
// committed rules, and one collector per shipped push config (config/push/*.yaml, ports and
// the telemetry endpoint from the environment, the metrics exporter pointed at the test's
// servers, intervals cut to a second). Prometheus 2.42 has no OTLP receiver: a third collector
// of this distribution stands for the backend's OTLP endpoint (Mimir's /otlp/v1/metrics,
// Prometheus 2.47+'s --enable-feature=otlp-write-receiver), turning the OTLP it receives into
// remote write with contrib's prometheusremotewrite exporter, the same OTLP-to-Prometheus
// translation (prometheus/otlptranslator) as theirs.
//
//   - prometheusremotewrite.yaml: orphanwatch metrics remote-written, the collector's own
//     telemetry pushed as OTLP to the OTLP hop;
//   - otlp_http.yaml: both pushed as OTLP to the OTLP hop.
//
// With scenario traffic sent to both, every pipeline-health alert expression (each side of
// its comparisons, and every selector in it) and every pipeline-health panel query returns
// data from both collectors' series, the alerts that fire on missing data stay quiet, every
// model is billed at its own price of the shipped table, and every orphaned-spend panel
// query returns non-zero data.
func TestPushMonitoring(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three collectors and Prometheus")
	}
	promBin := e2e.RequireTool(t, "prometheus")
	bin := e2e.BuildCollector(t, t.TempDir())

	// Prometheus: the committed rules with their windows cut, evaluated every second; no scrape.
	rules, names := committedRules(t)
	promCfg := fmt.Sprintf("global: {evaluation_interval: %s}\nrule_files: [%s]\n",
		model.Duration(interval), strings.Join(names, ", "))
	prom := e2e.StartPrometheus(t, promBin, []byte(promCfg), rules, "--web.enable-remote-write-receiver")
	s := &stack{prom: prom, api: prom.API(t), start: time.Now()}
	writeURL := prom.URL() + "/api/v1/write"

	// The OTLP hop.
	hop := e2e.FreePort(t)
	hopHealth := e2e.FreePort(t)
	e2e.StartCollectorWithConfig(t, bin, []byte(fmt.Sprintf(`receivers:
  otlp: {protocols: {http: {endpoint: "127.0.0.1:%d"}}}
exporters:
  prometheus_remote_write: {http: {endpoint: "%s"}}
extensions:
  health_check: {endpoint: "127.0.0.1:%d"}
service:
  extensions: [health_check]
  pipelines:
    metrics: {receivers: [otlp], exporters: [prometheus_remote_write]}
  telemetry: {metrics: {level: none}}
`, hop, writeURL, hopHealth)), nil, fmt.Sprintf("http://127.0.0.1:%d/", hopHealth))
	hopURL := fmt.Sprintf("http://127.0.0.1:%d", hop)

	// The collectors of the shipped push configs.
	pushed := map[string]string{ // config -> where its metrics exporter sends
		"prometheusremotewrite.yaml": writeURL,
		"otlp_http.yaml":             hopURL,
	}
	var collectors []*e2e.Collector
	hostnames := map[string]string{}
	for _, f := range []string{"prometheusremotewrite.yaml", "otlp_http.yaml"} {
		cfg, err := e2e.PushConfigForTest(repoFile(t, "config/push/"+f), e2e.PushOverrides{
			MetricsEndpoint: pushed[f],
			Settings:        map[string]any{"decision_wait": decisionWait.String(), "metrics_flush_interval": interval.String()},
			ReaderInterval:  interval,
		})
		require.NoError(t, err, f)
		cfg = forPushTest(t, cfg)
		c := &e2e.Collector{}
		c.OTLPGRPC, c.OTLPHTTP, c.Telemetry = e2e.FreePort(t), e2e.FreePort(t), e2e.FreePort(t)
		host := "push-" + strings.TrimSuffix(f, ".yaml")
		hostnames[host] = f
		started := e2e.StartCollectorWithConfig(t, bin, cfg, []string{
			"HOSTNAME=" + host,
			fmt.Sprintf("OTLP_GRPC_PORT=%d", c.OTLPGRPC),
			fmt.Sprintf("OTLP_HTTP_PORT=%d", c.OTLPHTTP),
			fmt.Sprintf("TELEMETRY_PORT=%d", c.Telemetry),
			"TELEMETRY_OTLP_ENDPOINT=" + hopURL + "/v1/metrics",
		}, fmt.Sprintf("http://127.0.0.1:%d/metrics", c.Telemetry))
		started.OTLPGRPC, started.OTLPHTTP, started.Telemetry = c.OTLPGRPC, c.OTLPHTTP, c.Telemetry
		collectors = append(collectors, started)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s collector log (tail):\n%s", f, tail(started.Log(), 3000))
			}
		})
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("prometheus log (tail):\n%s", tail(prom.Log(), 3000))
		}
	})

	// Scenario traffic, as in TestMonitoringEndToEnd: S2 (orphaned spend), S9 (root missing),
	// S13 (malformed spans), S1 with one span held back until its trace was decided (late).
	for round := 1; round <= 2; round++ {
		postScenarios(t, collectors, round, "s02_caller_leaves", "s09_root_missing", "s13_bad_input")
	}

	// Both collectors' orphanwatch metrics and own telemetry arrived.
	require.True(t, e2e.WaitFor(60*time.Second, func() bool {
		v, err := s.instant(`count by (collector) (orphanwatch_runs_total)`)
		return err == nil && len(v) == 2
	}), "orphanwatch_runs_total of both push collectors did not reach Prometheus")
	otelNames := s.metricNames(t, "otelcol_")
	t.Logf("otelcol_* names in Prometheus (pushed as OTLP, translated):\n  %s", strings.Join(otelNames, "\n  "))
	// Every model is billed at its own price of the shipped table: gpt-4o-mini (S1, S2) at
	// gpt-4o-mini's, not by the gpt-4o prefix.
	for host, f := range hostnames {
		prices := shippedPrices(t, "config/push/"+f)
		require.Contains(t, prices, "gpt-4o-mini", f)
		cost, err := s.instant(fmt.Sprintf(`sum by (model) (orphanwatch_spend_cost_usd_total{collector=%q})`, host))
		require.NoError(t, err)
		tokens, err := s.instant(fmt.Sprintf(`sum by (model, direction) (orphanwatch_spend_tokens_total{collector=%q})`, host))
		require.NoError(t, err)
		want := map[string]float64{}
		for _, smp := range tokens {
			p := prices[string(smp.Metric["model"])]
			per := p.In
			if smp.Metric["direction"] == "output" {
				per = p.Out
			}
			want[string(smp.Metric["model"])] += float64(smp.Value) * per / 1e6
		}
		got := map[string]float64{}
		for _, smp := range cost {
			got[string(smp.Metric["model"])] = float64(smp.Value)
		}
		require.Contains(t, got, "gpt-4o-mini", "%s: no gpt-4o-mini cost", f)
		for m, w := range want {
			assert.InDelta(t, w, got[m], 1e-9, "%s: cost of %s at the shipped prices", f, m)
		}
		t.Logf("%s: cost by model %v", f, got)
	}

	alerts := pipelineAlerts(t)
	panels := forMode(pipelineQueries(t), "observe") // the push configs observe
	spend, err := dashboards.Queries(repoFile(t, "dashboards/orphaned-spend.json"))
	require.NoError(t, err)
	var pending []string
	ok := e2e.WaitFor(90*time.Second, func() bool {
		pending = pending[:0]
		for _, a := range alerts {
			pending = append(pending, s.checkAlert(a, "observe")...)
		}
		for _, q := range panels {
			if msg := s.checkData(q); msg != "" {
				pending = append(pending, msg)
			}
		}
		// The orphaned-spend dashboard on pushed series: every panel has non-zero data (the
		// spend over the range per service and model, per run outcome, among them).
		for _, q := range spend {
			if msg := s.checkQuery(q); msg != "" {
				pending = append(pending, msg)
			}
		}
		// Each push collector's telemetry: the observing connector's series of two instances.
		v, err := s.instant(`count(count by (instance) ({__name__=~"otelcol_connector_orphanmetrics_spans_judged(_total)?"}))`)
		if err != nil || len(v) != 1 || v[0].Value != 2 {
			pending = append(pending, fmt.Sprintf("telemetry of 2 collectors: %v %v", v, err))
		}
		return len(pending) == 0
	})
	assert.True(t, ok, "without data or firing:\n%s", strings.Join(pending, "\n"))
	t.Logf("%d pipeline-health alerts, %d pipeline-health and %d orphaned-spend panel queries checked", len(alerts), len(panels), len(spend))
	s.checkRulesHealthy(t)
}

// forPushTest adds what the push configs leave to the user ("and your trace store's
// exporter"): a trace exporter in the traces pipeline, the debug exporter standing for the
// trace store's (its otelcol_exporter_sent_spans is what the pipeline-health dashboard reads
// in observe mode); and cuts the connector's run_timeout (5m) to the test's decision wait, so
// that requests' verdict latencies are observed within the test.
func forPushTest(t *testing.T, cfg []byte) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(cfg, &m))
	exporters, _ := m["exporters"].(map[string]any)
	exporters["debug"] = map[string]any{"verbosity": "basic"}
	m["connectors"].(map[string]any)["orphanmetrics"].(map[string]any)["run_timeout"] = decisionWait.String()
	traces := m["service"].(map[string]any)["pipelines"].(map[string]any)["traces"].(map[string]any)
	traces["exporters"] = append(traces["exporters"].([]any), "debug")
	out, err := yaml.Marshal(m)
	require.NoError(t, err)
	return out
}

// pipelineAlerts are the committed pipeline-health alerts as Prometheus runs them in the test
// (windows cut), but the scrape-only ones and the Kafka tier's (tierOnly).
func pipelineAlerts(t *testing.T) []e2e.Rule {
	t.Helper()
	b, err := e2e.RulesForTest(repoFile(t, "config/prometheus/rules/orphanwatch-alerts.yml"), ruleWindow, ruleFor)
	require.NoError(t, err)
	groups, err := e2e.ParseRules(b)
	require.NoError(t, err)
	var out []e2e.Rule
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Labels["category"] == "pipeline" && r.Alert != "" && !scrapeOnly[r.Alert] && !tierOnly(r.Expr) {
				out = append(out, r)
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

// pipelineQueries are every query of the pipeline-health dashboard but the Kafka tier's
// (tierOnly).
func pipelineQueries(t *testing.T) []dashboards.Query {
	t.Helper()
	qs, err := dashboards.Queries(repoFile(t, "dashboards/pipeline-health.json"))
	require.NoError(t, err)
	var out []dashboards.Query
	for _, q := range qs {
		if !tierOnly(q.Expr) {
			out = append(out, q)
		}
	}
	require.NotEmpty(t, out)
	return out
}

// checkAlert evaluates an alert's expression and its parts: every selector and each side of
// every comparison must return data (in observe mode, but for annotateOnlyAlerts); an alert on
// missing data must return none. It returns what is wrong.
func (s *stack) checkAlert(r e2e.Rule, mode string) []string {
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", r.Alert, err)}
	}
	var parts []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			parts = append(parts, n.String())
		case *parser.BinaryExpr:
			if n.Op.IsComparisonOperator() {
				parts = append(parts, n.LHS.String())
			}
		}
		return nil
	})
	if mode == "observe" && annotateOnlyAlerts[r.Alert] {
		parts = nil
	}
	var bad []string
	for _, p := range parts {
		v, err := s.instant(p)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %s: %v", r.Alert, p, err))
		} else if len(v) == 0 {
			bad = append(bad, fmt.Sprintf("%s: no data: %s", r.Alert, p))
		}
	}
	v, err := s.instant(r.Expr)
	switch {
	case err != nil:
		bad = append(bad, fmt.Sprintf("%s: %v", r.Alert, err))
	case absenceAlerts[r.Alert] && len(v) > 0:
		bad = append(bad, fmt.Sprintf("%s fires on pushed data: %v", r.Alert, v))
	}
	return bad
}

// checkData runs a panel query as Grafana would and returns "" when it returned data.
func (s *stack) checkData(q dashboards.Query) string {
	_, _, problem := s.panelValues(q)
	return problem
}

// metricNames lists the metric names in Prometheus that start with prefix.
func (s *stack) metricNames(t *testing.T, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	vals, _, _, err := s.api.LabelValues(ctx, "__name__", nil, s.start.Add(-time.Minute), time.Now())
	require.NoError(t, err)
	var out []string
	for _, v := range vals {
		if strings.HasPrefix(string(v), prefix) {
			out = append(out, string(v))
		}
	}
	sort.Strings(out)
	return out
}

type price struct{ In, Out float64 }

// shippedPrices reads the price table of a shipped config: the prices setting of whichever
// component has it (the orphan processor, or the connector or exporter deciding verdicts).
func shippedPrices(t *testing.T, rel string) map[string]price {
	t.Helper()
	var cfg map[string]map[string]map[string]any
	var raw map[string]any
	require.NoError(t, yaml.Unmarshal(repoFile(t, rel), &raw))
	b, err := yaml.Marshal(map[string]any{"processors": raw["processors"], "connectors": raw["connectors"], "exporters": raw["exporters"]})
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &cfg))
	out := map[string]price{}
	for _, comps := range cfg {
		for _, c := range comps {
			ps, ok := c["prices"].(map[string]any)
			if !ok {
				continue
			}
			for m, v := range ps {
				pm := v.(map[string]any)
				out[m] = price{toFloat(pm["input_per_million"]), toFloat(pm["output_per_million"])}
			}
		}
	}
	require.NotEmpty(t, out, "%s has no prices", rel)
	return out
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	}
	return math.NaN()
}
