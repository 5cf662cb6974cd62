package orphanprocessor

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/orphanwatch/orphanwatch/internal/deadlinefmt"
	"github.com/orphanwatch/orphanwatch/internal/rulesconfig"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// TestExtraAttributesKeepDefaults: an extra_ list adds after the defaults; the list itself
// still replaces them; a name in both is read once, at its first place.
func TestExtraAttributesKeepDefaults(t *testing.T) {
	cfg := loadConfig(t, "extra")
	require.NoError(t, confmap.Validate(cfg))
	eff := cfg.Attributes.Effective()
	def := rulesconfig.Default().Attributes
	defaultIdempotencyKeys, defaultAttempts, defaultDeadlines, defaultInputTokens := def.IdempotencyKey, def.Attempt, def.Deadlines, def.InputTokens
	assert.Equal(t, append(append([]string{}, defaultIdempotencyKeys...), "messaging.kafka.message.key"), eff.IdempotencyKey)
	assert.Equal(t, append(append([]string{}, defaultAttempts...), "retry.attempt"), eff.Attempt)
	assert.Equal(t, append(append([]DeadlineConfig{}, defaultDeadlines...), DeadlineConfig{Attribute: "app.deadline", Format: deadlinefmt.FormatRFC3339}), eff.Deadlines)
	assert.Equal(t, defaultInputTokens, eff.InputTokens)
	// The defaults themselves are untouched (Effective copies).
	assert.Len(t, defaultIdempotencyKeys, 3)
	assert.Equal(t, eff.IdempotencyKey, cfg.readerOptions().IdempotencyKeys)

	cfg = loadConfig(t, "replace")
	assert.Equal(t, []string{"messaging.kafka.message.key"}, cfg.Attributes.Effective().IdempotencyKey)

	cfg = loadConfig(t, "replace_and_extra")
	assert.Equal(t, []string{"app.key", "messaging.kafka.message.key"}, cfg.Attributes.Effective().IdempotencyKey)
}

func TestExtraAttributesValidated(t *testing.T) {
	err := confmap.Validate(loadConfig(t, "bad_extra"))
	require.Error(t, err)
	for _, w := range []string{"attributes.extra_idempotency_key[0]: must not be empty", "attributes.extra_deadlines[0].format", "fortnights"} {
		assert.Equal(t, 1, strings.Count(err.Error(), w), "%q in %q", w, err.Error())
	}
}

// runScenarioWith feeds a scenario to a processor configured by edit (on scenarioConfig).
func runScenarioWith(t *testing.T, sc scenarioCase, edit func(*Config)) []ptrace.Traces {
	t.Helper()
	cfg := scenarioConfig()
	edit(cfg)
	require.NoError(t, confmap.Validate(cfg))
	sink := new(consumertest.TracesSink)
	p, err := newOrphanProcessor(nopSettings(), cfg, sink)
	require.NoError(t, err)
	// The processor owns what it is given (MutatesData) and may pass that very batch on with
	// its verdicts: each run gets a copy of the scenario.
	td := ptrace.NewTraces()
	sc.traces.CopyTo(td)
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.NoError(t, p.Shutdown(context.Background()))
	return sink.AllTraces()
}

// TestExtraKeyKeepsDefaultBinding: S7 binds trace B to trace A's root through the default key
// attribute http.request.header.idempotency-key. Naming one more key attribute with
// extra_idempotency_key keeps that binding (every verdict as expected.json); naming it with
// idempotency_key, which replaces the defaults, loses it.
func TestExtraKeyKeepsDefaultBinding(t *testing.T) {
	var s7 scenarioCase
	for _, sc := range loadScenarios(t) {
		if strings.HasPrefix(sc.dir, "s07") {
			s7 = sc
		}
	}
	require.NotEmpty(t, s7.dir, "scenario s07 missing")

	out := runScenarioWith(t, s7, func(c *Config) {
		c.Attributes.ExtraIdempotencyKey = []string{"messaging.kafka.message.key"}
	})
	checkScenario(t, s7, effective(t, out)) // keyed runs left open at shutdown are carried (Finish)

	replaced := runScenarioWith(t, s7, func(c *Config) {
		c.Attributes.IdempotencyKey = []string{"messaging.kafka.message.key"}
	})
	got, _ := verdictsOf(out)
	lost, _ := verdictsOf(replaced)
	assert.NotEqual(t, got, lost, "replacing the key list should lose S7's binding (else this test proves nothing)")
}

