package orphanprocessor

import (
	"bytes"
	"context"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/orphanwatch/orphanwatch/internal/badinput"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// canonicalSpans encodes every span of the traces, with its resource and scope, and with the
// processor's own orphanwatch.* attributes removed, as a sorted list: two batches hold the same
// spans, unchanged apart from verdicts, exactly when their lists are equal.
func canonicalSpans(t testing.TB, tds ...ptrace.Traces) []string {
	var out []string
	m := ptrace.ProtoMarshaler{}
	for _, td := range tds {
		for _, f := range tdwalk.Flatten(td) {
			one := ptrace.NewTraces()
			f.AppendTo(one)
			sp := one.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
			if v, ok := sp.Attributes().Get(verdict.AttrCarrier); ok && v.Type() == pcommon.ValueTypeBool && v.Bool() {
				continue // made by the processor to carry verdicts (or such a span given to it)
			}
			sp.Attributes().RemoveIf(func(k string, _ pcommon.Value) bool { return strings.HasPrefix(k, "orphanwatch.") })
			sp.Events().RemoveIf(func(ev ptrace.SpanEvent) bool { return ev.Name() == verdict.EventVerdict })
			b, err := m.MarshalTraces(one)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
	}
	sort.Strings(out)
	return out
}

// hostileBatch builds one batch of spans that are wrong in the ways upstreams get things wrong,
// next to a good trace.
func hostileBatch() ptrace.Traces {
	td := ptrace.NewTraces()
	// A good trace: root cancelled at 3 s, an orphaned callee.
	httpStatus(addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3), 499)
	addSpan(td, "researcher", 1, 2, 1, ptrace.SpanKindServer, 0.1, 5)

	// A cycle of three, and a span that is its own parent.
	addSpan(td, "a", 2, 1, 3, ptrace.SpanKindInternal, 0, 1)
	addSpan(td, "a", 2, 2, 1, ptrace.SpanKindInternal, 0, 1)
	addSpan(td, "a", 2, 3, 2, ptrace.SpanKindInternal, 0, 1)
	addSpan(td, "a", 3, 1, 1, ptrace.SpanKindInternal, 0, 1)

	// A parent that lives in another trace (trace 1's root span ID, from trace 4).
	addSpan(td, "a", 4, 9, 1, ptrace.SpanKindClient, 0, 1)

	// A 1 MB attribute value, non-finite and absurd numbers.
	big := addSpan(td, "b", 5, 1, 0, ptrace.SpanKindServer, 0, 2)
	big.Attributes().PutStr("payload", strings.Repeat("x", 1<<20))
	chat := addSpan(td, "b", 5, 2, 1, ptrace.SpanKindClient, 0.1, 1)
	chat.Attributes().PutStr("gen_ai.request.model", "gpt-4o")
	chat.Attributes().PutDouble("gen_ai.usage.input_tokens", math.NaN())
	chat.Attributes().PutDouble("gen_ai.usage.output_tokens", math.Inf(1))
	chat.Attributes().PutDouble("gen_ai.usage.cost", math.Inf(-1))
	chat.Attributes().PutInt("http.request.resend_count", math.MaxInt64)
	chat.Attributes().PutStr("http.request.header.x-deadline", "1e400")
	chat.Attributes().PutInt("http.response.status_code", -7)

	// Timestamps in 1970 and 2200.
	old := addSpan(td, "c", 6, 1, 0, ptrace.SpanKindServer, 0, 1)
	old.SetStartTimestamp(1)
	old.SetEndTimestamp(2)
	future := addSpan(td, "c", 6, 2, 1, ptrace.SpanKindClient, 0, 1)
	future.SetStartTimestamp(pcommon.NewTimestampFromTime(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)))
	future.SetEndTimestamp(pcommon.NewTimestampFromTime(time.Date(2200, 1, 1, 0, 0, 1, 0, time.UTC)))

	// Invalid UTF-8 in names, services and attribute values; unknown kind and status codes.
	bad := addSpan(td, "caf\xe9", 7, 1, 0, ptrace.SpanKind(42), 0, 1)
	bad.SetName("\xff\xfe")
	bad.Status().SetCode(ptrace.StatusCode(9))
	bad.Attributes().PutStr("error.type", "\xc3")
	return td
}

