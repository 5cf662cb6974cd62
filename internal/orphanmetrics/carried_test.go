package orphanmetrics

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// TestDeferredSpans: a span marked orphanwatch.verdict.deferred = true feeds no metric from its
// own attributes, not even the gen_ai fallback; false is as good as absent; a value that is not
// a bool is counted (invalid_deferred) and read as absent.
func TestDeferredSpans(t *testing.T) {
	r := newTestRecorder(t, nil)
	r.Record(buildTraces(t, testResource{service: "app", spans: []testSpan{
		// The processor's deferred span: its own attributes, no verdict.
		{name: "chat", traceID: traceA, end: 2 * sec, attrs: map[string]any{
			"orphanwatch.verdict.deferred": true,
			"gen_ai.operation.name":        "chat", "gen_ai.request.model": "gpt-4o",
			"gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 20,
		}},
		// Deferred and (wrongly) carrying verdicts and malformed ones: nothing, no skip either.
		{name: "call", traceID: traceA, end: 2 * sec, attrs: map[string]any{
			"orphanwatch.verdict.deferred": true, "orphanwatch.liveness": "orphaned", "orphanwatch.attempt": 1,
			"orphanwatch.after_gone": 1.0, "orphanwatch.run.outcome": "win", "orphanwatch.caller.service": "gw",
		}},
		// false: counted as usual.
		{name: "chat", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.verdict.deferred": false,
			"gen_ai.usage.input_tokens":    7, "gen_ai.request.model": "claude",
		}},
		// Malformed: counted, and the span is counted as if the marker were absent.
		{name: "call", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.verdict.deferred": "true", "orphanwatch.liveness": "live", "orphanwatch.attempt": 1,
		}},
		{name: "chat", traceID: traceA, end: 1 * sec, attrs: map[string]any{
			"orphanwatch.verdict.deferred": 1, "gen_ai.usage.output_tokens": 3, "gen_ai.request.model": "claude",
		}},
	}}))
	g := r.Gatherer()

	assert.Equal(t, map[string]float64{
		`{direction="input",liveness="unknown",model="claude",service_name="app"}`:  7,
		`{direction="output",liveness="unknown",model="claude",service_name="app"}`: 3,
	}, samples(t, g, "orphanwatch_spend_tokens_total"))
	assert.Equal(t, map[string]float64{
		`{liveness="unknown",model="claude",service_name="app"}`: 2,
	}, samples(t, g, "orphanwatch_model_calls_total"))
	assert.Equal(t, map[string]float64{
		`{liveness="live",operation="call",service_name="app"}`: 1,
	}, samples(t, g, "orphanwatch_attempts_total"))
	assert.Equal(t, map[string]float64{
		`{liveness="live",service_name="app"}`:    1,
		`{liveness="unknown",service_name="app"}`: 2,
	}, samples(t, g, "orphanwatch_spend_seconds_total"))
	assert.Empty(t, samples(t, g, "orphanwatch_runs_total"))
	assert.Empty(t, samples(t, g, "orphanwatch_unpropagated_total"))
	assert.Empty(t, samples(t, g, "orphanwatch_outlive_seconds"))
	for reason, v := range samples(t, g, "orphanwatch_spans_skipped_total") {
		if reason == `{reason="invalid_deferred"}` {
			assert.Equal(t, 2.0, v, reason)
		} else {
			assert.Zero(t, v, reason)
		}
	}
}

// The verdict attributes of the contract (internal/verdict), and those of a run's outcome.
var (
	verdictAttrs = []string{
		verdict.AttrLiveness, verdict.AttrStartedAfterGone, verdict.AttrAfterGone, verdict.AttrDetached,
		verdict.AttrAttempt, verdict.AttrRunOutcome, verdict.AttrRunAttempts, verdict.AttrRunResult,
		verdict.AttrRootEndReason, verdict.AttrCallerService, verdict.AttrSpendModel, verdict.AttrSpendInput,
		verdict.AttrSpendOutput, verdict.AttrSpendCost, verdict.AttrSpendRepeated, verdict.AttrSpendNested,
		verdict.AttrCancelReachHops, verdict.AttrOrphanedDepth,
	}
	runAttrs = []string{verdict.AttrRunOutcome, verdict.AttrRunAttempts, verdict.AttrRunResult}
)

