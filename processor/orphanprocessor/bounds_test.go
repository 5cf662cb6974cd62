package orphanprocessor

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
)

// Issue 30, items 1 and 4: what the processor hands on in one call is bounded
// (send_batch_max_size), and what it holds is bounded in bytes (limits.max_held_bytes).

// store is a trace store behind an OTLP receiver: it counts the spans of every request it gets,
// and each span ID, taking perSpan per span before it counts them (as a store that writes
// them), whatever the sender does meanwhile: a sender that gave up on a request and sends it
// again makes it count the spans twice.
type store struct {
	perSpan  time.Duration
	mu       sync.Mutex
	spans    int
	ids      map[pcommon.SpanID]int
	requests int
	largest  int // spans in the largest request
	inflight int // requests being handled
}

func newStore(perSpan time.Duration) *store {
	return &store{perSpan: perSpan, ids: map[pcommon.SpanID]int{}}
}

func (s *store) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	s.mu.Lock()
	s.inflight++
	s.mu.Unlock()
	n := td.SpanCount()
	time.Sleep(time.Duration(n) * s.perSpan) // not cut short by the sender's timeout
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	s.requests++
	s.spans += n
	s.largest = max(s.largest, n)
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				s.ids[spans.At(k).SpanID()]++
			}
		}
	}
	return nil
}

// counts returns the spans received, the distinct span IDs among them, the requests and the
// spans of the largest.
func (s *store) counts() (spans, distinct, requests, largest int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spans, len(s.ids), s.requests, s.largest
}

// waitFor waits, at most limit, until the store has received at least n spans and handles no
// request; false when it had not by then.
func (s *store) waitFor(n int, limit time.Duration) bool {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		s.mu.Lock()
		done := s.spans >= n && s.inflight == 0
		s.mu.Unlock()
		if done {
			return true
		}
	}
	return false
}

// startStore starts an OTLP receiver with default settings (but for its HTTP endpoint, on
// 127.0.0.1) feeding st: a second collector's front door. It returns the exporter endpoint.
func startStore(t *testing.T, st *store) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", e2e.FreePort(t))
	rf := otlpreceiver.NewFactory()
	rcfg := rf.CreateDefaultConfig().(*otlpreceiver.Config)
	rcfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = addr
	cons, err := consumer.NewTraces(st.ConsumeTraces)
	require.NoError(t, err)
	recv, err := rf.CreateTraces(context.Background(), receivertest.NewNopSettings(rf.Type()), rcfg, cons)
	require.NoError(t, err)
	require.NoError(t, recv.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { assert.NoError(t, recv.Shutdown(context.Background())) })
	return "http://" + addr
}

