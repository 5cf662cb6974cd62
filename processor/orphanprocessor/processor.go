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

	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/spanread"
)

// The component's files: processor.go is its face (ConsumeTraces: taking spans in; Start,
// Shutdown and the release loop). hold.go is where a trace waits for its decision (holdStore:
// by ID, arrival and due time); release.go how decided spans leave (whole batches as they came,
// or span by span); verdicts.go where a released trace is decided (decide, via the correlator's
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
	lat    *verdictLatency // verdict latency per request (latency.go)
	// afterRoot is how long a trace is held after its root arrived: decision_wait_after_root,
	// at most decision_wait (resolved once).
	afterRoot time.Duration

	mu        sync.Mutex
	holdStore                         // the held traces (hold.go), under mu
	perTrace  map[verdict.TraceID]int // spans of each trace in the batch being taken in
	armed     time.Time               // when the release loop's timer fires; zero when stopped
	wakeDue   time.Time               // earliest due set since the last wakeLocked
	lastSweep time.Time

	evictMu                              sync.Mutex
	seenRootEv, seenKeyEv, seenIndexedEv uint64
	seenKept                             [4]uint64 // context, pending, expired, open runs

	dropLog logLimiter

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

	rootsMu   sync.Mutex
	roots     map[verdict.TraceID][]*heldRoot
	rootQueue []*heldRoot // by due time (all wait the same)
}