// TestEffectiveAttributesLogged: the factory logs the lists read, once per processor, at Info.
func TestEffectiveAttributesLogged(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	set := nopSettings()
	set.Logger = zap.New(core)
	cfg := loadConfig(t, "extra")
	p, err := NewFactory().CreateTraces(context.Background(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })

	entries := logs.FilterMessageSnippet("Span attributes read").All()
	require.Len(t, entries, 1)
	fields := entries[0].ContextMap()
	assert.Equal(t, []any{"http.request.header.idempotency-key", "http.request.header.x-idempotency-key",
		"rpc.grpc.request.metadata.idempotency-key", "messaging.kafka.message.key"}, fields["idempotency_key"])
	assert.Equal(t, []any{"http.request.resend_count", "http.request.header.x-envoy-attempt-count", "retry.attempt"}, fields["attempt"])
	assert.Contains(t, fields["deadlines"], "app.deadline (rfc3339)")
	assert.Contains(t, fields["deadlines"], "http.request.header.x-deadline (unix_seconds)")
	assert.NotContains(t, fields["deadlines"], "http.request.header.x-deadline (milliseconds)")
}

// TestOperationAttributes: what a carried verdict copies of its span are the attributes named in
// verdict.OperationAttributes then UsageAttributes, in their order, and nothing else.
func TestOperationAttributes(t *testing.T) {
	a := pcommon.NewMap()
	a.PutStr("http.route", "/x")
	a.PutStr("unrelated", "u")
	a.PutStr("gen_ai.request.model", "gpt-4o")
	a.PutInt("gen_ai.usage.input_tokens", 12)
	a.PutDouble("server.port", 8443) // a wrong type, copied as it is
	a.PutEmptySlice("http.request.method").AppendEmpty().SetStr("POST")
	a.PutBool("url.scheme", true)
	got := operationAttributes(a)
	if got == nil {
		t.Fatal("nothing copied")
	}
	written := func(part verdict.Part) map[string]any {
		sp := ptrace.NewSpan()
		writeCarried(sp, &verdict.Carried{Span: verdict.CarriedSpan{Extra: got}, Part: part})
		m := map[string]any{}
		var order []string
		for k, v := range sp.Events().At(0).Attributes().All() {
			m[k] = v.AsRaw()
			order = append(order, k)
		}
		m["order"] = strings.Join(order[:min(len(order), 6)], " ")
		return m
	}
	all := written(verdict.PartAll)
	want := map[string]any{
		"gen_ai.request.model": "gpt-4o", "http.request.method": []any{"POST"}, "http.route": "/x",
		"server.port": 8443.0, "url.scheme": true, "gen_ai.usage.input_tokens": int64(12),
	}
	for k, v := range want {
		if fmt.Sprint(all[k]) != fmt.Sprint(v) || fmt.Sprintf("%T", all[k]) != fmt.Sprintf("%T", v) {
			t.Errorf("%s carried as %#v, want %#v", k, all[k], v)
		}
	}
	if _, ok := all["unrelated"]; ok {
		t.Error("an attribute outside the lists was copied")
	}
	if all["order"] != "gen_ai.request.model http.request.method http.route server.port url.scheme gen_ai.usage.input_tokens" {
		t.Errorf("copied in the order %q, want the lists' order", all["order"])
	}
	run := written(verdict.PartRun)
	if _, ok := run["gen_ai.usage.input_tokens"]; ok {
		t.Error("a part of a verdict carried token usage")
	}
	if run["http.route"] != "/x" {
		t.Errorf("a part of a verdict lost its operation attributes: %v", run)
	}
	if operationAttributes(pcommon.NewMap()) != nil {
		t.Error("a span without operation attributes keeps a record of them")
	}
}