// TestContractNames: the names the exporter reads are internal/verdict's.
func TestContractNames(t *testing.T) {
	assert.Equal(t, verdict.AttrDeferred, attrNames[kDeferred])
	assert.Equal(t, verdict.EventVerdict, eventVerdict)
	assert.Equal(t, verdict.AttrEventTraceID, attrEventTraceID)
	assert.Equal(t, verdict.AttrEventSpanID, attrEventSpanID)
	assert.Equal(t, verdict.AttrEventSpanName, attrEventSpanName)
	assert.Equal(t, verdict.AttrEventSpanKind, attrEventSpanKind)
	assert.Equal(t, verdict.AttrEventStart, attrEventStart)
	for _, a := range verdictAttrs {
		if a == verdict.AttrRunAttempts || a == verdict.AttrRunResult {
			continue // not read
		}
		assert.GreaterOrEqual(t, keyIndex(a), 0, a)
	}
	for _, a := range verdict.OperationAttributes {
		assert.GreaterOrEqual(t, keyIndex(a), 0, "operation attribute %s", a)
	}
}

// carriedScenario is the scenario with two more spans whose operation label needs their kind
// and operation attributes: an HTTP server attempt (its route names it only on a SERVER span)
// and a GenAI model call that also carries gen_ai.usage tokens (never copied to its event).
func carriedScenario(t testing.TB) []testResource {
	res := scenario(t)
	res[1].spans = append(res[1].spans,
		testSpan{name: "HTTP GET", kind: ptrace.SpanKindServer, traceID: traceA, start: 6 * sec, end: 7 * sec, attrs: map[string]any{
			"http.request.method": "GET", "http.route": "/search/{q}",
			"orphanwatch.attempt": 1, "orphanwatch.liveness": "orphaned", "orphanwatch.started_after_gone": true,
			"orphanwatch.after_gone": 0.5, "orphanwatch.run.outcome": "cancelled",
		}},
		testSpan{name: "chat", kind: ptrace.SpanKindClient, traceID: traceA, start: 6 * sec, end: 8 * sec, attrs: map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
			"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5,
			"orphanwatch.attempt": 1, "orphanwatch.liveness": "live", "orphanwatch.spend.model": "gpt-4o-mini",
			"orphanwatch.spend.input_tokens": 10, "orphanwatch.spend.output_tokens": 5, "orphanwatch.spend.cost": 0.001,
			"orphanwatch.run.outcome": "success", "orphanwatch.run.attempts": 1, "orphanwatch.run.result": "ok",
		}},
	)
	return res
}

// isSplitRun picks the span whose run outcome comes alone in the carried form: the scenario's
// final call_tool attempt, which passes with its own verdict while its run's outcome follows.
func isSplitRun(s ptrace.Span) bool {
	v, _ := s.Attributes().Get(verdict.AttrAttempt)
	return s.Name() == "call_tool" && v.Int() == 3
}

