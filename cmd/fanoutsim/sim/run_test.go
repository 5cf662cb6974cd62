package sim

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/orphanwatch/orphanwatch/cmd/fanoutsim/truth"
)

// testTolerance: the services share one clock; a small tolerance absorbs only the time a
// cancellation takes to cross a loopback connection and be scheduled, under -race on a busy
// machine: `go test ./...` runs other packages' tests at the same time, and on two cores an
// aware server sometimes noticed its caller's cancellation 50-180 ms late (a run counted
// delivered_to_nobody). The blind loops go on for seconds after their caller left, far beyond it.
const testTolerance = 250 * time.Millisecond

// shortOptions is ShortOptions with the tests' tolerance, exporting to exp.
func shortOptions(mode Mode, exp *tracetest.InMemoryExporter) Options {
	o := ShortOptions(mode)
	o.Tolerance = testTolerance
	o.Exporter = exp
	return o
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func service(s tracetest.SpanStub) string {
	v, _ := s.Resource.Set().Value("service.name")
	return v.AsString()
}

func runSim(t *testing.T, mode Mode) (truth.Truth, tracetest.SpanStubs) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr, err := runBounded(shortOptions(mode, exp))
	if err != nil {
		t.Fatalf("%s: Run: %v", mode, err)
	}
	var b strings.Builder
	_ = tr.WriteSummary(&b)
	t.Logf("\n%s", b.String())
	return tr, exp.GetSpans()
}

// runBounded runs o, bounded by 60 s.
func runBounded(o Options) (truth.Truth, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return Run(ctx, o)
}

// runLost runs o, which loses spans: Run must return a SpansLostError (why says how).
func runLost(t *testing.T, o Options, why string) (truth.Truth, *SpansLostError) {
	t.Helper()
	tr, err := runBounded(o)
	var lost *SpansLostError
	if !errors.As(err, &lost) {
		t.Fatalf("Run: %v, want a SpansLostError%s", err, why)
	}
	return tr, lost
}

func TestBlindAndAware(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two short simulations")
	}
	blind, bspans := runSim(t, Blind)
	aware, aspans := runSim(t, Aware)

	// Same seed, same users.
	if blind.Requests != aware.Requests || blind.Requests < 10 || blind.Requests > 24 {
		t.Errorf("requests blind %d aware %d, want the same number, 10..24", blind.Requests, aware.Requests)
	}
	if blind.Abandoned == 0 || aware.Abandoned == 0 {
		t.Errorf("no user left (blind %d, aware %d): the run shows nothing", blind.Abandoned, aware.Abandoned)
	}
	for _, tr := range []truth.Truth{blind, aware} {
		if tr.Incomplete != 0 {
			t.Errorf("%s: incomplete %d", tr.Mode, tr.Incomplete)
		}
		if tr.Runs[truth.Success] == 0 {
			t.Errorf("%s: no successful run", tr.Mode)
		}
	}

	// Blind: work delivered to nobody, orphaned tokens, attempts dispatched after the caller left.
	if blind.Runs[truth.DeliveredToNobody] == 0 {
		t.Errorf("blind: no delivered_to_nobody run: %v", blind.Runs)
	}
	if blind.Orphaned.ModelCalls == 0 || blind.Orphaned.InputTokens == 0 || blind.Orphaned.OutputTokens == 0 || blind.Orphaned.CostUSD <= 0 {
		t.Errorf("blind: no orphaned spend: %+v", blind.Orphaned)
	}
	if blind.Attempts.StartedAfterGone == 0 {
		t.Errorf("blind: no attempt dispatched after the caller left: %+v", blind.Attempts)
	}
	if len(blind.Unpropagated) == 0 {
		t.Errorf("blind: no unpropagated edge")
	}
	// Aware: nothing delivered to nobody, no orphaned tokens, runs that noticed.
	if aware.Runs[truth.DeliveredToNobody] != 0 {
		t.Errorf("aware: delivered_to_nobody runs: %v", aware.Runs)
	}
	if aware.Orphaned.InputTokens != 0 || aware.Orphaned.OutputTokens != 0 || aware.Orphaned.CostUSD != 0 {
		t.Errorf("aware: orphaned tokens: %+v", aware.Orphaned)
	}
	if aware.Runs[truth.Cancelled] <= blind.Runs[truth.Cancelled] {
		t.Errorf("aware cancelled %d, blind %d: the sub-agents did not notice", aware.Runs[truth.Cancelled], blind.Runs[truth.Cancelled])
	}
	if aware.Total.InputTokens >= blind.Total.InputTokens {
		t.Errorf("aware spent %d input tokens, blind %d", aware.Total.InputTokens, blind.Total.InputTokens)
	}

	checkSpans(t, Blind, bspans, rootCount(blind))
	checkSpans(t, Aware, aspans, rootCount(aware))
	checkTruthAgainstSpans(t, blind, bspans, testTolerance)
	checkTruthAgainstSpans(t, aware, aspans, testTolerance)
}