func TestHostileInputPassesThroughUnchanged(t *testing.T) {
	cfg := testConfig(time.Hour)
	p, _, sink := newSinkProcessor(t, cfg)
	in := hostileBatch()
	// Upstream exporters that retry send the same spans twice.
	again := ptrace.NewTraces()
	in.CopyTo(again)
	want := canonicalSpans(t, in, again)

	require.NoError(t, p.ConsumeTraces(context.Background(), in))
	require.NoError(t, p.ConsumeTraces(context.Background(), again))
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, want, canonicalSpans(t, sink.AllTraces()...), "spans out must equal spans in, apart from verdicts")

	attrs := map[string][]pcommon.Map{}
	for _, td := range sink.AllTraces() {
		for _, f := range tdwalk.Flatten(td) {
			tid, sid := f.Span.TraceID(), f.Span.SpanID()
			k := string(tid[:1]) + string(sid[:1])
			attrs[k] = append(attrs[k], f.Span.Attributes())
		}
	}
	get := func(trace, span byte) []pcommon.Map { return attrs[string([]byte{trace, span})] }
	str := func(m pcommon.Map, k string) string {
		if v, ok := m.Get(k); ok {
			return v.AsString()
		}
		return ""
	}

	// The good trace keeps its verdicts; its exact duplicate gets none.
	callee := get(1, 2)
	require.Len(t, callee, 2)
	verdicts := []string{str(callee[0], verdict.AttrLiveness), str(callee[1], verdict.AttrLiveness)}
	sort.Strings(verdicts)
	assert.Equal(t, []string{"orphaned", "unknown"}, verdicts)
	// Cycles and self-parents: seen, not judged.
	for _, k := range [][2]byte{{2, 1}, {2, 2}, {2, 3}, {3, 1}} {
		for _, m := range get(k[0], k[1]) {
			assert.Equal(t, "unknown", str(m, verdict.AttrLiveness), "span %v", k)
			_, hasRun := m.Get(verdict.AttrAttempt)
			assert.False(t, hasRun)
		}
	}
	// A parent in another trace is just a missing parent: root unknown.
	for _, m := range get(4, 9) {
		assert.Contains(t, []string{"", "unknown"}, str(m, verdict.AttrLiveness))
	}
	// Non-finite numbers are ignored: no tokens, no cost; the model call is still seen.
	for _, m := range get(5, 2) {
		_, hasIn := m.Get(verdict.AttrSpendInput)
		_, hasCost := m.Get(verdict.AttrSpendCost)
		assert.False(t, hasIn)
		assert.False(t, hasCost)
	}
	// The 2200 span under a 1970 root ends beyond the clock: no verdict that counts time, both
	// copies unknown (docs/verdicts.md "Bad input"; issue 30).
	var future []string
	for _, m := range get(6, 2) {
		future = append(future, str(m, verdict.AttrLiveness))
		_, hasAfter := m.Get(verdict.AttrAfterGone)
		assert.False(t, hasAfter)
	}
	assert.Equal(t, []string{"unknown", "unknown"}, future)
}

func TestHugeTracesStayBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("100k spans")
	}
	cfg := testConfig(time.Hour)
	p, _, sink := newSinkProcessor(t, cfg)
	const n = 100_000
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "agent")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	spans.EnsureCapacity(n)
	for i := range n {
		sp := spans.AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{9})
		sp.SetSpanID(pcommon.SpanID{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i), 1})
		if i > 0 {
			// A deep chain for the first 1000, a wide fan below for the rest.
			parent := i - 1
			if i > 1000 {
				parent = 1000
			}
			sp.SetParentSpanID(pcommon.SpanID{byte(parent >> 24), byte(parent >> 16), byte(parent >> 8), byte(parent), 1})
		}
		sp.SetKind(ptrace.SpanKindClient)
		sp.SetStartTimestamp(at(float64(i) * 1e-6))
		sp.SetEndTimestamp(at(float64(i)*1e-6 + 0.5))
	}
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	_, held := p.heldCount()
	assert.Less(t, held, cfg.Limits.MaxSpansPerTrace, "a huge trace is decided in parts, never held whole")
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, n, sink.SpanCount())
}

// TestOverloadEvictsAndLosesNothing sends ten times more concurrent traces than the trace
// limit, with a slow next consumer: the held traces never exceed the limit (the extra ones are
// decided early and passed on in the sender's goroutine, which is the backpressure) and every
// span arrives.
func TestOverloadEvictsAndLosesNothing(t *testing.T) {
	cfg := testConfig(time.Hour)
	cfg.Limits.MaxTraces = 100
	slow := &slowSink{yields: 50}
	p, clk := newTestProcessor(t, cfg, slow)
	startTestProcessor(t, p, clk)
	var wg sync.WaitGroup
	const senders, perSender = 8, 125 // 1000 traces: ten times the limit
	maxHeld := 0
	var mu sync.Mutex
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perSender {
				td := ptrace.NewTraces()
				id := s*perSender + i
				for j := byte(1); j <= 4; j++ {
					sp := addSpan(td, "svc", 0, j, 0, ptrace.SpanKindClient, 0, 1)
					sp.SetTraceID(pcommon.TraceID{byte(id >> 8), byte(id), 7})
					if j > 1 {
						sp.SetParentSpanID(pcommon.SpanID{1, 1})
					}
				}
				assert.NoError(t, p.ConsumeTraces(context.Background(), td))
				h, _ := p.heldCount()
				mu.Lock()
				maxHeld = max(maxHeld, h)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, maxHeld, cfg.Limits.MaxTraces)
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, senders*perSender*4, slow.count())
}

