package bench

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/spanmetricsconnector"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/groupbytraceprocessor"
	collectorcomponent "go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/prices"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor"
)

// component is one contender: it takes every batch of the mix and returns once all the work
// the batches cause is done (for asynchronous components: once every span came out).
type component interface {
	consume(tb testing.TB, batches []ptrace.Traces)
	close(tb testing.TB)
}

// ---- the floor ------------------------------------------------------------------------------

// floorSpan is what the floor reads of a span: the fields the orphan processor reads
// (spanread.Reader.Read), nothing more.
type floorSpan struct {
	traceID                 pcommon.TraceID
	spanID, parentID        pcommon.SpanID
	service, name           string
	kind                    ptrace.SpanKind
	start, end              pcommon.Timestamp
	status                  ptrace.StatusCode
	links                   int
	exceptions              int
	values                  [numFloorAttrs]pcommon.Value
	present                 uint64
	sumInt                  int64
	sumLen                  int
	lastStr                 string
	firstExceptionEventType string
}

// The attribute names the processor reads with its default configuration.
const (
	fHTTPMethod = iota
	fHTTPStatus
	fHTTPStatusOld
	fGRPCStatus
	fRPCStatus
	fErrorType
	fExceptionType
	fResend
	fKey1
	fKey2
	fKey3
	fKey4
	fRPCMethod
	fRPCService
	fMsgDest
	fServerAddr
	fServerPort
	fURLFull
	fPeerService
	fReqModel
	fOperation
	fDeadline1
	fDeadline2
	fDeadline3
	fDeadline4
	fDeadline5
	fRespModel
	fLLMModel
	fAIRespModel
	fAIModelID
	fIn1
	fIn2
	fIn3
	fIn4
	fIn5
	fIn6
	fOut1
	fOut2
	fOut3
	fOut4
	fOut5
	fOut6
	fCost
	numFloorAttrs
)

func floorIndex(k string) int {
	switch k {
	case "http.request.method":
		return fHTTPMethod
	case "http.response.status_code":
		return fHTTPStatus
	case "http.status_code":
		return fHTTPStatusOld
	case "rpc.grpc.status_code":
		return fGRPCStatus
	case "rpc.status_code":
		return fRPCStatus
	case "error.type":
		return fErrorType
	case "exception.type":
		return fExceptionType
	case "http.request.resend_count":
		return fResend
	case "http.request.header.idempotency-key":
		return fKey1
	case "http.request.header.x-idempotency-key":
		return fKey2
	case "rpc.grpc.request.metadata.idempotency-key":
		return fKey3
	case "messaging.message.idempotency_key":
		return fKey4
	case "rpc.method":
		return fRPCMethod
	case "rpc.service":
		return fRPCService
	case "messaging.destination.name":
		return fMsgDest
	case "server.address":
		return fServerAddr
	case "server.port":
		return fServerPort
	case "url.full":
		return fURLFull
	case "peer.service":
		return fPeerService
	case "gen_ai.request.model":
		return fReqModel
	case "gen_ai.operation.name":
		return fOperation
	case "http.request.header.x-deadline":
		return fDeadline1
	case "http.request.header.x-deadline-ms":
		return fDeadline2
	case "http.request.header.grpc-timeout":
		return fDeadline3
	case "rpc.grpc.request.metadata.grpc-timeout":
		return fDeadline4
	case "http.request.header.x-envoy-expected-rq-timeout-ms":
		return fDeadline5
	case "gen_ai.response.model":
		return fRespModel
	case "llm.model_name":
		return fLLMModel
	case "ai.response.model":
		return fAIRespModel
	case "ai.model.id":
		return fAIModelID
	case "gen_ai.usage.input_tokens":
		return fIn1
	case "gen_ai.usage.prompt_tokens":
		return fIn2
	case "llm.token_count.prompt":
		return fIn3
	case "llm.usage.prompt_tokens":
		return fIn4
	case "ai.usage.inputTokens":
		return fIn5
	case "ai.usage.promptTokens":
		return fIn6
	case "gen_ai.usage.output_tokens":
		return fOut1
	case "gen_ai.usage.completion_tokens":
		return fOut2
	case "llm.token_count.completion":
		return fOut3
	case "llm.usage.completion_tokens":
		return fOut4
	case "ai.usage.outputTokens":
		return fOut5
	case "ai.usage.completionTokens":
		return fOut6
	case "gen_ai.usage.cost":
		return fCost
	}
	return -1
}