// TestCarriedIDs: a carried verdict names its span's trace and span ID as pcommon writes them,
// an empty one as "".
func TestCarriedIDs(t *testing.T) {
	tid := pcommon.TraceID{0x01, 0xab, 15: 0xff}
	sid := pcommon.SpanID{0x0c, 7: 0x10}
	cases := []struct {
		tid pcommon.TraceID
		sid pcommon.SpanID
	}{{tid, sid}, {tid, pcommon.SpanID{}}, {pcommon.TraceID{}, sid}}
	for _, c := range cases {
		sp := ptrace.NewSpan()
		writeCarried(sp, &verdict.Carried{Span: verdict.CarriedSpan{TraceID: verdict.TraceID(c.tid), SpanID: verdict.SpanID(c.sid)}, Part: verdict.PartEdge})
		a := sp.Events().At(0).Attributes()
		gt, _ := a.Get(verdict.AttrEventTraceID)
		gs, _ := a.Get(verdict.AttrEventSpanID)
		if gt.Str() != c.tid.String() || gs.Str() != c.sid.String() {
			t.Errorf("IDs %v %v carried as %q %q", c.tid, c.sid, gt.Str(), gs.Str())
		}
	}
	if got := idsHex(verdict.TraceID(tid), verdict.SpanID(sid)); got != "01ab00000000000000000000000000ff0c00000000000010" {
		t.Errorf("idsHex = %q", got)
	}
}

// TestPrefixPricedModelLogged: a model without a prices entry of its own, priced by the entry
// that prefixes its name (gpt-4o-mini by gpt-4o), is logged at Info once, however many calls
// name it; a model with its own entry is not. The call is billed at the prefix entry's price,
// as logged.
func TestPrefixPricedModelLogged(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	set := nopSettings()
	set.Logger = zap.New(core)
	cfg := testConfig(0)
	cfg.Prices = map[string]PriceConfig{"gpt-4o": {InputPerMillion: 2.5, OutputPerMillion: 10}}
	sink := new(consumertest.TracesSink)
	p, _ := newTestProcessorWith(t, set, cfg, sink)

	for tr := byte(1); tr <= 3; tr++ {
		td := ptrace.NewTraces()
		addSpan(td, "gw", tr, 1, 0, ptrace.SpanKindServer, 0, 3)
		for i, model := range []string{"gpt-4o-mini", "gpt-4o"} {
			sp := addSpan(td, "agent", tr, byte(2+i), 1, ptrace.SpanKindClient, 1, 2)
			sp.SetName("chat " + model)
			sp.Attributes().PutStr("gen_ai.operation.name", "chat")
			sp.Attributes().PutStr("gen_ai.request.model", model)
			sp.Attributes().PutInt("gen_ai.usage.input_tokens", 1000)
			sp.Attributes().PutInt("gen_ai.usage.output_tokens", 100)
		}
		require.NoError(t, p.ConsumeTraces(context.Background(), td))
	}

	entries := logs.FilterMessageSnippet("Model priced by the prices entry that prefixes its name").All()
	require.Len(t, entries, 1)
	assert.Equal(t, zapcore.InfoLevel, entries[0].Level)
	assert.Equal(t, map[string]any{"model": "gpt-4o-mini", "prices_entry": "gpt-4o"}, entries[0].ContextMap())

	costs := map[string]float64{}
	for _, td := range sink.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			ss := td.ResourceSpans().At(i).ScopeSpans().At(0).Spans()
			for j := 0; j < ss.Len(); j++ {
				if v, ok := ss.At(j).Attributes().Get("orphanwatch.spend.cost"); ok {
					costs[ss.At(j).Name()] = v.Double()
				}
			}
		}
	}
	// 1000 input and 100 output tokens at gpt-4o's 2.50 and 10.00 USD per million.
	assert.InDelta(t, 0.0035, costs["chat gpt-4o-mini"], 1e-12)
	assert.InDelta(t, 0.0035, costs["chat gpt-4o"], 1e-12)
}
