// Package monitoring_test proves orphanwatch's alerts and dashboards end to end on the real
// servers: the collector distribution, Prometheus (Debian's package) with the committed rules,
// Alertmanager with the committed routing tree, and a webhook receiver of the test's own, all on
// 127.0.0.1. fanoutsim drives the traffic in-process.
//
//   - blind traffic: every query of every committed dashboard returns data through Prometheus'
//     HTTP API (and, but for panels that show failures, non-zero data), the exemplar queries
//     return exemplars with trace IDs, and OrphanwatchOrphanedCostHigh reaches the webhook
//     through Alertmanager with the expected labels;
//   - cancellation-aware traffic: no orphaned-spend or propagation alert is ever pending or
//     firing.
//
// The test cannot wait for production windows: the committed rules run with their rate windows
// cut to 1m and every `for:` to 5s, Prometheus scrapes and evaluates every second, and
// Alertmanager groups for 1s. Everything else (expressions, thresholds, labels, annotations,
// routes, receivers' paths) is as committed. Every process is stopped by its PID at the end.
//
// Run: cd test/monitoring && go test -run TestMonitoringEndToEnd -v (a module of its own: the
// simulator that drives it requires the aware library, which the collector's module does not)
// Without prometheus and prometheus-alertmanager on PATH the test skips (fails under CI=true);
// `bash .ci/monitoring.sh` installs them.
package monitoring_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/cmd/fanoutsim/sim"
	"github.com/orphanwatch/orphanwatch/cmd/fanoutsim/truth"
	"github.com/orphanwatch/orphanwatch/dashboards"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

const (
	interval     = time.Second     // Prometheus scrape and evaluation interval
	ruleWindow   = time.Minute     // rate windows of the rules, cut from 10m-15m
	ruleFor      = 5 * time.Second // every alert's for:, cut from 5m-30m
	amWait       = time.Second     // Alertmanager group_wait and group_interval
	decisionWait = 10 * time.Second
	// Clock-skew tolerance of the processor and of the simulator's truth. All services share one
	// clock here; the tolerance absorbs the time a cancellation takes to cross a loopback
	// connection on a machine busy with other tests under -race. Blind orphans outlive their
	// roots by seconds.
	tolerance = time.Second
	// The orphan processor forgets idempotency keys beyond this, so that the evictions panel
	// has real data; keys only bind work across traces, which fanoutsim does not do.
	maxIdempotencyKeys = 20
	// S9's spans (their root never comes) leave deferred after decisionWait and are judged
	// without their root this much later, feeding the root-missing and unknown-root panels.
	maxRequestDuration = 5 * time.Second
	// A request's verdict latency is observed once nothing more can come for it: run_timeout
	// (default 5m) after its last verdict at most. Cut, so that the verdict-latency panel has
	// data within the test; longer than any backoff of fanoutsim's loops.
	runTimeout = 15 * time.Second
)

// Panels that show failures: zero is their healthy value.
var zeroIsHealthy = map[string]bool{
	"Spans refused or failed by the receivers (per second)": true,
	"Label values folded into other (per minute)":           true,
	"Series folded into the overflow series (per minute)":   true,
	"Spans skipped by the exporter (per minute)":            true,
	// Blind traffic: the news of a cancellation never leaves the gateway, its reach is 0.
	"Cancellation reach vs orphaned depth (average, hops)/A": true,
	"Cancellation reach vs orphaned depth (p90, hops)/A":     true,
	// The simulator's loops end with a terminal attempt inside one release: runs are open only
	// between two releases of a loop that outlives the wait after its root.
	"Verdicts owed and records kept/B": true,
}

type binaries struct{ collector, prometheus, alertmanager string }

func TestMonitoringEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector, Prometheus and Alertmanager")
	}
	began := time.Now()
	bins := binaries{
		prometheus:   e2e.RequireTool(t, "prometheus"),
		alertmanager: e2e.RequireTool(t, "prometheus-alertmanager", "alertmanager"),
	}
	bins.collector = e2e.BuildCollector(t, t.TempDir())

	// Observe mode (the shipped default: the exporter decides), then annotate mode (the orphan
	// processor decides and writes): every panel query of either mode has data in its mode, and
	// so has every pipeline-health alert's expression in both.
	t.Run("blind traffic fills every panel and the orphaned-spend alert reaches the webhook", func(t *testing.T) {
		testBlind(t, bins, false)
	})
	t.Run("annotate mode: blind traffic fills every panel of annotate mode", func(t *testing.T) {
		testBlind(t, bins, true)
	})
	t.Run("aware traffic keeps the orphan alerts silent", func(t *testing.T) {
		testAware(t, bins)
	})
	t.Logf("end-to-end monitoring test took %s", time.Since(began).Round(time.Second))
}

// stack is one collector, Prometheus, Alertmanager and webhook receiver.
type stack struct {
	mode  string // of the collector: "observe" or "annotate"
	c     *e2e.Collector
	prom  *e2e.Prometheus
	am    *e2e.Alertmanager
	hook  *e2e.Webhook
	api   promv1.API
	start time.Time
}

func repoFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e2e.RepoRoot(), rel))
	require.NoError(t, err)
	return b
}

// committedRules are the committed rule files with their windows cut (ruleWindow, ruleFor), by
// file name, and their names in order.
func committedRules(t *testing.T) (map[string][]byte, []string) {
	t.Helper()
	rules := map[string][]byte{}
	var names []string
	for _, f := range []string{"orphanwatch-thresholds.yml", "orphanwatch-alerts.yml"} {
		b, err := e2e.RulesForTest(repoFile(t, "config/prometheus/rules/"+f), ruleWindow, ruleFor)
		require.NoError(t, err, f)
		rules[f] = b
		names = append(names, f)
	}
	return rules, names
}

func startStack(t *testing.T, bins binaries, annotate bool) *stack {
	t.Helper()
	s := &stack{start: time.Now(), mode: "observe"}
	if annotate {
		s.mode = "annotate"
	}
	s.c = e2e.StartCollector(t, bins.collector, e2e.Options{
		Annotate:     annotate,
		DecisionWait: decisionWait.String(),
		ExtraOrphan: fmt.Sprintf("    clock_skew_tolerance: %s\n    max_request_duration: %s\n    run_timeout: %s\n    limits:\n      max_idempotency_keys: %d\n",
			tolerance, maxRequestDuration, runTimeout, maxIdempotencyKeys),
	})
	s.hook = e2e.StartWebhook(t)

	amCfg, err := e2e.AlertmanagerConfigForTest(repoFile(t, "config/alertmanager/alertmanager.yml"), s.hook.URL, amWait)
	require.NoError(t, err)
	s.am = e2e.StartAlertmanager(t, bins.alertmanager, amCfg)

	rules, names := committedRules(t)
	promCfg, err := e2e.PrometheusConfigForTest(repoFile(t, "config/prometheus/prometheus.yml"), e2e.PrometheusTargets{
		Jobs: map[string]string{
			"orphanwatch":           fmt.Sprintf("127.0.0.1:%d", s.c.Metrics),
			"orphanwatch-collector": fmt.Sprintf("127.0.0.1:%d", s.c.Telemetry),
		},
		Alertmanager: s.am.Addr(),
		RuleFiles:    names,
		Interval:     interval,
	})
	require.NoError(t, err)
	s.prom = e2e.StartPrometheus(t, bins.prometheus, promCfg, rules)
	s.api = s.prom.API(t)

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("collector log (tail):\n%s", tail(s.c.Log(), 3000))
			t.Logf("prometheus log (tail):\n%s", tail(s.prom.Log(), 3000))
			t.Logf("alertmanager log (tail):\n%s", tail(s.am.Log(), 3000))
			t.Logf("webhook: %d notifications, rejected %v", len(s.hook.Messages()), s.hook.Rejected())
		}
	})

	// Both targets up before traffic starts.
	require.True(t, e2e.WaitFor(30*time.Second, func() bool {
		v, err := s.instant(`sum(up{job=~"orphanwatch|orphanwatch-collector"})`)
		return err == nil && len(v) == 1 && v[0].Value == 2
	}), "Prometheus does not scrape both orphanwatch targets")
	return s
}