// floor is the bare pdata traversal: every span's IDs, name, kind, times, status, links, its
// resource's service.name, the exception events, and the value of every attribute the
// processor reads, found in one pass over the span's attributes. It keeps nothing, decides
// nothing and writes nothing: no component that reads those fields can cost less.
type floor struct{ sink int64 }

func (f *floor) consume(_ testing.TB, batches []ptrace.Traces) {
	var s floorSpan
	for _, td := range batches {
		rss := td.ResourceSpans()
		for i := range rss.Len() {
			rs := rss.At(i)
			service := ""
			if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
				service = v.Str()
			}
			sss := rs.ScopeSpans()
			for j := range sss.Len() {
				spans := sss.At(j).Spans()
				for k := range spans.Len() {
					sp := spans.At(k)
					s.service = service
					s.traceID, s.spanID, s.parentID = sp.TraceID(), sp.SpanID(), sp.ParentSpanID()
					s.name, s.kind = sp.Name(), sp.Kind()
					s.start, s.end = sp.StartTimestamp(), sp.EndTimestamp()
					s.status = sp.Status().Code()
					s.links = sp.Links().Len()
					s.present = 0
					sp.Attributes().Range(func(k string, v pcommon.Value) bool {
						if i := floorIndex(k); i >= 0 && s.present&(1<<i) == 0 {
							s.present |= 1 << i
							s.values[i] = v
							switch v.Type() {
							case pcommon.ValueTypeInt:
								s.sumInt += v.Int()
							case pcommon.ValueTypeStr:
								s.lastStr = v.Str()
								s.sumLen += len(s.lastStr)
							}
						}
						return true
					})
					evs := sp.Events()
					for e := range evs.Len() {
						ev := evs.At(e)
						if ev.Name() == "exception" {
							if v, ok := ev.Attributes().Get("exception.type"); ok {
								s.firstExceptionEventType = v.Str()
								s.exceptions++
							}
						}
					}
					f.sink += int64(s.start) ^ int64(s.end) + int64(s.spanID[0]) + int64(s.traceID[15]) + int64(len(s.name)+len(s.service)) + int64(s.kind) + int64(s.status) + int64(s.links)
				}
			}
		}
	}
	f.sink += s.sumInt + int64(s.sumLen)
}

func (f *floor) close(testing.TB) {}

// ---- the orphan processor -------------------------------------------------------------------

// orphanConfig is the README's pipeline configuration of the processor, with decision_wait 0
// (each batch carries whole traces: they are decided at once, so the benchmark measures work,
// not waiting).
func orphanConfig() *orphanprocessor.Config {
	cfg := orphanprocessor.NewFactory().CreateDefaultConfig().(*orphanprocessor.Config)
	cfg.DecisionWait = 0
	cfg.Prices = prices.Scenarios()
	return cfg
}

type orphan struct {
	p processor.Traces
}

// start starts c, created with err, on a no-op host; any error fails tb.
func start(tb testing.TB, c collectorcomponent.Component, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		tb.Fatal(err)
	}
}

func newOrphan(tb testing.TB, cfg *orphanprocessor.Config, next consumer.Traces) *orphan {
	f := orphanprocessor.NewFactory()
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), cfg, next)
	start(tb, p, err)
	return &orphan{p: p}
}