// startExporter starts an otlp_http exporter with default settings sending to endpoint, but
// for its timeout and retries when set.
func startExporter(t *testing.T, endpoint string, timeout time.Duration, retry *configretry.BackOffConfig, compression configcompression.Type) exporter.Traces {
	t.Helper()
	ef := otlphttpexporter.NewFactory()
	ecfg := ef.CreateDefaultConfig().(*otlphttpexporter.Config)
	ecfg.ClientConfig.Endpoint = endpoint
	if timeout > 0 {
		ecfg.ClientConfig.Timeout = timeout
	}
	if retry != nil {
		ecfg.RetryConfig = *retry
	}
	if compression != "" {
		ecfg.ClientConfig.Compression = compression
	}
	exp, err := ef.CreateTraces(context.Background(), exportertest.NewNopSettings(ef.Type()), ecfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	return exp
}

// heldTraffic is n spans in batches of 1,000, traces of 20 spans whose root never comes (held
// until shutdown), each span about 330 bytes of OTLP as in issue 30's traffic (163 MB for
// 500,000 spans): a resource with a service, an HTTP client span's usual attributes.
func heldTraffic(n int) []ptrace.Traces {
	const perBatch, perTrace = 1000, 20
	var out []ptrace.Traces
	for b := 0; b*perBatch < n; b++ {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("checkout-%02d", b%7))
		rs.Resource().Attributes().PutStr("service.instance.id", "6f1c2a7e-5d0b-4b7a-9a37-1c9e8f7b2d40")
		rs.Resource().Attributes().PutStr("host.name", "ip-10-0-12-34.eu-west-1.compute.internal")
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp")
		spans := ss.Spans()
		for i := b * perBatch; i < min((b+1)*perBatch, n); i++ {
			sp := spans.AppendEmpty()
			var tid pcommon.TraceID
			binary.BigEndian.PutUint64(tid[:8], uint64(i/perTrace)+1)
			tid[8] = 0x30
			var sid, parent pcommon.SpanID
			binary.BigEndian.PutUint64(sid[:], uint64(i)+1)
			parent[0], parent[7] = 0xee, byte(i/perTrace) // a root that never comes
			sp.SetTraceID(tid)
			sp.SetSpanID(sid)
			sp.SetParentSpanID(parent)
			sp.SetName("POST /v1/orders/{id}/items")
			sp.SetKind(ptrace.SpanKindClient)
			sp.SetStartTimestamp(at(float64(i) * 1e-4))
			sp.SetEndTimestamp(at(float64(i)*1e-4 + 0.05))
			a := sp.Attributes()
			a.PutStr("http.request.method", "POST")
			a.PutStr("url.full", fmt.Sprintf("https://inventory.internal.example.com:8443/v1/orders/%08d/items?expand=pricing", i))
			a.PutInt("http.response.status_code", 200)
			a.PutStr("server.address", "inventory.internal.example.com")
			a.PutInt("server.port", 8443)
		}
		out = append(out, td)
	}
	return out
}

// encodedSize is the OTLP protobuf size of tds.
func encodedSize(tds []ptrace.Traces) int {
	n := 0
	for _, td := range tds {
		n += (&ptrace.ProtoMarshaler{}).TracesSize(td)
	}
	return n
}

// holdAndShutdown starts a processor (cfg) passing on to next, gives it tds (all held: their
// roots never come and decision_wait is an hour) and shuts it down, which hands on all of them.
func holdAndShutdown(t *testing.T, cfg *Config, next consumer.Traces, tds []ptrace.Traces) {
	t.Helper()
	p, err := newOrphanProcessor(nopSettings(), cfg, next)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	for _, td := range tds {
		require.NoError(t, p.ConsumeTraces(context.Background(), td))
	}
	traces, spans := p.heldCount()
	require.Equal(t, shutdownSpans(tds), spans, "every span is held until shutdown")
	require.Positive(t, traces)
	require.NoError(t, p.Shutdown(context.Background()))
}

func shutdownSpans(tds []ptrace.Traces) int {
	n := 0
	for _, td := range tds {
		n += td.SpanCount()
	}
	return n
}

// heldConfig holds every trace of heldTraffic until shutdown.
func heldConfig() *Config {
	cfg := testConfig(time.Hour)
	cfg.DecisionWaitAfterRoot = time.Hour
	return cfg
}