// rootCount is the number of requests that reached the gateway (a user may leave before).
func rootCount(tr truth.Truth) int {
	n := 0
	for _, c := range tr.Roots {
		n += c
	}
	return n
}

// checkSpans asserts what the orphan processor relies on.
func checkSpans(t *testing.T, mode Mode, spans tracetest.SpanStubs, requests int) {
	t.Helper()
	services := map[string]bool{}
	byKey := map[string][]tracetest.SpanStub{}
	var chats, roots, abandonedRoots, cancelledClients, stoppedServers, deadlineClients, deadlineServers int
	for _, s := range spans {
		svc := service(s)
		services[svc] = true
		if _, ok := attr(s, "http.request.header.x-deadline"); ok {
			switch s.SpanKind {
			case trace.SpanKindClient:
				deadlineClients++
			case trace.SpanKindServer:
				deadlineServers++
			}
		}
		if !s.Parent.IsValid() {
			roots++
			if svc != GatewayService || s.SpanKind != trace.SpanKindServer || s.Name != "POST /ask" {
				t.Errorf("%s: root %q of %s kind %s", mode, s.Name, svc, s.SpanKind)
			}
			if v, _ := attr(s, "http.response.status_code"); v.AsInt64() == 499 {
				abandonedRoots++
				if et, _ := attr(s, "error.type"); et.AsString() != "context canceled" {
					t.Errorf("%s: 499 root has error.type %q", mode, et.AsString())
				}
			}
		}
		if s.SpanKind == trace.SpanKindClient && strings.HasPrefix(s.Name, "POST /") {
			v, ok := attr(s, "http.request.header.idempotency-key")
			if !ok || v.Type() != attribute.STRINGSLICE || len(v.AsStringSlice()) != 1 {
				t.Errorf("%s: %s CLIENT span without idempotency-key string array", mode, s.Name)
			} else {
				byKey[v.AsStringSlice()[0]] = append(byKey[v.AsStringSlice()[0]], s)
			}
			if et, _ := attr(s, "error.type"); et.AsString() == "context canceled" || et.AsString() == "context deadline exceeded" {
				cancelledClients++
				if s.Status.Code != codes.Error {
					t.Errorf("%s: cancelled CLIENT span with status %v", mode, s.Status.Code)
				}
			}
		}
		if strings.HasPrefix(s.Name, "chat ") {
			if s.SpanKind != trace.SpanKindClient {
				t.Errorf("%s: %s is %s", mode, s.Name, s.SpanKind)
			}
			model := strings.TrimPrefix(s.Name, "chat ")
			for key, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": model} {
				if v, _ := attr(s, key); v.AsString() != want {
					t.Errorf("%s: %s %s = %q, want %q", mode, s.Name, key, v.AsString(), want)
				}
			}
			if s.Status.Code != codes.Error {
				chats++
				in, ok1 := attr(s, "gen_ai.usage.input_tokens")
				out, ok2 := attr(s, "gen_ai.usage.output_tokens")
				rm, _ := attr(s, "gen_ai.response.model")
				if !ok1 || !ok2 || in.Type() != attribute.INT64 || out.Type() != attribute.INT64 || in.AsInt64() <= 0 || out.AsInt64() <= 0 || rm.AsString() != model {
					t.Errorf("%s: %s usage in=%v out=%v response model %q", mode, s.Name, in.Emit(), out.Emit(), rm.AsString())
				}
			}
		}
		if s.SpanKind == trace.SpanKindServer && svc != GatewayService && svc != ToolService && svc != ModelService {
			if et, _ := attr(s, "error.type"); et.AsString() != "" {
				stoppedServers++
			}
		}
	}
	for _, svc := range append([]string{GatewayService, ToolService, ModelService}, AgentNames...) {
		if !services[svc] {
			t.Errorf("%s: no span of service %s", mode, svc)
		}
	}
	if roots != requests || requests == 0 || chats == 0 || abandonedRoots == 0 || cancelledClients == 0 {
		t.Errorf("%s: roots %d chats %d abandoned roots %d cancelled clients %d", mode, roots, chats, abandonedRoots, cancelledClients)
	}

	// Attempts of one logical call: same key, same parent, resend_count absent then 1, 2, ...
	retried := 0
	for key, atts := range byKey {
		sort.Slice(atts, func(i, j int) bool { return atts[i].StartTime.Before(atts[j].StartTime) })
		for i, s := range atts {
			v, ok := attr(s, "http.request.resend_count")
			switch {
			case i == 0 && ok:
				t.Errorf("%s: first attempt of %s carries resend_count %d", mode, key, v.AsInt64())
			case i > 0 && (!ok || v.Type() != attribute.INT64 || v.AsInt64() != int64(i)):
				t.Errorf("%s: attempt %d of %s has resend_count %v (present %v)", mode, i+1, key, v.Emit(), ok)
			}
			if s.Parent.SpanID() != atts[0].Parent.SpanID() || s.Name != atts[0].Name {
				t.Errorf("%s: attempts of %s under different parents or names", mode, key)
			}
		}
		if len(atts) > 1 {
			retried++
		}
	}
	if retried == 0 {
		t.Errorf("%s: no call was retried", mode)
	}

	switch mode {
	case Blind:
		if deadlineClients+deadlineServers != 0 {
			t.Errorf("blind: x-deadline travelled (%d client, %d server spans)", deadlineClients, deadlineServers)
		}
		if stoppedServers != 0 {
			t.Errorf("blind: %d sub-agent SERVER spans noticed a cancellation", stoppedServers)
		}
	case Aware:
		if deadlineClients == 0 || deadlineServers == 0 {
			t.Errorf("aware: x-deadline on %d client and %d server spans", deadlineClients, deadlineServers)
		}
		if stoppedServers == 0 {
			t.Errorf("aware: no sub-agent SERVER span recorded the cancellation")
		}
	}
}