// consume feeds the batches from GOMAXPROCS goroutines at once (batch i to goroutine
// i mod GOMAXPROCS), as a collector's receivers call a processor from many goroutines: with
// -cpu 1,2 the benchmarks show what a second core adds.
func (o *orphan) consume(tb testing.TB, batches []ptrace.Traces) {
	n := runtime.GOMAXPROCS(0)
	if n == 1 {
		for _, td := range batches {
			if err := o.p.ConsumeTraces(context.Background(), td); err != nil {
				tb.Fatal(err)
			}
		}
		return
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			for i := g; i < len(batches); i += n {
				if err := o.p.ConsumeTraces(context.Background(), batches[i]); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		tb.Fatal(err)
	}
}

func (o *orphan) close(tb testing.TB) {
	if err := o.p.Shutdown(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

// ---- the orphanmetrics exporter -------------------------------------------------------------

// metrics runs the exporter's Recorder (what its ConsumeTraces calls) on annotated spans.
type metrics struct {
	r *orphanmetrics.Recorder
}

func newMetrics(tb testing.TB) *metrics {
	r, err := orphanmetrics.NewRecorder(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &metrics{r: r}
}

func (m *metrics) consume(_ testing.TB, batches []ptrace.Traces) {
	for _, td := range batches {
		m.r.Record(td)
	}
}

func (m *metrics) close(testing.TB) {}

// annotate runs the orphan processor over a copy of the batches and returns what it passed on:
// the same spans with their verdicts written.
func annotate(tb testing.TB, batches []ptrace.Traces) []ptrace.Traces {
	sink := new(consumertest.TracesSink)
	o := newOrphan(tb, orphanConfig(), sink)
	o.consume(tb, Clone(batches))
	o.close(tb)
	return sink.AllTraces()
}

// ---- counting sink for asynchronous components ----------------------------------------------

// countingSink counts the spans it receives and signals when a target is reached.
type countingSink struct {
	mu     sync.Mutex
	n      int64
	target int64
	done   chan struct{}
}

func (c *countingSink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (c *countingSink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += int64(td.SpanCount())
	if c.done != nil && c.n >= c.target {
		close(c.done)
		c.done = nil
	}
	return nil
}

// expect arms the sink for n more spans and returns a channel closed once they came.
func (c *countingSink) expect(n int64) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	c.target = c.n + n
	if c.n >= c.target {
		close(ch)
	} else {
		c.done = ch
	}
	return ch
}

// ---- contrib groupbytrace -------------------------------------------------------------------

type groupByTrace struct {
	p    processor.Traces
	sink *countingSink
}

func newGroupByTrace(tb testing.TB) *groupByTrace {
	f := groupbytraceprocessor.NewFactory()
	cfg := f.CreateDefaultConfig().(*groupbytraceprocessor.Config)
	// Each batch carries whole traces: release them almost at once so that the benchmark
	// measures work, not waiting.
	cfg.WaitDuration = time.Millisecond
	sink := &countingSink{}
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), cfg, sink)
	start(tb, p, err)
	return &groupByTrace{p: p, sink: sink}
}

func (g *groupByTrace) consume(tb testing.TB, batches []ptrace.Traces) {
	n := 0
	for _, td := range batches {
		n += td.SpanCount()
	}
	done := g.sink.expect(int64(n))
	for _, td := range batches {
		if err := g.p.ConsumeTraces(context.Background(), td); err != nil {
			tb.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Minute): // a failure, not a wait: minutes only on a machine shared by many builds
		tb.Fatal("groupbytrace did not release every span")
	}
}

func (g *groupByTrace) close(tb testing.TB) {
	if err := g.p.Shutdown(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

// ---- contrib spanmetrics --------------------------------------------------------------------

type spanMetricsConn struct {
	conn interface {
		ConsumeTraces(context.Context, ptrace.Traces) error
		Shutdown(context.Context) error
	}
}

func newSpanMetrics(tb testing.TB) *spanMetricsConn {
	f := spanmetricsconnector.NewFactory()
	cfg := f.CreateDefaultConfig()
	c, err := f.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(f.Type()), cfg, consumertest.NewNop())
	start(tb, c, err)
	return &spanMetricsConn{conn: c}
}

func (s *spanMetricsConn) consume(tb testing.TB, batches []ptrace.Traces) {
	for _, td := range batches {
		if err := s.conn.ConsumeTraces(context.Background(), td); err != nil {
			tb.Fatal(err)
		}
	}
}

func (s *spanMetricsConn) close(tb testing.TB) {
	if err := s.conn.Shutdown(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

// ---- the orphan processor on the production path --------------------------------------------

// heldConfig is orphanConfig with the default time model: a trace is held until
// decision_wait_after_root (2 s) after its root arrived, at most decision_wait (30 s).
func heldConfig() *orphanprocessor.Config {
	cfg := orphanConfig()
	def := orphanprocessor.NewFactory().CreateDefaultConfig().(*orphanprocessor.Config)
	cfg.DecisionWait, cfg.DecisionWaitAfterRoot = def.DecisionWait, def.DecisionWaitAfterRoot
	return cfg
}

// spreadInterval is the time between two batches of the spread mix: with 25 traces a mix
// batch, 250 traces a second, each arriving over spreadParts batches.
const spreadInterval = 100 * time.Millisecond

// heldOrphan is the orphan processor holding traces on the production path: the spread mix's
// batches (Spread) handed over spreadInterval apart on the processor's own clock
// (orphanprocessor.Replay), its release loop's work done where its timer would fire, and
// everything held or owed passed on at the end (Drain). Each pass is a fresh processor, so
// every pass meets the same clock and the same state.
type heldOrphan struct {
	start    time.Time     // when the first batch arrives: after every span of the mix ended
	interval time.Duration // between two batches
	// together: GOMAXPROCS batches in a row arrive at one moment (the first one's), taken in
	// from a goroutine each (Replay.ConsumeTogether), as a collector's receivers hand them
	// over; with -cpu 1, one at a time as before. Off where a trace's parts in batches in a row
	// must stay separate releases (BenchmarkKRelease).
	together bool
}

func newHeldOrphan(m *Mix) *heldOrphan {
	var last pcommon.Timestamp
	for _, td := range m.Batches {
		tdwalk.Spans(td, func(sp ptrace.Span) { last = max(last, sp.EndTimestamp()) })
	}
	return &heldOrphan{start: last.AsTime().Add(time.Second), interval: spreadInterval}
}

func (o *heldOrphan) consume(tb testing.TB, batches []ptrace.Traces) {
	o.run(tb, batches, consumertest.NewNop())
}

// run passes batches through a fresh replay into next.
func (o *heldOrphan) run(tb testing.TB, batches []ptrace.Traces, next consumer.Traces) {
	ctx := context.Background()
	f := orphanprocessor.NewFactory()
	r, err := orphanprocessor.NewReplay(processortest.NewNopSettings(f.Type()), heldConfig(), next)
	if err != nil {
		tb.Fatal(err)
	}
	n := 1
	if o.together {
		n = runtime.GOMAXPROCS(0)
	}
	for i := 0; i < len(batches); i += n {
		at := o.start.Add(time.Duration(i) * o.interval)
		var err error
		if n == 1 {
			err = r.ConsumeTraces(ctx, at, batches[i])
		} else {
			err = r.ConsumeTogether(ctx, at, batches[i:min(i+n, len(batches))])
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := r.Drain(ctx); err != nil {
		tb.Fatal(err)
	}
	if err := r.Shutdown(ctx); err != nil {
		tb.Fatal(err)
	}
}

func (o *heldOrphan) close(testing.TB) {}

// ---- the orphanmetrics exporter observing ---------------------------------------------------

// observeConfig is the exporter's shipped configuration (mode: observe, the default rules and
// time model: decision_wait 30 s, decision_wait_after_root 2 s) with the README's prices.
func observeConfig() *orphanmetrics.Settings {
	cfg := orphanmetrics.NewDefaultSettings()
	cfg.Prices = prices.Scenarios()
	return cfg
}

// observing is the orphanmetrics exporter in observe mode on the production path: what its
// ConsumeTraces calls (orphanmetrics.Observing.Consume) for each batch, then its tick
// (observe.Observer.Tick, every observe.TickInterval in the exporter) on a replayed clock, the
// batches spreadInterval apart (= TickInterval). With the default time model a trace's records
// wait decision_wait_after_root (2 s, 20 batches) after its root arrived, as in a collector, so
// the measurement includes keeping the records and deciding them from memory that left the
// caches, not only reading. After the last batch the clock moves past decision_wait and ticks
// once, then Shutdown counts what is still owed: every span of the pass is decided and counted
// inside the measurement. Each pass is a fresh Observing (its decision state) on the same clock;
// the Recorder (the series) is kept, as an exporter keeps it.
type observing struct {
	rec   *orphanmetrics.Recorder
	cfg   *orphanmetrics.Settings
	start time.Time // when the first batch arrives: after every span of the mix ended
	now   time.Time
}

func newObserving(tb testing.TB, m *Mix) *observing {
	cfg := observeConfig()
	rec, err := orphanmetrics.NewRecorder(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return &observing{rec: rec, cfg: cfg, start: newHeldOrphan(m).start}
}

func (o *observing) consume(tb testing.TB, batches []ptrace.Traces) {
	o.now = o.start
	obs, err := orphanmetrics.NewObserving(o.cfg, o.rec, zap.NewNop(), nil, func() time.Time { return o.now })
	if err != nil {
		tb.Fatal(err)
	}
	for i, td := range batches {
		o.now = o.start.Add(time.Duration(i) * spreadInterval)
		obs.Consume(td)
		obs.Observer().Tick()
	}
	o.now = o.now.Add(o.cfg.DecisionWait + time.Second)
	obs.Observer().Tick()
	obs.Shutdown()
	if obs.Observer().Owed() {
		tb.Fatal("observe: something is still owed after Shutdown")
	}
}

func (o *observing) close(testing.TB) {}