// carryVerdicts returns base as the processor writes it under time model v2: every span with
// verdict attributes is marked deferred and loses them, and its verdict is carried as an
// orphanwatch.verdict event, on base's first span (which keeps its own verdict) or, onCarrier,
// on an orphanwatch.verdicts span in a resource of its own. The isSplitRun span keeps its
// verdict but its run's outcome, which comes as a run-outcome-only event. It returns the
// number of events.
func carryVerdicts(t testing.TB, base ptrace.Traces, onCarrier bool) (ptrace.Traces, int) {
	td := ptrace.NewTraces()
	base.CopyTo(td)
	rss := td.ResourceSpans()
	n := rss.Len()
	var host ptrace.Span
	if onCarrier {
		rs := rss.AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "orphanwatch-collector")
		host = rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		host.SetName(verdict.CarrierSpanName)
		host.SetKind(ptrace.SpanKindInternal)
		host.SetTraceID(traceA)
		host.SetSpanID(pcommon.SpanID{0xca, 0xff})
		host.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(100 * sec)))
		host.SetEndTimestamp(host.StartTimestamp())
		host.Attributes().PutBool(verdict.AttrCarrier, true)
	} else {
		host = rss.At(0).ScopeSpans().At(0).Spans().At(0)
	}
	events := 0
	for i := range n {
		rs := rss.At(i)
		svc, ok := rs.Resource().Attributes().Get("service.name")
		require.True(t, ok)
		spans := rs.ScopeSpans().At(0).Spans()
		for k := range spans.Len() {
			span := spans.At(k)
			if !onCarrier && i == 0 && k == 0 {
				continue // the host keeps its verdict
			}
			carry := verdictAttrs
			if isSplitRun(span) {
				carry = runAttrs
			}
			a := span.Attributes()
			ev := pcommon.NewMap()
			for _, name := range carry {
				if v, ok := a.Get(name); ok {
					v.CopyTo(ev.PutEmpty(name))
					a.Remove(name)
				}
			}
			if ev.Len() == 0 {
				continue // nothing to carry
			}
			if !isSplitRun(span) {
				a.PutBool(verdict.AttrDeferred, true)
			}
			e := host.Events().AppendEmpty()
			e.SetName(verdict.EventVerdict)
			e.SetTimestamp(span.EndTimestamp())
			ev.CopyTo(e.Attributes())
			ea := e.Attributes()
			ea.PutStr(verdict.AttrEventTraceID, span.TraceID().String())
			ea.PutStr(verdict.AttrEventSpanID, span.SpanID().String())
			ea.PutStr(verdict.AttrEventSpanName, span.Name())
			ea.PutStr(verdict.AttrEventSpanKind, strings.ToLower(span.Kind().String()))
			ea.PutInt(verdict.AttrEventStart, int64(span.StartTimestamp()))
			ea.PutStr("service.name", svc.Str())
			for _, name := range verdict.OperationAttributes {
				if v, ok := a.Get(name); ok {
					v.CopyTo(ea.PutEmpty(name))
				}
			}
			events++
		}
	}
	return td, events
}

// allSamples gathers every sample and exemplar of every family of g.
func allSamples(t testing.TB, g prometheus.Gatherer) (map[string]map[string]float64, map[string]map[string]map[string]string) {
	mfs, err := g.Gather()
	require.NoError(t, err)
	s, e := map[string]map[string]float64{}, map[string]map[string]map[string]string{}
	for _, mf := range mfs {
		s[mf.GetName()] = samples(t, g, mf.GetName())
		e[mf.GetName()] = exemplars(t, g, mf.GetName())
	}
	return s, e
}

// spanIDsSet returns exemplars with every span ID replaced by "set".
func spanIDsSet(ex map[string]map[string]map[string]string) map[string]map[string]map[string]string {
	out := map[string]map[string]map[string]string{}
	for family, series := range ex {
		out[family] = map[string]map[string]string{}
		for s, labels := range series {
			if labels != nil {
				labels = maps.Clone(labels)
				if labels[exemplarSpanID] != "" {
					labels[exemplarSpanID] = "set"
				}
			}
			out[family][s] = labels
		}
	}
	return out
}

