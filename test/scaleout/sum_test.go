package scaleout

import (
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// scenarioBatches is every scenario's traces (S8 in its shuffled batches).
func scenarioBatches() []ptrace.Traces {
	var out []ptrace.Traces
	for _, sc := range scenarios.All() {
		if sc.ID == "S8" {
			b, _ := scenarios.S8Batches()
			out = append(out, b...)
			continue
		}
		td, _ := sc.Build()
		out = append(out, td)
	}
	return out
}

// runTier sends the batches through a tier of n members and returns the sum of the members'
// orphanmetrics series.
func runTier(t *testing.T, n int, keySharing bool, batches []ptrace.Traces) (map[string]float64, *tier) {
	t.Helper()
	tr := startTier(t, tierOptions{members: n, keySharing: keySharing})
	total := tr.sendAll(t, batches)
	tr.storedAndJudged(t, total)
	return tr.orphanSeries(t), tr
}

// TestTierSumEqualsOneCollector: one, two and three members in one group; the sum of the
// members' metric series equals one collector's, on every scenario and on a simulator run.
func TestTierSumEqualsOneCollector(t *testing.T) {
	t.Run("scenarios", func(t *testing.T) { tierSums(t, scenarioBatches()) })
	// One simulator run (seed 7), replayed to every tier: the same traces each time.
	t.Run("simulator", func(t *testing.T) { tierSums(t, simTraces(t)) })
}

func tierSums(t *testing.T, batches []ptrace.Traces) {
	one, _ := runTier(t, 1, true, batches)
	if len(one) < 20 {
		t.Fatalf("one collector produced only %d series", len(one))
	}
	// The one-member tier is one collector: the same as the distribution's default pipeline
	// (config/collector.yaml, OTLP straight in, no Kafka, no key sharing).
	if d := diff(runPlain(t, batches), one); len(d) > 0 {
		t.Errorf("a one-member tier differs from the default pipeline in %d series:\n%s", len(d), joinLines(d))
	}
	for _, n := range []int{2, 3} {
		got, tr := runTier(t, n, true, batches)
		if d := diff(one, got); len(d) > 0 {
			t.Errorf("%d members: %d series differ from one collector:\n%s", n, len(d), joinLines(d))
		}
		per := make([]int, len(tr.members))
		for i, m := range tr.members {
			per[i] = judged(t, m)
		}
		t.Logf("%d members: %d series equal one collector's; spans judged per member %v; key look-ups %v", n, len(one), per,
			tr.telemetry(t, "otelcol_exporter_orphanmetrics_key_lookups"))
	}
}

func joinLines(s []string) string {
	out := ""
	for _, l := range s {
		out += "  " + l + "\n"
	}
	return out
}

// runPlain sends the batches straight to one collector running config/collector.yaml (the
// embedded default pipeline) and returns its orphanmetrics series.
func runPlain(t *testing.T, batches []ptrace.Traces) map[string]float64 {
	t.Helper()
	tr := &tier{opts: tierOptions{decisionWait: "2s"}}
	m := &member{metrics: e2e.FreePort(t), telemetry: e2e.FreePort(t)}
	tr.members = []*member{m}
	tr.otlp = e2e.FreePort(t)
	m.collector = startCollector(t, "plain", "config/collector.yaml", map[string]string{
		"receivers::otlp::protocols::http::endpoint":          fmt.Sprintf("127.0.0.1:%d", tr.otlp),
		"receivers::otlp::protocols::grpc::endpoint":          fmt.Sprintf("127.0.0.1:%d", e2e.FreePort(t)),
		"receivers::zipkin::endpoint":                         fmt.Sprintf("127.0.0.1:%d", e2e.FreePort(t)),
		"receivers::jaeger::protocols::grpc::endpoint":        fmt.Sprintf("127.0.0.1:%d", e2e.FreePort(t)),
		"receivers::jaeger::protocols::thrift_http::endpoint": fmt.Sprintf("127.0.0.1:%d", e2e.FreePort(t)),
		"exporters::orphanmetrics::decision_wait":             "2s",
		"exporters::orphanmetrics::endpoint":                  fmt.Sprintf("127.0.0.1:%d", m.metrics),
		"service::pipelines::traces::exporters":               "[orphanmetrics]",
		"extensions::health_check::endpoint":                  fmt.Sprintf("127.0.0.1:%d", e2e.FreePort(t)),
		"service::telemetry::metrics::readers":                fmt.Sprintf("[{pull: {exporter: {prometheus: {host: 127.0.0.1, port: %d}}}}]", m.telemetry),
		"service::telemetry::logs::level":                     "warn",
	})
	total := tr.sendAll(t, batches)
	if got := tr.settle(t, total, 60*time.Second); got != total {
		t.Fatalf("default pipeline: %d of %d spans judged", got, total)
	}
	return tr.orphanSeries(t)
}