// TestShutdownFlushFitsADefaultCollector: everything held leaves at shutdown in calls of at most
// send_batch_max_size spans, so an OTLP receiver with default settings (20 MiB a request over
// HTTP) behind an otlp_http exporter with default settings takes every span, once. Before
// (issue 30), all held spans left in one call: the receiver answered 400 and the exporter
// dropped them all; the unbounded case shows this still happens without the bound.
func TestShutdownFlushFitsADefaultCollector(t *testing.T) {
	n := heldSpansAtShutdown // 500,000; fewer, uncompressed, under the race detector (race_test.go)
	tds := heldTraffic(n)
	size := encodedSize(tds)
	t.Logf("%d spans held, %.1f MB of OTLP (%.0f bytes a span)", n, float64(size)/1e6, float64(size)/float64(n))

	st := newStore(0)
	exp := startExporter(t, startStore(t, st), 0, nil, flushCompression)
	start := time.Now()
	holdAndShutdown(t, heldConfig(), exp, tds)
	require.NoError(t, exp.Shutdown(context.Background())) // drains its queue
	st.waitFor(n, 0)
	spans, distinct, requests, largest := st.counts()
	t.Logf("received %d spans in %d requests (largest %d) in %s", spans, requests, largest, time.Since(start))
	assert.Equal(t, n, spans, "every span reaches the second collector")
	assert.Equal(t, n, distinct, "each once")
	assert.LessOrEqual(t, largest, defaultSendBatchMaxSize)
	assert.GreaterOrEqual(t, requests, n/defaultSendBatchMaxSize)

	t.Run("unbounded", func(t *testing.T) {
		// The same without the bound (issue 30's "before"): more than 20 MiB in one request
		// (sent uncompressed, to spare the test gzip's time: the receiver bounds the body it
		// reads, decompressed or not).
		n := 70_000
		tds := heldTraffic(n)
		require.Greater(t, encodedSize(tds), 20<<20)
		st := newStore(0)
		exp := startExporter(t, startStore(t, st), 0, nil, configcompression.Type("none"))
		cfg := heldConfig()
		cfg.SendBatchMaxSize = n
		holdAndShutdown(t, cfg, exp, tds)
		require.NoError(t, exp.Shutdown(context.Background()))
		spans, _, _, _ := st.counts()
		assert.Zero(t, spans, "one request of everything is refused whole by a default receiver")
	})
}

// TestSlowStoreGetsNoDuplicate: a trace store that takes 200 µs a span (1.6 s for 8,192) behind
// an otlp_http exporter with a 5 s timeout and retries (uncompressed, so that the store's time
// is most of a request's). Every span held leaves at shutdown in calls of at most
// send_batch_max_size spans, each answered within the timeout: the store counts each span
// once. Without the bound (issue 30: 2.02 M spans sent, 7.06 M stored), one request of all
// 30,000 spans takes 6 s, times out, is sent again and stored again: the unbounded case shows
// the duplicates.
func TestSlowStoreGetsNoDuplicate(t *testing.T) {
	const n, perSpan, timeout = 30_000, 200 * time.Microsecond, 5 * time.Second
	retry := configretry.NewDefaultBackOffConfig()
	// One retry after a timeout: given up 8 s after the first attempt.
	retry.InitialInterval, retry.MaxInterval, retry.MaxElapsedTime = 50*time.Millisecond, 200*time.Millisecond, 8*time.Second
	// run holds the traffic, shuts the processor down (everything leaves) and waits until the
	// store has received more than the spans sent (duplicates) or, having all of them, the
	// exporter's timeout and one retry have passed with nothing more: a request that timed out
	// is sent again by then.
	run := func(t *testing.T, sendMax int) (spans, distinct, requests, largest int) {
		st := newStore(perSpan)
		exp := startExporter(t, startStore(t, st), timeout, &retry, configcompression.Type("none"))
		cfg := heldConfig()
		cfg.SendBatchMaxSize = sendMax
		holdAndShutdown(t, cfg, exp, heldTraffic(n))
		require.True(t, st.waitFor(n, 30*time.Second), "the store got every span, at least once")
		st.waitFor(n+1, timeout+time.Second)
		require.NoError(t, exp.Shutdown(context.Background()))
		return st.counts()
	}
	t.Run("bounded", func(t *testing.T) {
		spans, distinct, requests, largest := run(t, defaultSendBatchMaxSize)
		t.Logf("store: %d spans, %d distinct, %d requests, largest %d", spans, distinct, requests, largest)
		assert.Equal(t, n, distinct, "every span stored")
		assert.Equal(t, n, spans, "none twice")
		assert.LessOrEqual(t, largest, defaultSendBatchMaxSize)
	})
	t.Run("unbounded", func(t *testing.T) {
		spans, distinct, requests, largest := run(t, n)
		t.Logf("store: %d spans, %d distinct, %d requests, largest %d", spans, distinct, requests, largest)
		assert.Equal(t, n, largest, "one request of everything")
		assert.Greater(t, spans, n, "timed out, sent again, stored twice")
	})
}