// checkTruthAgainstSpans recomputes the orphaned tokens and the attempts started after the
// caller left from the exported spans alone, and compares them with the truth.
func checkTruthAgainstSpans(t *testing.T, tr truth.Truth, spans tracetest.SpanStubs, tol time.Duration) {
	t.Helper()
	type gone struct {
		at      time.Time
		service string
	}
	roots := map[trace.TraceID]gone{}
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
		if s.Parent.IsValid() {
			continue
		}
		g := s.EndTime
		if v, ok := attr(s, "http.request.header.x-deadline"); ok {
			if d, ok := truth.ParseUnixSeconds(v.AsStringSlice()[0]); ok && d.Before(g) {
				g = d
			}
		}
		roots[s.SpanContext.TraceID()] = gone{at: g, service: service(s)}
	}
	// goneOf is a span's gone time (DESIGN.md "a caller that gave up"): its root's, or earlier
	// the end of a CLIENT span in another service that recorded a stop and ended before the
	// SERVER span it called, beyond the tolerance, at or above the span.
	goneOf := func(s tracetest.SpanStub) (gone, bool) {
		g, ok := roots[s.SpanContext.TraceID()]
		if !ok {
			return g, false
		}
		for n := 0; n < 64; n++ {
			if s.SpanKind == trace.SpanKindServer {
				p, ok := byID[s.Parent.SpanID()]
				if ok && p.SpanKind == trace.SpanKindClient && service(p) != service(s) && stoppedStub(p) &&
					p.EndTime.Add(tol).Before(s.EndTime) && p.EndTime.Before(g.at) {
					g = gone{at: p.EndTime, service: service(p)}
				}
			}
			p, ok := byID[s.Parent.SpanID()]
			if !s.Parent.IsValid() || !ok {
				break
			}
			s = p
		}
		return g, true
	}
	var in, out int64
	started := 0
	for _, s := range spans {
		if !s.Parent.IsValid() {
			continue
		}
		g, ok := goneOf(s)
		if !ok {
			continue
		}
		d := time.Duration(0)
		if service(s) != g.service {
			d = tol
		}
		limit := g.at.Add(d)
		if s.SpanKind == trace.SpanKindClient || s.SpanKind == trace.SpanKindProducer {
			if s.StartTime.After(limit) {
				started++
			}
		}
		if strings.HasPrefix(s.Name, "chat ") && s.EndTime.After(limit) {
			a, _ := attr(s, "gen_ai.usage.input_tokens")
			b, _ := attr(s, "gen_ai.usage.output_tokens")
			in += a.AsInt64()
			out += b.AsInt64()
		}
	}
	if in != tr.Orphaned.InputTokens || out != tr.Orphaned.OutputTokens {
		t.Errorf("%s: orphaned tokens from spans %d/%d, truth %d/%d", tr.Mode, in, out, tr.Orphaned.InputTokens, tr.Orphaned.OutputTokens)
	}
	if started != tr.Attempts.StartedAfterGone {
		t.Errorf("%s: attempts started after gone from spans %d, truth %d", tr.Mode, started, tr.Attempts.StartedAfterGone)
	}
}

// stoppedStub reports whether a span recorded a cancellation or a passed deadline: HTTP 499,
// error.type "context canceled" / "context deadline exceeded", gRPC CANCELLED / DEADLINE_EXCEEDED.
func stoppedStub(s tracetest.SpanStub) bool {
	if v, ok := attr(s, "http.response.status_code"); ok && v.AsInt64() == 499 {
		return true
	}
	if v, ok := attr(s, "error.type"); ok && (v.AsString() == "context canceled" || v.AsString() == "context deadline exceeded") {
		return true
	}
	if v, ok := attr(s, "rpc.grpc.status_code"); ok && (v.AsInt64() == 1 || v.AsInt64() == 4) {
		return true
	}
	return false
}