func newOrphanProcessor(set processor.Settings, cfg *Config, next consumer.Traces) (*orphanProcessor, error) {
	corr, err := verdict.New(cfg.verdictConfig())
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
		holdStore: newHoldStore(),
		afterRoot: min(cfg.DecisionWaitAfterRoot, cfg.DecisionWait),
		roots:     map[verdict.TraceID][]*heldRoot{},
		perTrace:  map[verdict.TraceID]int{},
		stop:      make(chan struct{}),
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	p.tel, err = newTelemetry(set, func() kept {
		p.sweepMu.Lock()
		defer p.sweepMu.Unlock()
		r, k := corr.Held()
		memo, pending, open := corr.Kept()
		return kept{Roots: int64(r), Keys: int64(k), Pending: int64(pending), OpenRuns: int64(open), Context: int64(memo - pending)}
	})
	if err != nil {
		return nil, err
	}
	horizon := max(cfg.RunTimeout, cfg.DecisionWait) + cfg.ClockSkewTolerance + 2*sweepInterval
	p.lat = newVerdictLatency(horizon, cfg.Limits.MaxTraces, func(s float64) {
		p.tel.ProcessorOrphanVerdictLatency.Record(context.Background(), s, p.tel.ID)
	})
	if err := p.keyShareNew(set); err != nil { // key sharing (keysharing.go)
		p.tel.Shutdown()
		return nil, err
	}
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
	p.mu.Lock()
	ready := p.takeAll(make([]*heldTrace, 0, len(p.held)))
	for _, h := range ready {
		h.last = true
	}
	p.mu.Unlock()
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
	p.lat.expire(time.Time{})                       // every request still tracked: nothing more comes
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
	if p.cfg.DecisionWait == 0 {
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
			p.lat.expire(now)
		}
		if d, ok := p.untilNextDue(); ok {
			t.Reset(d)
		} else if at, ok := p.lat.nextExpiry(); ok {
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
	p.lat.expire(now)
}

// untilNextDue is the time until the first held trace is due, or until the next sweep when
// the correlator keeps something; false when there is nothing to wait for. It records when
// the timer will fire.
func (p *orphanProcessor) untilNextDue() (time.Duration, bool) {
	_, pending, open := p.corr.Kept()
	rootDue := p.nextRootDue()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	at := rootDue
	if h := p.nextDue(); h != nil && (at.IsZero() || h.due.Before(at)) {
		at = h.due
	}
	if pending > 0 || open > 0 {
		if next := p.lastSweep.Add(sweepInterval); at.IsZero() || next.Before(at) {
			at = next
		}
	}
	if at.IsZero() {
		p.armed = time.Time{}
		return 0, false
	}
	p.armed = at
	return max(at.Sub(now), 0), true
}

// ConsumeTraces groups the batch's spans by trace (they stay in the batch, which the processor
// now owns), holds each trace, and passes on the traces that are due now (all of them when
// decision_wait is 0; the oldest when a limit is reached).
func (p *orphanProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	var (
		rst        spanread.Stats
		pass       []heldSpan // spans without a trace ID: they leave now, undecided
		ready      []*heldTrace
		invalidIDs int64
		late       int64
		newTraces  int64
		newSpans   int64
	)
	now := p.clock.Now()
	// What the batch tells other traces (roots, keys), read into a recycled buffer.
	obuf := spanBufs.Get().(*[]verdict.Span)
	observed := (*obuf)[:0]
	defer func() {
		clear(observed) // drop the strings it points into before the buffer is reused
		*obuf = observed[:0]
		spanBufs.Put(obuf)
	}()

	p.mu.Lock()
	rss := td.ResourceSpans()
	// Count each trace's spans first, so that its held spans grow once per batch, exactly.
	// A trace's spans mostly come one after another: count runs, one map update a run.
	clear(p.perTrace)
	var runID verdict.TraceID
	run, nScopes := 0, 0
	for ri := range rss.Len() {
		sss := rss.At(ri).ScopeSpans()
		nScopes += sss.Len()
		for si := range sss.Len() {
			spans := sss.At(si).Spans()
			for k := range spans.Len() {
				if id := verdict.TraceID(spans.At(k).TraceID()); id != runID || run == 0 {
					if run > 0 {
						p.perTrace[runID] += run
					}
					runID, run = id, 0
				}
				run++
			}
		}
	}
	if run > 0 {
		p.perTrace[runID] += run
	}
	b := &heldBatch{td: td}
	scopes := make([]heldScope, 0, nScopes)
	var lastH *heldTrace // the previous span's trace, for the next span of the same trace
	for ri := range rss.Len() {
		rs := rss.At(ri)
		sss := rs.ScopeSpans()
		for si := range sss.Len() {
			ss := sss.At(si)
			scopes = append(scopes, heldScope{b, rs, ss})
			src := &scopes[len(scopes)-1]
			spans := ss.Spans()
			for k := range spans.Len() {
				sp := spans.At(k)
				traceID := verdict.TraceID(sp.TraceID())
				if traceID.IsZero() {
					// Cannot be grouped with its trace: passed on at once, unchanged (but read,
					// so that its unusable attributes are counted).
					var vs verdict.Span
					p.reader.Read(rs.Resource(), sp, &vs, &rst)
					// liveness unknown marks it as seen, so the exporter does not count it
					// as a span nobody judged.
					sp.Attributes().PutStr(verdict.AttrLiveness, verdict.LivenessUnknown.String())
					pass = append(pass, heldSpan{sp: sp, src: src})
					invalidIDs++
					continue
				}
				parentID := verdict.SpanID(sp.ParentSpanID())
				// What this span tells other traces: a root's record, an idempotency key. The
				// rest of what the correlator reads is read when the trace is decided.
				switch {
				case parentID.IsZero():
					var vs verdict.Span
					var counted spanread.Stats // counted when the trace is decided
					p.reader.Read(rs.Resource(), sp, &vs, &counted)
					observed = append(observed, vs)
				default:
					if kh := p.reader.KeyHash(sp); kh != 0 {
						observed = append(observed, verdict.Span{TraceID: traceID, SpanID: verdict.SpanID(sp.SpanID()), ParentID: parentID, KeyHash: kh})
					}
				}
				h := lastH
				if h == nil || h.id != traceID || h.decided {
					h = p.lookup(traceID)
				}
				if h == nil {
					h = p.add(traceID, now)
					known := p.corr.Knows(traceID)
					h.late = known && !parentID.IsZero()
					newTraces++
					if known {
						// Its root came before: held the short wait after root.
						p.setDueLocked(h, now.Add(p.afterRoot))
					} else {
						p.setDueLocked(h, now.Add(p.cfg.DecisionWait))
					}
				}
				if parentID.IsZero() && !h.hasRoot {
					h.hasRoot = true
					p.lat.rootArrived(traceID, now)
					p.setDueLocked(h, now.Add(p.afterRoot))
				}
				lastH = h
				p.hold(h, heldSpan{sp: sp, src: src}, p.perTrace[traceID])
				if h.late {
					late++
				}
				newSpans++
				if len(h.refs) >= p.cfg.Limits.MaxSpansPerTrace && !h.decided {
					p.tel.ProcessorOrphanEvictions.Add(ctx, 1, p.tel.With("state", "spans_per_trace"))
					// The next spans of this batch start a new holding for the trace.
					ready = append(ready, p.takeLocked(h))
				}
			}
		}
	}
	if len(p.perTrace) > 4096 {
		p.perTrace = map[verdict.TraceID]int{} // do not keep a huge batch's table
	}
	// Held counts go up once a batch, before any of this batch's traces can be taken.
	if newTraces > 0 {
		p.tel.ProcessorOrphanTracesHeld.Add(ctx, newTraces, p.tel.ID)
	}
	b.left = int(newSpans) + len(pass) // before any release can see the batch (p.mu)
	if newSpans > 0 {
		p.tel.ProcessorOrphanSpansHeld.Add(ctx, newSpans, p.tel.ID)
	}
	// Observe before any decision, under p.mu, so the loop cannot decide a trace that should
	// find this batch's roots or keys.
	p.corr.Observe(observed)
	p.wakeLocked()
	for len(p.held) > p.cfg.Limits.MaxTraces {
		h := p.oldest()
		if h == nil {
			break
		}
		p.tel.ProcessorOrphanEvictions.Add(ctx, 1, p.tel.With("state", "traces"))
		ready = append(ready, p.takeLocked(h))
	}
	if p.cfg.DecisionWait == 0 {
		ready = p.takeAll(ready)
	}
	p.mu.Unlock()

	p.countReaderStats(ctx, &rst)
	if invalidIDs > 0 {
		p.tel.ProcessorOrphanSpansWithoutVerdict.Add(ctx, invalidIDs, p.tel.With("reason", verdict.InvalidTraceID.String()))
		p.tel.ProcessorOrphanSpansProcessed.Add(ctx, invalidIDs, p.tel.ID)
	}
	if late > 0 {
		p.tel.ProcessorOrphanSpansLate.Add(ctx, late, p.tel.ID)
	}
	return p.releaseWith(ctx, ready, pass)
}
