package orphanprocessor

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/badinput"
	"github.com/orphanwatch/orphanwatch/internal/heldroots"
	"github.com/orphanwatch/orphanwatch/internal/latency"
	"github.com/orphanwatch/orphanwatch/internal/rulesconfig"
	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// The component's files: processor.go is its face (ConsumeTraces: taking spans in; Start,
// Shutdown and the release loop). intake.go groups a batch's spans by trace; hold.go is where a
// trace waits for its decision (holdShards: the shard of its trace ID, each a holdStore by ID,
// arrival and due time under its own mutex); release.go how decided spans leave (whole batches as they came,
// or span by span, in calls of at most send_batch_max_size spans); verdicts.go where a released trace is decided (decide, via the correlator's
// Release) and its verdicts, carried verdicts and carrier spans are written (writeVerdict,
// writeCarried, passCarried); roots.go the abandoned roots held after their trace; telemetry.go
// the counters; keysharing.go the tier's shared keys; replay.go the processor on a recording's
// own clock; clock.go where time comes from.

// orphanProcessor holds each trace's spans until Config.DecisionWaitAfterRoot after its root
// span arrived (at most Config.DecisionWait after its first span), then asks the correlator for
// verdicts, writes them onto the spans and passes the spans on; spans that arrive later are
// held DecisionWaitAfterRoot from their arrival. Spans that leave before their root arrived
// are marked deferred; their verdicts are carried later, as events, by a span of their trace
// (docs/verdicts.md "When verdicts are decided"). No span is dropped: traces evicted to stay
// within the limits are decided early.
type orphanProcessor struct {
	logger *zap.Logger
	cfg    *Config
	next   consumer.Traces
	corr   *verdict.Correlator
	reader *spanread.Reader
	tel    *telemetry
	clock  clock
	lat    *latency.Tracker // verdict latency per request (latency.go)
	// afterRoot is how long a trace is held after its root arrived: decision_wait_after_root,
	// at most decision_wait (resolved once).
	afterRoot time.Duration
	// rootHold is how long after its arrival an abandoned root is held: abandoned_root_hold,
	// or decision_wait when it is not set (resolved once); 0 holds none.
	rootHold time.Duration
	// atOnce is decide_each_batch (or its deprecated spelling decision_wait: 0), resolved once:
	// each batch is decided whole as it arrives, in the calling goroutine (holdBatch, not the
	// hold shards); no release loop, nothing deferred or kept open, every decision final
	// (docs/verdicts.md "When a run is over").
	atOnce bool

	// mu guards the lifecycle (started) and lastSweep: the release loop's, not the span path's.
	mu        sync.Mutex
	lastSweep time.Time

	holdShards // the held traces, sharded by trace ID, each shard under its own mutex (hold.go)

	evictMu                              sync.Mutex
	seenRootEv, seenKeyEv, seenIndexedEv uint64
	seenKept                             [4]uint64 // context, pending, expired, open runs

	dropLog logLimiter
	// badSpans and badAttrs log bad input sampled (telemetry.go): a line per reason per
	// badinput.DefaultInterval at most.
	badSpans, badAttrs *badinput.Log

	// sweepMu is held by a sweep from taking verdicts out of the correlator until they are
	// handed on (carrier_spans counted, the next consumer returned), and by the telemetry
	// callback: pending_spans and open_runs never read 0 while a verdict they counted is still
	// on its way out of the processor (issue 19 item 9).
	sweepMu sync.Mutex

	stopOnce sync.Once
	stop     chan struct{}
	wake     chan struct{} // buffered 1: a trace arrived into an empty queue
	done     chan struct{}
	started  bool

	ks keySharing // key sharing across a tier (keysharing.go); zero when off

	roots heldroots.Held[heldRoot] // abandoned roots held after their trace's release (roots.go)
}

