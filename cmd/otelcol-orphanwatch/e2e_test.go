package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
)

// TestRealTraces builds and starts the distribution, sends each real trace file of
// ../shared/testdata-real (OTLP JSON to /v1/traces, Zipkin v2 JSON to the Zipkin receiver),
// scrapes /metrics and checks what ../shared/testdata-real/SOURCES.md says a correct reading is:
// in both ways to run, observing (the shipped default) and annotating.
func TestRealTraces(t *testing.T) {
	dir := e2e.RealTestdata()
	if dir == "" {
		t.Skip("../shared/testdata-real is absent")
	}
	bin := e2e.BuildCollector(t, t.TempDir())
	t.Run("observe", func(t *testing.T) { realTraces(t, bin, dir, false) })
	t.Run("annotate", func(t *testing.T) { realTraces(t, bin, dir, true) })
}

func realTraces(t *testing.T, bin, dir string, annotate bool) {
	c := e2e.StartCollector(t, bin, e2e.Options{DecisionWait: "500ms", Annotate: annotate})

	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return b
	}
	for _, f := range []string{
		"otel-desktop-viewer_checkout-payment-declined-fanout_otlp.json",
		"genai-interlingua_openllmetry-workflow-chat-child-first_otlp.json",
		"genai-interlingua_vercel-aisdk-toolcall-after-root_otlp.json",
	} {
		require.Equal(t, 200, e2e.Post(t, c.OTLPHTTP, "/v1/traces", "application/json", read(f)), f)
	}
	for _, f := range []string{
		"zipkin-lens_messaging-kafka-async-errors_zipkin2.json",
		"zipkin-lens_smartthings-oauth-real-401s_zipkin2.json",
	} {
		code := e2e.Post(t, c.Zipkin, "/api/v2/spans", "application/json", e2e.FixZipkinIPv4(read(f)))
		require.Equal(t, 202, code, f)
	}

	// 5 traces, 3+2+6 OTLP spans and 28+175 Zipkin spans.
	var ss []e2e.Series
	require.True(t, e2e.WaitFor(20*time.Second, func() bool {
		tel := e2e.Scrape(t, c.TelemetryURL())
		return e2e.Sum(tel, "otelcol_processor_orphan_spans_processed", nil) >= 3+2+6+28+175 ||
			e2e.Sum(tel, "otelcol_exporter_orphanmetrics_spans_judged", nil) >= 3+2+6+28+175
	}), "spans not all processed; log:\n%s", c.Log())
	require.True(t, e2e.WaitFor(10*time.Second, func() bool {
		ss = e2e.Scrape(t, c.MetricsURL())
		return e2e.Sum(ss, "orphanwatch_roots_total", nil) >= 4
	}))

	orphanSeries := func(service string) float64 {
		return e2e.Sum(ss, "orphanwatch_attempts_total", map[string]string{"service_name": service, "liveness": "outlived_root"}) +
			e2e.Sum(ss, "orphanwatch_attempts_total", map[string]string{"service_name": service, "liveness": "started_after_gone"}) +
			e2e.Sum(ss, "orphanwatch_spend_seconds_total", map[string]string{"service_name": service, "liveness": "orphaned"}) +
			e2e.Sum(ss, "orphanwatch_outlive_seconds_count", map[string]string{"service_name": service}) +
			e2e.Sum(ss, "orphanwatch_runs_total", map[string]string{"service_name": service, "outcome": "delivered_to_nobody"})
	}

	t.Run("checkout is the negative control", func(t *testing.T) {
		// Root POST /api/v2/orders ends with status ERROR and HTTP 402; the declined charge is a
		// hard failure; nothing outlives the root.
		assert.Equal(t, 1.0, e2e.Sum(ss, "orphanwatch_roots_total", map[string]string{"service_name": "api-gateway", "end_reason": "error"}))
		assert.Equal(t, 1.0, e2e.Sum(ss, "orphanwatch_runs_total", map[string]string{"service_name": "payment-service", "operation": "stripe/create-charge", "outcome": "hard_failure"}))
		for _, svc := range []string{"api-gateway", "catalog-service", "inventory-service", "order-service", "payment-service"} {
			assert.Zero(t, orphanSeries(svc), svc)
		}
	})
	t.Run("openllmetry child listed first", func(t *testing.T) {
		assert.Equal(t, 1.0, e2e.Sum(ss, "orphanwatch_roots_total", map[string]string{"service_name": "capture", "end_reason": "completed"}))
		assert.Equal(t, 412.0, e2e.Sum(ss, "orphanwatch_spend_tokens_total", map[string]string{"service_name": "capture", "direction": "input", "liveness": "live"}))
		assert.Equal(t, 27.0, e2e.Sum(ss, "orphanwatch_spend_tokens_total", map[string]string{"service_name": "capture", "direction": "output", "liveness": "live"}))
		assert.Equal(t, 1.0, e2e.Sum(ss, "orphanwatch_model_calls_total", map[string]string{"service_name": "capture"}))
		assert.Zero(t, orphanSeries("capture"))
	})
	t.Run("vercel tool call after the root, usage not double counted", func(t *testing.T) {
		assert.Equal(t, 412.0, e2e.Sum(ss, "orphanwatch_spend_tokens_total", map[string]string{"service_name": "ticket-triage", "direction": "input"}))
		assert.Equal(t, 27.0, e2e.Sum(ss, "orphanwatch_spend_tokens_total", map[string]string{"service_name": "ticket-triage", "direction": "output"}))
		assert.Equal(t, 1.0, e2e.Sum(ss, "orphanwatch_model_calls_total", map[string]string{"service_name": "ticket-triage", "liveness": "live"}))
		// ai.toolCall starts 10 ms after the root ended and ends 180 ms after it.
		assert.Equal(t, 1.0, e2e.Sum(ss, "orphanwatch_outlive_seconds_count", map[string]string{"service_name": "ticket-triage"}))
		assert.InDelta(t, 0.18, e2e.Sum(ss, "orphanwatch_outlive_seconds_sum", map[string]string{"service_name": "ticket-triage"}), 1e-6)
		// 0.15*412/1e6 + 0.60*27/1e6 on the live model call (gpt-4o-mini-2024-07-18 priced by prefix).
		assert.InDelta(t, 0.0000780, e2e.Sum(ss, "orphanwatch_spend_cost_usd_total", map[string]string{"service_name": "ticket-triage", "liveness": "live"}), 1e-9)
	})
	t.Run("kafka messaging is detached, not orphaned", func(t *testing.T) {
		assert.Zero(t, orphanSeries("servicea"))
		assert.Zero(t, orphanSeries("serviceb"))
		assert.Positive(t, e2e.Sum(ss, "orphanwatch_attempts_total", map[string]string{"liveness": "detached", "service_name": "servicea"}))
	})
	t.Run("smartthings redirect chain is not orphaned", func(t *testing.T) {
		assert.Equal(t, 1.0, e2e.Sum(ss, "orphanwatch_roots_total", map[string]string{"service_name": "datamgmt", "end_reason": "completed"}))
		for _, svc := range []string{"datamgmt", "stlogin", "auth", "pusher", "bouncer"} {
			assert.Zero(t, orphanSeries(svc), svc)
		}
	})
	t.Run("only the vercel tool call is orphaned", func(t *testing.T) {
		assert.Equal(t, 1.0, e2e.Sum(ss, "orphanwatch_outlive_seconds_count", nil))
		assert.Zero(t, e2e.Sum(ss, "orphanwatch_unpropagated_total", nil))
		if annotate {
			tel := e2e.Scrape(t, c.TelemetryURL())
			assert.Equal(t, 1.0, e2e.Sum(tel, "otelcol_processor_orphan_spans_orphaned", nil))
		}
	})
}