// TestCarriedVerdictsCountAsSpans: spans with their verdicts, and the same spans deferred with
// their verdicts carried as events (on the root, or on a carrier span in a resource of its
// own), give the same series, values and exemplars.
func TestCarriedVerdictsCountAsSpans(t *testing.T) {
	base := buildTraces(t, carriedScenario(t)...)
	record := func(td ptrace.Traces) *Recorder {
		r := newTestRecorder(t, nil)
		r.now = func() time.Time { return t0 }
		r.Record(td)
		return r
	}
	want, wantEx := allSamples(t, record(base).Gatherer())
	for _, family := range []string{
		"orphanwatch_runs_total", "orphanwatch_attempts_total", "orphanwatch_roots_total",
		"orphanwatch_spend_seconds_total", "orphanwatch_spend_tokens_total", "orphanwatch_spend_cost_usd_total",
		"orphanwatch_model_calls_total", "orphanwatch_outlive_seconds", "orphanwatch_unpropagated_total",
	} {
		require.NotEmpty(t, want[family], family)
	}
	// The spans added to the scenario are named by their kind and operation attributes.
	require.Equal(t, 1.0, want["orphanwatch_attempts_total"][`{liveness="started_after_gone",operation="GET /search/{q}",service_name="tools"}`])
	require.Equal(t, 1.0, want["orphanwatch_runs_total"][`{operation="chat gpt-4o-mini",outcome="success",service_name="tools"}`])
	// The orphaned attempts' seconds split at the gone time.
	require.Equal(t, 7.0, want["orphanwatch_spend_seconds_total"][`{liveness="live",service_name="agent"}`])
	require.Equal(t, 2.75, want["orphanwatch_spend_seconds_total"][`{liveness="orphaned",service_name="agent"}`])

	for _, onCarrier := range []bool{false, true} {
		t.Run(map[bool]string{false: "on the root", true: "on a carrier"}[onCarrier], func(t *testing.T) {
			td, events := carryVerdicts(t, base, onCarrier)
			// Every span with a verdict but the root (which stays unless onCarrier).
			require.Equal(t, map[bool]int{false: 10, true: 11}[onCarrier], events)
			got, gotEx := allSamples(t, record(td).Gatherer())
			assert.Equal(t, want, got)
			if onCarrier {
				// The split attempt is counted where it is, before the events of the carrier
				// (the last resource): where two spans feed one series, the other one's
				// exemplar may be the one kept (the first of the interval).
				assert.Equal(t, spanIDsSet(wantEx), spanIDsSet(gotEx))
			} else {
				assert.Equal(t, wantEx, gotEx)
			}

			// Without the events, the deferred spans count nothing: the events did it all.
			stripped := ptrace.NewTraces()
			td.CopyTo(stripped)
			for i := range stripped.ResourceSpans().Len() {
				spans := stripped.ResourceSpans().At(i).ScopeSpans().At(0).Spans()
				for k := range spans.Len() {
					spans.At(k).Events().RemoveIf(func(ptrace.SpanEvent) bool { return true })
				}
			}
			// The deferred spans keep their gen_ai.usage tokens (the orphaned chat's 999999 among
			// them): no fallback counts them.
			none, _ := allSamples(t, record(stripped).Gatherer())
			for _, family := range []string{
				"orphanwatch_runs_total", "orphanwatch_spend_tokens_total", "orphanwatch_spend_cost_usd_total",
				"orphanwatch_model_calls_total", "orphanwatch_unpropagated_total",
			} {
				assert.Empty(t, none[family], family)
			}
			// Only the split attempt, which kept its verdict but its run's outcome, counts.
			assert.Equal(t, map[string]float64{
				`{liveness="started_after_gone",operation="call_tool",service_name="agent"}`: 1,
			}, none["orphanwatch_attempts_total"])
			assert.Equal(t, 1.0, none["orphanwatch_outlive_seconds"][`_count{service_name="agent"}`])
			if onCarrier {
				assert.Empty(t, none["orphanwatch_roots_total"])
			} else {
				assert.Equal(t, want["orphanwatch_roots_total"], none["orphanwatch_roots_total"])
			}
		})
	}
}