func (s *stack) instant(q string) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, _, _, err := s.api.Query(ctx, q, time.Now())
	return result[model.Vector](q, v, err)
}

// result is the answer v to the query q, of the type T that q returns, or err.
func result[T model.Value](q string, v model.Value, err error) (T, error) {
	var r T
	if err != nil {
		return r, err
	}
	r, ok := v.(T)
	if !ok {
		return r, fmt.Errorf("%s: %s, not a %T", q, v.Type(), r)
	}
	return r, nil
}

func (s *stack) scalar(t *testing.T, q string) float64 {
	t.Helper()
	v, err := s.instant(q)
	require.NoError(t, err, q)
	if len(v) == 0 {
		return 0
	}
	return float64(v[0].Value)
}

// simOptions is a short run (15 s of arrivals, the story at twice the speed) exporting to the
// collector over OTLP/gRPC. Tokens are scaled up so that the orphaned cost of one service is
// well above the 1 USD/h threshold within the test's 1-minute windows.
func simOptions(mode sim.Mode, c *e2e.Collector, t *testing.T) sim.Options {
	o := sim.DefaultOptions()
	o.Mode = mode
	o.Seed = 11
	o.Rate = 2
	o.Duration = 15 * time.Second
	o.TimeScale = 0.5
	o.TokenScale = 4
	o.Tolerance = tolerance
	o.OTLPEndpoint = fmt.Sprintf("127.0.0.1:%d", c.OTLPGRPC)
	o.OTLPProtocol = "grpc"
	o.OTLPInsecure = true
	o.Log = logWriter{t}
	return o
}

type simResult struct {
	truth truth.Truth
	err   error
}

func runSim(o sim.Options) <-chan simResult {
	ch := make(chan simResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		tr, err := sim.Run(ctx, o)
		ch <- simResult{tr, err}
	}()
	return ch
}

func waitSim(t *testing.T, ch <-chan simResult) truth.Truth {
	t.Helper()
	select {
	case r := <-ch:
		require.NoError(t, r.err, "fanoutsim")
		var b strings.Builder
		_ = r.truth.WriteSummary(&b)
		t.Log(b.String())
		return r.truth
	case <-time.After(3 * time.Minute):
		t.Fatal("fanoutsim did not finish in 3 minutes")
		return truth.Truth{}
	}
}