func newOrphanProcessor(set processor.Settings, cfg *Config, next consumer.Traces) (*orphanProcessor, error) {
	vc := cfg.verdictConfig()
	vc.PrefixPriced = rulesconfig.PrefixPricedLogger(set.Logger)
	corr, err := verdict.New(vc)
	if err != nil {
		return nil, err
	}
	p := &orphanProcessor{
		logger:    set.Logger,
		cfg:       cfg,
		next:      next,
		corr:      corr,
		reader:    spanread.New(cfg.readerOptions()),
		clock:     wallClock{},
		afterRoot: cfg.AfterRoot(),
		rootHold:  cfg.EffectiveAbandonedRootHold(),
		atOnce:    cfg.DecidesEachBatch(),
		stop:      make(chan struct{}),
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	if cfg.DecisionWait == 0 && !cfg.DecideEachBatch {
		set.Logger.Warn("decision_wait: 0 is deprecated: it decides each batch whole as it arrives; write decide_each_batch: true instead")
	}
	p.holdShards.init(shardCount())
	now := func() time.Time { return p.clock.Now() }
	p.badSpans = badinput.New(set.Logger, "Malformed spans got no verdict (counted; one line per reason per interval)",
		"otelcol_processor_orphan_spans_without_verdict", "spans", 0, now)
	p.badAttrs = badinput.New(set.Logger, "Unusable span attribute values were ignored (counted; one line per reason per interval)",
		"otelcol_processor_orphan_attributes_ignored", "values", 0, now)
	p.tel, err = newTelemetry(set, func() kept {
		p.sweepMu.Lock()
		defer p.sweepMu.Unlock()
		r, k := corr.Held()
		memo, pending, open := corr.Kept()
		return kept{Roots: int64(r), Keys: int64(k), Pending: int64(pending), OpenRuns: int64(open), Context: int64(memo - pending), HeldBytes: p.heldBytes.Load()}
	})
	if err != nil {
		return nil, err
	}
	// A run stays open up to run_timeout after its last attempt ended, plus decision_wait and
	// the clock-skew tolerance (verdict's runOverAt); an abandoned root is held
	// abandoned_root_hold, a span whose chain is incomplete waits chain_wait (LongestWait).
	horizon := cfg.RunTimeout + cfg.LongestWait() + cfg.ClockSkewTolerance + 2*sweepInterval
	p.lat = latency.New(horizon, cfg.Limits.MaxTraces, func(s float64) {
		p.tel.ProcessorOrphanVerdictLatency.Record(context.Background(), s, p.tel.ID)
	})
	return p, nil
}

// Capabilities: the processor writes attributes onto the spans it passes on.
func (p *orphanProcessor) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

// Start launches the loop that releases traces whose wait is over.
func (p *orphanProcessor) Start(ctx context.Context, host component.Host) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return nil
	}
	if err := p.keyShareStart(ctx, host); err != nil { // key sharing (keysharing.go)
		return err
	}
	p.started = true
	go p.loop()
	return nil
}

// Shutdown stops the loop and decides and passes on every held trace, so no span is lost.
func (p *orphanProcessor) Shutdown(ctx context.Context) error {
	p.stopOnce.Do(func() { close(p.stop) })
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if started {
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.keyShareClose() // key sharing: traces waiting for a key record are decided now (keysharing.go)
	ready := p.takeAll()
	for _, h := range ready {
		h.last = true
	}
	// In the order their spans ended, as they would have been released: a message's
	// deliveries in several traces are numbered as they happened.
	slices.SortStableFunc(ready, func(a, b *heldTrace) int { return cmp.Compare(firstEnd(a), firstEnd(b)) })
	err := p.dropped(ctx, p.release(ctx, ready))
	err = errors.Join(err, p.dropped(ctx, p.releaseRoots(ctx, p.dueRoots(time.Time{}, -1))))
	// What still waits for a root or a further attempt is given up now: carried on carrier
	// spans, so that every verdict is counted once.
	carried, st := p.corr.Finish(p.clock.Now().UnixNano())
	err = errors.Join(err, p.dropped(ctx, p.passCarried(ctx, carried, st, p.clock.Now())))
	err = errors.Join(err, p.keyShareShutdown(ctx)) // key sharing (keysharing.go)
	p.lat.Expire(time.Time{})                       // every request still tracked: nothing more comes
	p.tel.Shutdown()
	return err
}

// firstEnd is the earliest end time of a held trace's spans.
func firstEnd(h *heldTrace) pcommon.Timestamp {
	var m pcommon.Timestamp
	for i, r := range h.refs {
		if e := r.sp.EndTimestamp(); i == 0 || e < m {
			m = e
		}
	}
	return m
}

func (p *orphanProcessor) loop() {
	defer close(p.done)
	if p.atOnce {
		<-p.stop
		return
	}
	// The timer is armed for the moment the first held trace is due, so no span waits longer
	// than its wait (plus the time to decide), or for the next sweep of what the correlator
	// keeps (sweepInterval); stopped while nothing is held or kept. An arrival that is due
	// before the timer fires wakes the loop to arm it again.
	t := p.clock.NewTimer(p.cfg.DecisionWait)
	t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
		case <-t.C():
			ctx := context.Background()
			now := p.clock.Now()
			_ = p.dropped(ctx, p.release(ctx, p.due(now)))
			_ = p.dropped(ctx, p.releaseRoots(ctx, p.dueRoots(now, -1)))
			p.sweep(ctx, now)
			p.lat.Expire(now)
		}
		if d, ok := p.untilNextDue(); ok {
			t.Reset(d)
		} else if at, ok := p.lat.NextExpiry(); ok {
			// Nothing held or owed: wake once more when a request's verdict latency is due.
			t.Reset(max(at.Sub(p.clock.Now()), 0))
		} else {
			t.Stop()
		}
	}
}