// TestRunOutcomeOnlyEvent: an event with only a run's outcome and the span's identity counts
// one run, under the span's service and operation, and nothing else.
func TestRunOutcomeOnlyEvent(t *testing.T) {
	r := newTestRecorder(t, nil)
	td := buildTraces(t, testResource{service: "orphanwatch-collector", spans: []testSpan{
		{name: verdict.CarrierSpanName, kind: ptrace.SpanKindInternal, traceID: traceA, start: 20 * sec, end: 20 * sec, attrs: map[string]any{verdict.AttrCarrier: true}},
	}})
	e := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Events().AppendEmpty()
	e.SetName(verdict.EventVerdict)
	e.SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(14 * sec)))
	require.NoError(t, e.Attributes().FromRaw(map[string]any{
		verdict.AttrRunOutcome: "delivered_to_nobody", verdict.AttrRunAttempts: 3, verdict.AttrRunResult: "ok",
		verdict.AttrEventTraceID: traceB.String(), verdict.AttrEventSpanID: "00000000000000aa",
		verdict.AttrEventSpanName: "POST", verdict.AttrEventSpanKind: "client",
		verdict.AttrEventStart: t0.Add(13 * sec).UnixNano(), "service.name": "agent",
		"http.request.method": "POST", "server.address": "tools", "server.port": 8080,
	}))
	r.Record(td)
	got, ex := allSamples(t, r.Gatherer())
	assert.Equal(t, map[string]float64{
		`{operation="POST tools:8080",outcome="delivered_to_nobody",service_name="agent"}`: 1,
	}, got["orphanwatch_runs_total"])
	assert.Equal(t, map[string]string{"trace_id": traceB.String(), "span_id": "00000000000000aa"},
		ex["orphanwatch_runs_total"][`{operation="POST tools:8080",outcome="delivered_to_nobody",service_name="agent"}`])
	for family, s := range got {
		switch family {
		case "orphanwatch_runs_total":
		case "orphanwatch_spans_skipped_total", "orphanwatch_label_overflow_total", "orphanwatch_series_overflow_total":
			for series, v := range s {
				assert.Zero(t, v, "%s%s", family, series)
			}
		default:
			assert.Empty(t, s, family)
		}
	}
}