func testBlind(t *testing.T, bins binaries, annotate bool) {
	s := startStack(t, bins, annotate)
	simDone := runSim(simOptions(sim.Blind, s.c, t))

	// Beside the simulator, scenario traces (services renamed scenario-*) feed the health
	// panels: S9 (root missing) and S13 (malformed spans) for spans without a verdict, ignored
	// attributes and unknown roots; one span of S1 held back until its trace was decided, for
	// late spans. Two rounds, so that Prometheus sees each counter increase after it appeared.
	for round := 1; round <= 2; round++ {
		postScenarios(t, []*e2e.Collector{s.c}, round, "s09_root_missing", "s13_bad_input")
	}
	tr := waitSim(t, simDone)
	require.Positive(t, tr.Abandoned, "no user left: blind traffic proves nothing")
	require.Positive(t, tr.Orphaned.CostUSD, "the simulator reports no orphaned spend")

	// (b) The orphaned-spend alert arrives at the spend webhook, through Alertmanager.
	agents := map[string]bool{}
	for _, a := range sim.AgentNames {
		agents[a] = true
	}
	var got e2e.ReceivedAlert
	arrived := e2e.WaitFor(2*time.Minute, func() bool {
		for _, r := range s.hook.Alerts() {
			if r.Alert.Labels["alertname"] == "OrphanwatchOrphanedCostHigh" && r.Alert.Status == "firing" && agents[r.Alert.Labels["service_name"]] {
				got = r
				return true
			}
		}
		return false
	})
	if !arrived {
		v, _ := s.instant(`sum by (service_name) (rate(orphanwatch_spend_cost_usd_total{liveness="orphaned"}[1m])) * 3600`)
		a, _ := s.instant(`ALERTS`)
		require.FailNow(t, "OrphanwatchOrphanedCostHigh for a fanoutsim agent did not reach the webhook",
			"orphaned USD/h: %v\nALERTS: %v\nwebhook: %+v", v, a, s.hook.Messages())
	}
	t.Logf("webhook got %s for %s after %s: %s", got.Alert.Labels["alertname"], got.Alert.Labels["service_name"],
		time.Since(s.start).Round(time.Second), got.Alert.Annotations["summary"])
	assert.Equal(t, "/orphanwatch/spend", got.Message.Path)
	assert.Equal(t, "orphanwatch-spend", got.Message.Receiver)
	assert.Equal(t, "4", got.Message.Version)
	assert.Equal(t, map[string]string{"alertname": "OrphanwatchOrphanedCostHigh", "service_name": got.Alert.Labels["service_name"]}, got.Message.GroupLabels)
	assert.Equal(t, map[string]string{
		"alertname":    "OrphanwatchOrphanedCostHigh",
		"severity":     "warning",
		"category":     "orphaned_spend",
		"component":    "orphanwatch",
		"service_name": got.Alert.Labels["service_name"],
	}, got.Alert.Labels)
	assert.Contains(t, got.Alert.Annotations["summary"], got.Alert.Labels["service_name"]+" spends ")
	assert.Contains(t, got.Alert.Annotations["description"], "above the threshold of 1.00 USD/h")
	assert.NotEmpty(t, got.Alert.Annotations["runbook"])
	assert.True(t, strings.HasSuffix(got.Alert.Annotations["runbook_url"], "docs/monitoring.md#orphanwatchorphanedcosthigh"))
	// Every alert that reached a webhook took the route of its category.
	for _, r := range s.hook.Alerts() {
		want := map[string]string{"orphaned_spend": "/orphanwatch/spend", "propagation": "/orphanwatch/spend", "pipeline": "/orphanwatch/pipeline"}[r.Alert.Labels["category"]]
		assert.Equal(t, want, r.Message.Path, "%v", r.Alert.Labels)
	}

	// (a) Every panel query of every committed dashboard returns data (but those of the other
	// mode); all but the failure panels return non-zero data at some point of the run. Every
	// pipeline-health alert's expression, each side of its comparisons and every selector in it
	// returns data (of the component deciding in this mode).
	queries := forMode(dashboardQueries(t), s.mode)
	alerts := pipelineAlerts(t)
	var pending []string
	ok := e2e.WaitFor(90*time.Second, func() bool {
		pending = pending[:0]
		for _, q := range queries {
			if msg := s.checkQuery(q); msg != "" {
				pending = append(pending, msg)
			}
		}
		for _, a := range alerts {
			pending = append(pending, s.checkAlert(a, s.mode)...)
		}
		return len(pending) == 0
	})
	assert.True(t, ok, "%s mode: dashboard queries or alert expressions without data:\n%s", s.mode, strings.Join(pending, "\n"))
	t.Logf("%s mode: %d dashboard queries and %d pipeline-health alerts returned data", s.mode, len(queries), len(alerts))

	// Exemplars: every exemplar query of the propagation dashboard links to trace IDs.
	for _, q := range queries {
		if !q.Exemplar {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := s.api.QueryExemplars(ctx, s.expand(q), s.start, time.Now())
		cancel()
		require.NoError(t, err, "%s", q)
		traces := 0
		for _, r := range res {
			for _, e := range r.Exemplars {
				if len(e.Labels["trace_id"]) == 32 {
					traces++
				}
			}
		}
		assert.Positive(t, traces, "%s: no exemplar with a trace_id", q)
	}

	s.checkRulesHealthy(t)
	logAlerts(t, s)
}

func testAware(t *testing.T, bins binaries) {
	s := startStack(t, bins, false)
	tr := waitSim(t, runSim(simOptions(sim.Aware, s.c, t)))
	require.Positive(t, tr.Abandoned, "no user left: aware traffic proves nothing")
	assert.Zero(t, tr.Orphaned.CostUSD, "the simulator's aware mode orphaned spend")

	// Wait until every root was decided and scraped, then long enough for any alert on this data
	// to turn pending, fire and be sent.
	require.True(t, e2e.WaitFor(90*time.Second, func() bool {
		return s.scalar(t, `sum(orphanwatch_roots_total)`) >= float64(tr.Requests)
	}), "not every root reached Prometheus (want %d)", tr.Requests)
	time.Sleep(ruleFor + 5*interval + 3*amWait)

	assert.Positive(t, s.scalar(t, `sum(orphanwatch_runs_total{outcome="cancelled"})`), "no run noticed its caller had gone")
	s.checkRulesHealthy(t)

	m, err := s.overTime(`ALERTS{category=~"orphaned_spend|propagation"}`)
	require.NoError(t, err)
	assert.Empty(t, m, "orphan alerts were pending or firing on aware traffic")
	for _, r := range s.hook.Alerts() {
		c := r.Alert.Labels["category"]
		assert.False(t, c == "orphaned_spend" || c == "propagation", "webhook got %v", r.Alert.Labels)
	}
	logAlerts(t, s)
}

// expand fills in Grafana's variables for a query run over the stack's lifetime.
func (s *stack) expand(q dashboards.Query) string {
	rng := time.Since(s.start).Truncate(time.Second) + time.Minute
	return dashboards.Expand(q.Expr, map[string]string{
		"__rate_interval": "15s",
		"__interval":      "2s",
		"__range":         model.Duration(rng).String(),
		"service":         ".*",
		"instance":        ".*",
	})
}

// checkQuery runs q as Grafana would (range or instant) and returns "" when it returned data
// (non-zero data but for zeroIsHealthy panels and panel/refID queries), else what is missing.
func (s *stack) checkQuery(q dashboards.Query) string {
	expr, values, problem := s.panelValues(q)
	if problem != "" {
		return problem
	}
	if zeroIsHealthy[q.Panel] || zeroIsHealthy[q.Panel+"/"+q.RefID] {
		return ""
	}
	for _, x := range values {
		if x != 0 && !math.IsNaN(x) && !math.IsInf(x, 0) {
			return ""
		}
	}
	return fmt.Sprintf("%s: only zero or NaN: %s", q, expr)
}

// panelValues runs q as Grafana would (range or instant) over the stack's lifetime and returns
// its expanded expression and every value it returned; problem, when not "", says that it
// failed or returned no data.
func (s *stack) panelValues(q dashboards.Query) (expr string, values []float64, problem string) {
	expr = s.expand(q)
	if q.Instant {
		v, err := s.instant(expr)
		if err != nil {
			return expr, nil, fmt.Sprintf("%s: %v", q, err)
		}
		for _, smp := range v {
			values = append(values, float64(smp.Value))
		}
	} else {
		m, err := s.overTime(expr)
		if err != nil {
			return expr, nil, fmt.Sprintf("%s: %v", q, err)
		}
		for _, ss := range m {
			for _, p := range ss.Values {
				values = append(values, float64(p.Value))
			}
		}
	}
	if len(values) == 0 {
		return expr, nil, fmt.Sprintf("%s: no data: %s", q, expr)
	}
	return expr, values, ""
}

// overTime runs expr as a range query over the stack's lifetime, a step an interval.
func (s *stack) overTime(expr string) (model.Matrix, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, _, _, err := s.api.QueryRange(ctx, expr, promv1.Range{Start: s.start, End: time.Now(), Step: interval})
	return result[model.Matrix](expr, v, err)
}

// checkRulesHealthy: both rule files loaded, every rule evaluated without error.
func (s *stack) checkRulesHealthy(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := s.api.Rules(ctx, nil)
	require.NoError(t, err)
	alerts, records := 0, 0
	for _, g := range res.Groups {
		for _, r := range g.Rules {
			switch r := r.(type) {
			case promv1.AlertingRule:
				alerts++
				assert.Equal(t, "ok", string(r.Health), "%s: %s", r.Name, r.LastError)
			case promv1.RecordingRule:
				records++
				assert.Equal(t, "ok", string(r.Health), "%s: %s", r.Name, r.LastError)
			}
		}
	}
	assert.GreaterOrEqual(t, alerts, 6, "alerting rules loaded")
	assert.GreaterOrEqual(t, records, 6, "threshold rules loaded")
	v, err := s.instant(`ALERTS{alertname="OrphanwatchAlertThresholdsMissing"}`)
	require.NoError(t, err)
	assert.Empty(t, v, "thresholds missing")
}

func logAlerts(t *testing.T, s *stack) {
	seen := map[string]bool{}
	for _, r := range s.hook.Alerts() {
		k := fmt.Sprintf("%s %s %s %v", r.Message.Path, r.Alert.Status, r.Alert.Labels["alertname"], labelsBut(r.Alert.Labels, "alertname", "severity", "category", "component"))
		seen[k] = true
	}
	var ks []string
	for k := range seen {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	t.Logf("webhook notifications:\n  %s", strings.Join(ks, "\n  "))
}

func labelsBut(l map[string]string, drop ...string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[k] = v
	}
	for _, d := range drop {
		delete(out, d)
	}
	return out
}

// dashboardQueries reads every query of the committed dashboards, but the Kafka tier's
// (tierOnly).
func dashboardQueries(t *testing.T) []dashboards.Query {
	t.Helper()
	var out []dashboards.Query
	for _, f := range dashboards.Files() {
		qs, err := dashboards.Queries(repoFile(t, "dashboards/"+f.Name))
		require.NoError(t, err)
		for _, q := range qs {
			if !tierOnly(q.Expr) {
				out = append(out, q)
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

// tierOnly reports whether a query or an alert's expression reads the kafka receiver's own
// telemetry (otelcol_kafka_receiver_*): only members of the Kafka tier serve it, and these
// tests run no Kafka. test/scaleout's TestMemberKafkaTelemetry reads those series on a member,
// config/prometheus/tests/kafka.test.yml tests the alert.
func tierOnly(expr string) bool { return strings.Contains(expr, "otelcol_kafka_receiver_") }

// forMode keeps the queries that have data in mode ("observe" or "annotate"): those of both
// modes and those of this one (dashboards.Query.Mode).
func forMode(qs []dashboards.Query, mode string) []dashboards.Query {
	var out []dashboards.Query
	for _, q := range qs {
		if m := q.Mode(); m == "" || m == mode {
			out = append(out, q)
		}
	}
	return out
}

// scenarioTraces loads a scenario's trace.json with its services renamed scenario-<name>, its
// trace IDs made unique per round (the all-zero ID of S13 stays zero), and its times moved to
// end about now.
func scenarioTraces(t *testing.T, name string, round int) ptrace.Traces {
	t.Helper()
	td, err := scenarios.LoadTraces(filepath.Join(e2e.RepoRoot(), "testdata", "scenarios", name, "trace.json"))
	require.NoError(t, err)
	remap := func(id pcommon.TraceID) pcommon.TraceID {
		if id.IsEmpty() {
			return id
		}
		id[1] ^= byte(round)
		return id
	}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			rs.Resource().Attributes().PutStr("service.name", "scenario-"+v.AsString())
		}
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				sp.SetTraceID(remap(sp.TraceID()))
				for l := 0; l < sp.Links().Len(); l++ {
					sp.Links().At(l).SetTraceID(remap(sp.Links().At(l).TraceID()))
				}
			}
		}
	}
	e2e.ShiftTraces(td, time.Now().Add(-10*time.Second))
	return td
}

// postScenarios sends round `round` of the named scenarios to every collector, then S1 with its
// first model call held back until S1 was decided (decision_wait and a margin later): a late
// span.
func postScenarios(t *testing.T, collectors []*e2e.Collector, round int, names ...string) {
	t.Helper()
	for _, c := range collectors {
		for _, name := range names {
			c.PostTraces(t, scenarioTraces(t, name, round))
		}
	}
	var held []ptrace.Traces
	for _, c := range collectors {
		s1 := scenarioTraces(t, "s01_happy_fanout", round)
		h := e2e.SplitTraces(s1, func(sp ptrace.Span) bool { return sp.Name() == "chat gpt-4o-mini" && sp.SpanID()[7] == 6 })
		require.Equal(t, 1, h.SpanCount(), "S1's first model call")
		c.PostTraces(t, s1)
		held = append(held, h)
	}
	time.Sleep(decisionWait + 2*time.Second)
	for i, c := range collectors {
		c.PostTraces(t, held[i])
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// logWriter sends the simulator's progress lines to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