type slowSink struct {
	consumertest.TracesSink
	yields int // the consumer gives way this often per batch: slow, without sleeping
	mu     sync.Mutex
	n      int
}

func (s *slowSink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	for range s.yields {
		runtime.Gosched()
	}
	s.mu.Lock()
	s.n += td.SpanCount()
	s.mu.Unlock()
	return nil
}

func (s *slowSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// TestIdempotencyKeysNeverInClear checks that no verdict attribute or log line carries a key.
func TestIdempotencyKeysNeverInClear(t *testing.T) {
	const key = "secret-key-4f1c9a"
	cfg := testConfig(0)
	set := nopSettings()
	var logs bytes.Buffer
	set.Logger = newBufferLogger(&logs)
	p, _ := newTestProcessorWith(t, set, cfg, nil)
	sink := sinkOf(p)
	td := ptrace.NewTraces()
	addSpan(td, "gw", 1, 1, 0, ptrace.SpanKindServer, 0, 1)
	for i := byte(2); i < 5; i++ {
		sp := addSpan(td, "gw", 1, i, 1, ptrace.SpanKindClient, float64(i), float64(i)+0.5)
		sp.Attributes().PutEmptySlice("http.request.header.idempotency-key").AppendEmpty().SetStr(key)
		sp.Attributes().PutInt("http.response.status_code", 503)
	}
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.NoError(t, p.Shutdown(context.Background()))
	for _, out := range sink.AllTraces() {
		for _, f := range tdwalk.Flatten(out) {
			f.Span.Attributes().Range(func(k string, v pcommon.Value) bool {
				if strings.HasPrefix(k, "orphanwatch.") {
					assert.NotContains(t, v.AsString(), key)
				}
				return true
			})
		}
	}
	assert.NotContains(t, logs.String(), key)
}

// year2200 is a pdata timestamp far beyond any collector's clock.
var year2200 = pcommon.NewTimestampFromTime(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC))

// TestRootWithInsaneTimesJudgesItsTraceAtOnce: a root whose times are not sane (no start, an
// end before its start, an end beyond the clock plus future_tolerance, longer than
// max_request_duration) is counted by its reason, and its trace is decided when its root
// arrived would have it decided (decision_wait_after_root), judged without a root: every span
// unknown, runs unknown_root, the other spans counted root_unusable, nothing deferred and no
// trace counted root_missing (issue 30: such traces waited 30 minutes, deferred).
func TestRootWithInsaneTimesJudgesItsTraceAtOnce(t *testing.T) {
	for _, c := range []struct {
		name   string
		reason string
		mutate func(cfg *Config, root ptrace.Span)
	}{
		{"zero start", "zero_timestamps", func(_ *Config, root ptrace.Span) { root.SetStartTimestamp(0) }},
		{"end before start", "end_before_start", func(_ *Config, root ptrace.Span) { root.SetStartTimestamp(at(5)) }},
		{"end in 2200", "end_in_future", func(_ *Config, root ptrace.Span) { root.SetEndTimestamp(year2200) }},
		{"end beyond future_tolerance", "end_in_future", func(cfg *Config, root ptrace.Span) {
			cfg.FutureTolerance = time.Second
			root.SetEndTimestamp(at(2)) // the clock is at t0
		}},
		{"longer than max_request_duration", "over_max_duration", func(cfg *Config, root ptrace.Span) {
			cfg.MaxRequestDuration = 2 * time.Second
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tel := testTelemetry(t)
			cfg := testConfig(time.Minute)
			td := ptrace.NewTraces()
			root := httpStatus(addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3), 499)
			call := addSpan(td, "gateway", 1, 2, 1, ptrace.SpanKindClient, 0.1, 0.5)
			call.Attributes().PutInt("http.request.resend_count", 1)
			addSpan(td, "researcher", 1, 3, 2, ptrace.SpanKindServer, 0.2, 0.4)
			c.mutate(cfg, root)
			p, clk := newTestProcessorWith(t, settingsFor(tel, component.NewID(metadata.Type)), cfg, nil)
			sink := sinkOf(p)
			now := clk.Now()

			require.NoError(t, p.ConsumeTraces(context.Background(), td))
			require.NoError(t, p.release(context.Background(), p.due(now.Add(cfg.DecisionWaitAfterRoot-1))))
			assert.Zero(t, sink.SpanCount(), "held for decision_wait_after_root, as any trace whose root came")
			require.NoError(t, p.release(context.Background(), p.due(now.Add(cfg.DecisionWaitAfterRoot))))
			require.Equal(t, 3, sink.SpanCount(), "decided at once, not deferred for max_request_duration")

			for id, a := range spanAttrs(sink.AllTraces()) {
				_, deferred := a.Get(verdict.AttrDeferred)
				assert.False(t, deferred, "span %v", id)
				lv, _ := a.Get(verdict.AttrLiveness)
				assert.Equal(t, "unknown", lv.Str(), "span %v", id)
				_, after := a.Get(verdict.AttrAfterGone)
				assert.False(t, after, "span %v: no time counted", id)
			}
			oc, _ := spanAttrs(sink.AllTraces())[pcommon.SpanID{2, 1}].Get(verdict.AttrRunOutcome)
			assert.Equal(t, "unknown_root", oc.Str())
			_, rootReason := spanAttrs(sink.AllTraces())[pcommon.SpanID{1, 1}].Get(verdict.AttrRootEndReason)
			assert.False(t, rootReason, "an unusable root has no end reason")

			assert.Equal(t, map[string]int64{
				"processor=orphan,reason=" + c.reason:   1,
				"processor=orphan,reason=root_unusable": 2,
			}, points(t, tel, "otelcol_processor_orphan_spans_without_verdict"))
			if _, err := tel.GetMetric("otelcol_processor_orphan_traces_root_missing"); err == nil {
				for k, v := range points(t, tel, "otelcol_processor_orphan_traces_root_missing") {
					assert.Zero(t, v, "%s: the root came: not root_missing", k)
				}
			}
		})
	}
}