// TestMalformedVerdictEvents: malformed identity attributes of an event are counted
// (invalid_verdict_event, once an event) and replaced: the carrying span's trace ID and
// service, no span ID, no name, kind unspecified, start 0 (then zero_time where seconds are
// needed). Absent ones are replaced alike without being counted; an empty service.name is
// unknown_service. Other events are ignored.
func TestMalformedVerdictEvents(t *testing.T) {
	r := newTestRecorder(t, nil)
	td := buildTraces(t, testResource{service: "carrier-svc", spans: []testSpan{
		{name: "host", traceID: traceA, start: 0, end: 30 * sec, attrs: map[string]any{}},
	}})
	host := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	start := t0.Add(1 * sec).UnixNano()
	add := func(name string, attrs map[string]any) {
		e := host.Events().AppendEmpty()
		e.SetName(name)
		e.SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(3 * sec)))
		require.NoError(t, e.Attributes().FromRaw(attrs))
	}
	orphanedAttempt := func(extra map[string]any) map[string]any {
		m := map[string]any{"orphanwatch.attempt": 1, "orphanwatch.liveness": "orphaned", "orphanwatch.after_gone": 0.5}
		maps.Copy(m, extra)
		return m
	}
	// 1. Kind not a string: unspecified, so http.route does not name it (the span name does).
	add(verdict.EventVerdict, orphanedAttempt(map[string]any{
		verdict.AttrEventSpanName: "k", verdict.AttrEventSpanKind: 2, verdict.AttrEventStart: start,
		verdict.AttrEventTraceID: traceB.String(), verdict.AttrEventSpanID: "0102030405060708", "service.name": "svc",
		"http.request.method": "GET", "http.route": "/r",
	}))
	// 2. An unknown kind name: the same.
	add(verdict.EventVerdict, orphanedAttempt(map[string]any{
		verdict.AttrEventSpanName: "k", verdict.AttrEventSpanKind: "SERVER", verdict.AttrEventStart: start,
		verdict.AttrEventTraceID: traceB.String(), "service.name": "svc",
		"http.request.method": "GET", "http.route": "/r",
	}))
	// 3. Start not an int: 0, so its seconds are not counted (zero_time); the rest counts.
	add(verdict.EventVerdict, orphanedAttempt(map[string]any{
		verdict.AttrEventSpanName: "s", verdict.AttrEventStart: "1", "service.name": "svc",
	}))
	add(verdict.EventVerdict, orphanedAttempt(map[string]any{
		verdict.AttrEventSpanName: "s", verdict.AttrEventStart: -5, "service.name": "svc",
	}))
	// 4. Bad hex IDs: the carrying span's trace ID, no span ID.
	add(verdict.EventVerdict, orphanedAttempt(map[string]any{
		verdict.AttrEventSpanName: "x", verdict.AttrEventStart: start, "service.name": "svc",
		verdict.AttrEventTraceID: "not-hex-" + traceB.String()[8:], verdict.AttrEventSpanID: "01020304",
	}))
	add(verdict.EventVerdict, orphanedAttempt(map[string]any{
		verdict.AttrEventSpanName: "x", verdict.AttrEventStart: start, "service.name": "svc",
		verdict.AttrEventTraceID: strings.Repeat("0", 32), verdict.AttrEventSpanID: 7,
	}))
	// 5. Name and service not strings: no name (operation unknown), the carrying span's service.
	add(verdict.EventVerdict, orphanedAttempt(map[string]any{
		verdict.AttrEventSpanName: 5, verdict.AttrEventStart: start, "service.name": 7,
	}))
	// An empty service.name: unknown_service, as on a resource (not malformed).
	add(verdict.EventVerdict, map[string]any{"orphanwatch.run.outcome": "cancelled", "service.name": " ", verdict.AttrEventSpanName: "e"})
	// 6. No identity at all: replaced alike, not counted as malformed.
	add(verdict.EventVerdict, map[string]any{"orphanwatch.run.outcome": "success"})
	// 7. Identity without a verdict: nothing; other events: ignored.
	add(verdict.EventVerdict, map[string]any{verdict.AttrEventSpanName: 5, verdict.AttrEventSpanKind: 1})
	add("exception", orphanedAttempt(nil))
	add(verdict.CarrierSpanName, orphanedAttempt(nil))
	require.NotPanics(t, func() { r.Record(td) })
	g := r.Gatherer()

	assert.Equal(t, map[string]float64{
		`{liveness="outlived_root",operation="k",service_name="svc"}`:               2,
		`{liveness="outlived_root",operation="s",service_name="svc"}`:               2,
		`{liveness="outlived_root",operation="x",service_name="svc"}`:               2,
		`{liveness="outlived_root",operation="unknown",service_name="carrier-svc"}`: 1,
	}, samples(t, g, "orphanwatch_attempts_total"))
	assert.Equal(t, map[string]float64{
		`{operation="unknown",outcome="success",service_name="carrier-svc"}`: 1,
		`{operation="e",outcome="cancelled",service_name="unknown_service"}`: 1,
	}, samples(t, g, "orphanwatch_runs_total"))
	// 2 s each for k, k, x, x (1.5 s of them after the gone time), the unnamed one's too.
	assert.Equal(t, map[string]float64{
		`{liveness="live",service_name="svc"}`:             6,
		`{liveness="orphaned",service_name="svc"}`:         2,
		`{liveness="live",service_name="carrier-svc"}`:     1.5,
		`{liveness="orphaned",service_name="carrier-svc"}`: 0.5,
	}, samples(t, g, "orphanwatch_spend_seconds_total"))
	ex := exemplars(t, g, "orphanwatch_attempts_total")
	assert.Equal(t, map[string]string{"trace_id": traceB.String(), "span_id": "0102030405060708"},
		ex[`{liveness="outlived_root",operation="k",service_name="svc"}`])
	assert.Equal(t, map[string]string{"trace_id": traceA.String()},
		ex[`{liveness="outlived_root",operation="x",service_name="svc"}`])
	assert.Equal(t, map[string]string{"trace_id": traceA.String()},
		ex[`{liveness="outlived_root",operation="s",service_name="svc"}`])

	skipped := samples(t, g, "orphanwatch_spans_skipped_total")
	assert.Equal(t, 7.0, skipped[`{reason="invalid_verdict_event"}`])
	assert.Equal(t, 2.0, skipped[`{reason="zero_time"}`])
	for reason, v := range skipped {
		if reason != `{reason="invalid_verdict_event"}` && reason != `{reason="zero_time"}` {
			assert.Zero(t, v, reason)
		}
	}
}
