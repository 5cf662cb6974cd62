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
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
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