// TestSpanWithInsaneTimesCountsNoTime: under a usable cancelled root, a span ending in 2200,
// one lasting longer than max_request_duration and one without a start get no verdict that
// counts time (liveness unknown, no after_gone, no attempt, no run), each counted by its
// reason; their sibling that outlived the root is still orphaned.
func TestSpanWithInsaneTimesCountsNoTime(t *testing.T) {
	tel := testTelemetry(t)
	cfg := testConfig(time.Minute)
	cfg.MaxRequestDuration = 20 * time.Second
	p, clk := newTestProcessorWith(t, settingsFor(tel, component.NewID(metadata.Type)), cfg, nil)
	sink := sinkOf(p)
	now := clk.Now()

	td := ptrace.NewTraces()
	httpStatus(addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3), 499)
	future := addSpan(td, "researcher", 1, 2, 1, ptrace.SpanKindClient, 1, 2)
	future.SetEndTimestamp(year2200)
	addSpan(td, "researcher", 1, 3, 1, ptrace.SpanKindClient, 1, 25) // 24 s > max_request_duration
	noStart := addSpan(td, "researcher", 1, 4, 1, ptrace.SpanKindClient, 1, 6)
	noStart.SetStartTimestamp(0)
	addSpan(td, "researcher", 1, 5, 1, ptrace.SpanKindClient, 1, 6) // sane: orphaned
	for _, sp := range []ptrace.Span{future, noStart} {
		sp.Attributes().PutInt("http.request.resend_count", 1)
	}
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.NoError(t, p.release(context.Background(), p.due(now.Add(cfg.DecisionWaitAfterRoot))))
	require.NoError(t, p.releaseRoots(context.Background(), p.dueRoots(now.Add(time.Hour), -1)))
	require.Equal(t, 5, sink.SpanCount())

	attrs := spanAttrs(sink.AllTraces())
	for _, id := range []byte{2, 3, 4} {
		a := attrs[pcommon.SpanID{id, 1}]
		lv, _ := a.Get(verdict.AttrLiveness)
		assert.Equal(t, "unknown", lv.Str(), "span %d", id)
		for _, k := range []string{verdict.AttrAfterGone, verdict.AttrAttempt, verdict.AttrRunOutcome, verdict.AttrStartedAfterGone} {
			_, ok := a.Get(k)
			assert.False(t, ok, "span %d: %s", id, k)
		}
	}
	lv, _ := attrs[pcommon.SpanID{5, 1}].Get(verdict.AttrLiveness)
	assert.Equal(t, "orphaned", lv.Str())
	reason, _ := attrs[pcommon.SpanID{1, 1}].Get(verdict.AttrRootEndReason)
	assert.Equal(t, "cancelled", reason.Str())
	assert.Equal(t, map[string]int64{
		"processor=orphan,reason=end_in_future":     1,
		"processor=orphan,reason=over_max_duration": 1,
		"processor=orphan,reason=zero_timestamps":   1,
	}, points(t, tel, "otelcol_processor_orphan_spans_without_verdict"))
}