// sweepInterval is how often the correlator's memory is swept for verdicts whose root never
// came (max_request_duration) and runs that no attempt can join any more (run_timeout).
const sweepInterval = time.Second

// sweep passes on, on carrier spans, what the correlator gave up or closed since the last
// sweep, at most once per sweepInterval.
func (p *orphanProcessor) sweep(ctx context.Context, now time.Time) {
	p.mu.Lock()
	if now.Sub(p.lastSweep) < sweepInterval {
		p.mu.Unlock()
		return
	}
	p.lastSweep = now
	p.mu.Unlock()
	p.sweepMu.Lock()
	defer p.sweepMu.Unlock()
	carried, st := p.corr.Sweep(now.UnixNano())
	_ = p.dropped(ctx, p.passCarried(ctx, carried, st, now))
	p.lat.Expire(now)
}

// untilNextDue is the time until the first held trace is due, or until the next sweep when
// the correlator keeps something; false when there is nothing to wait for. It records when
// the timer will fire.
func (p *orphanProcessor) untilNextDue() (time.Duration, bool) {
	// Stopped while the shards are read: an intake that sets a due meanwhile wakes the loop,
	// which reads them again (wakeFor).
	p.armed.Store(0)
	_, pending, open := p.corr.Kept()
	at := p.nextRootDue()
	if d := p.nextDue(); !d.IsZero() && (at.IsZero() || d.Before(at)) {
		at = d
	}
	p.mu.Lock()
	lastSweep := p.lastSweep
	p.mu.Unlock()
	if pending > 0 || open > 0 {
		if next := lastSweep.Add(sweepInterval); at.IsZero() || next.Before(at) {
			at = next
		}
	}
	if at.IsZero() {
		return 0, false
	}
	p.armed.Store(max(at.UnixNano(), 1))
	return max(at.Sub(p.clock.Now()), 0), true
}

// ConsumeTraces groups the batch's spans by trace (they stay in the batch, which the processor
// now owns), holds each trace in its shard, and passes on the traces that are due now (all of
// them with decide_each_batch; the oldest when a limit is reached). No lock is held across the
// batch: the spans are grouped with none (intake.go), each trace's shard is locked while its
// spans join the trace, and the correlator's shared tables once for the batch's roots and keys.
func (p *orphanProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	in := intakePool.Get().(*intake)
	defer in.recycle()
	now := p.clock.Now()
	b := in.group(p.reader, td)
	if p.cfg.Limits.MaxHeldBytes > 0 && !p.atOnce && in.traces.Items() > 0 {
		// What the batch's spans weigh, shared evenly among them (limits.max_held_bytes): one
		// pass of pdata's own size computation over the batch, no copy.
		b.spanBytes = max(int64((&ptrace.ProtoMarshaler{}).TracesSize(td))/int64(in.traces.Items()+len(in.pass)), 1)
	}
	// Every span of the batch that will leave counts before any release can see the batch.
	b.left = in.traces.Items() + len(in.pass)
	// Whether each trace's root was known before this batch (its spans are then late), then
	// what the batch tells other traces (roots, keys): observed before any of its spans is held,
	// so that no decision meets a span of the batch without what the batch tells.
	in.known = grownBools(in.known, in.traces.Len())
	in.ids = in.ids[:0]
	for i := range in.traces.Len() {
		in.ids = append(in.ids, in.traces.Group(i).ID)
	}
	p.corr.KnowsAll(in.ids, in.known)
	if len(in.observed) > 0 {
		p.corr.ObserveAt(in.observed, now.UnixNano())
	}
	var ready []*heldTrace
	var late int64
	if n := in.traces.Items(); n > 0 {
		p.tel.ProcessorOrphanSpansHeld.Add(ctx, int64(n), p.tel.ID)
	}
	if p.atOnce {
		ready, late = p.holdBatch(ctx, in, now)
	} else {
		ready, late = p.holdInShards(ctx, in, now)
	}

	p.countReaderStats(ctx, &in.rst)
	if invalid := int64(len(in.pass)); invalid > 0 {
		p.withoutVerdict(ctx, verdict.InvalidTraceID.String(), invalid)
		p.tel.ProcessorOrphanSpansProcessed.Add(ctx, invalid, p.tel.ID)
	}
	if late > 0 {
		p.tel.ProcessorOrphanSpansLate.Add(ctx, late, p.tel.ID)
	}
	return p.releaseWith(ctx, ready, in.pass)
}