// TestZeroWaitChecksTheClockToo: with decision_wait 0 (each batch decided as it comes) a span
// ending beyond the clock is refused alike.
func TestZeroWaitChecksTheClockToo(t *testing.T) {
	tel := testTelemetry(t)
	p, _ := newTestProcessorWith(t, settingsFor(tel, component.NewID(metadata.Type)), testConfig(0), nil)
	td := ptrace.NewTraces()
	addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3).Attributes().PutInt("http.response.status_code", 499)
	addSpan(td, "researcher", 1, 2, 1, ptrace.SpanKindClient, 1, 2).SetEndTimestamp(year2200)
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	lv, _ := spanAttrs(sinkOf(p).AllTraces())[pcommon.SpanID{2, 1}].Get(verdict.AttrLiveness)
	assert.Equal(t, "unknown", lv.Str())
	assert.Equal(t, map[string]int64{"processor=orphan,reason=end_in_future": 1},
		points(t, tel, "otelcol_processor_orphan_spans_without_verdict"))
}

// TestBadInputLoggedSampled: malformed spans and ignored attribute values are logged besides
// being counted: one line per reason per interval, with the count since the reason's last
// line, naming the counter; never a span's keys or attribute values. Spans judged unknown for
// want of a root are counted, not logged.
func TestBadInputLoggedSampled(t *testing.T) {
	tel := testTelemetry(t)
	set := settingsFor(tel, component.NewID(metadata.Type))
	core, logs := observer.New(zap.InfoLevel)
	set.Logger = zap.New(core)
	p, clk := newTestProcessorWith(t, set, testConfig(0), nil)

	send := func(trace byte) {
		td := ptrace.NewTraces()
		addSpan(td, "gateway", trace, 1, 0, ptrace.SpanKindServer, 0, 3)
		bad := addSpan(td, "researcher", trace, 2, 1, ptrace.SpanKindClient, 2, 1) // end before start
		bad.Attributes().PutStr("http.request.header.idempotency-key", "secret-key-"+string('a'+rune(trace)))
		bad.Attributes().PutStr("gen_ai.usage.input_tokens", "lots")            // ignored: invalid_token_count
		addSpan(td, "researcher", trace+100, 3, 9, ptrace.SpanKindClient, 1, 2) // a trace whose root never comes
		require.NoError(t, p.ConsumeTraces(context.Background(), td))
	}
	send(1)
	send(2)
	send(3)
	lines := func() map[string][]observer.LoggedEntry {
		out := map[string][]observer.LoggedEntry{}
		for _, e := range logs.All() {
			r, _ := e.ContextMap()["reason"].(string)
			out[r] = append(out[r], e)
		}
		return out
	}
	got := lines()
	require.Len(t, got["end_before_start"], 1, "one line per reason per interval")
	assert.Equal(t, int64(1), got["end_before_start"][0].ContextMap()["spans"])
	assert.Equal(t, "otelcol_processor_orphan_spans_without_verdict", got["end_before_start"][0].ContextMap()["counter"])
	assert.Equal(t, zap.WarnLevel, got["end_before_start"][0].Level)
	require.Len(t, got["wrong_attribute_type"], 1)
	assert.Equal(t, int64(1), got["wrong_attribute_type"][0].ContextMap()["values"])
	assert.Equal(t, "otelcol_processor_orphan_attributes_ignored", got["wrong_attribute_type"][0].ContextMap()["counter"])
	assert.Empty(t, got["root_missing"], "counted, not logged: not malformed")
	for _, e := range logs.All() {
		for k, v := range e.ContextMap() {
			assert.NotContains(t, k+"="+toString(v), "secret-", "a line never carries a span's keys or values")
		}
	}

	clk.Advance(badinput.DefaultInterval)
	send(4)
	got = lines()
	require.Len(t, got["end_before_start"], 2)
	assert.Equal(t, int64(3), got["end_before_start"][1].ContextMap()["spans"], "the two held back since the last line, and this one")
	assert.Equal(t, map[string]int64{
		"processor=orphan,reason=end_before_start": 4,
		"processor=orphan,reason=root_missing":     4,
	}, points(t, tel, "otelcol_processor_orphan_spans_without_verdict"))
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}
