package orphanprocessor

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/spanread"
)

// orphanProcessor holds each trace's spans for Config.DecisionWait from the arrival of its
// first span, then asks the correlator for verdicts, writes them onto the spans and passes the
// spans on. No span is dropped: traces evicted to stay within the limits are decided early.
type orphanProcessor struct {
	logger *zap.Logger
	cfg    *Config
	next   consumer.Traces
	corr   *verdict.Correlator
	reader *spanread.Reader
	tel    *metadata.TelemetryBuilder
	clock  clock

	mu        sync.Mutex
	held      map[verdict.TraceID]*heldTrace
	perTrace  map[verdict.TraceID]int // spans of each trace in the batch being taken in
	queue     []*heldTrace            // in order of first arrival; decided entries are skipped
	spansHeld int

	evictMu                              sync.Mutex
	seenRootEv, seenKeyEv, seenIndexedEv uint64

	dropLog logLimiter

	stopOnce sync.Once
	stop     chan struct{}
	wake     chan struct{} // buffered 1: a trace arrived into an empty queue
	done     chan struct{}
	started  bool

	ks keySharing // key sharing across a tier (keysharing.go); zero when off
}

// heldTrace is one trace waiting for its decision: where its spans are in the batches that
// carried them. The correlator's view of each span (verdict.Span) is read when the trace is
// decided, not kept while it waits.
type heldTrace struct {
	id      verdict.TraceID
	first   time.Time
	refs    []heldSpan // in order of arrival
	decided bool
	late    bool
}

// heldSpan is one held span. Held spans stay where they arrived, in the batches the processor
// was given (and owns: MutatesData), until their trace is released.
type heldSpan struct {
	sp  ptrace.Span
	src *heldScope
}

// heldScope is a ScopeSpans of a batch that held spans came in, with its ResourceSpans.
type heldScope struct {
	rs ptrace.ResourceSpans
	ss ptrace.ScopeSpans
}

// spanBufs recycles the verdict.Span buffers that decide reads a trace into.
var spanBufs = sync.Pool{New: func() any { return new([]verdict.Span) }}

// verdictBufs recycles the buffers decide's verdicts are written into.
var verdictBufs = sync.Pool{New: func() any { return new([]verdict.Verdict) }}

func newOrphanProcessor(set processor.Settings, cfg *Config, next consumer.Traces) (*orphanProcessor, error) {
	corr, err := verdict.New(cfg.verdictConfig())
	if err != nil {
		return nil, err
	}
	p := &orphanProcessor{
		logger:   set.Logger,
		cfg:      cfg,
		next:     next,
		corr:     corr,
		reader:   spanread.New(cfg.readerOptions()),
		clock:    wallClock{},
		held:     map[verdict.TraceID]*heldTrace{},
		perTrace: map[verdict.TraceID]int{},
		stop:     make(chan struct{}),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	p.tel, err = metadata.NewTelemetryBuilder(set.TelemetrySettings, set.ID, func() (int64, int64) {
		r, k := corr.Held()
		return int64(r), int64(k)
	})
	if err != nil {
		return nil, err
	}
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
func (p *orphanProcessor) Start(ctx context.Context, _ component.Host) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return nil
	}
	if err := p.keyShareStart(ctx); err != nil { // key sharing (keysharing.go)
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
	ready := make([]*heldTrace, 0, len(p.held))
	for _, h := range p.queue {
		if !h.decided {
			ready = append(ready, p.takeLocked(h))
		}
	}
	p.queue = nil
	p.mu.Unlock()
	err := p.dropped(ctx, p.release(ctx, ready))
	err = errors.Join(err, p.keyShareShutdown(ctx)) // key sharing (keysharing.go)
	p.tel.Shutdown()
	return err
}

func (p *orphanProcessor) loop() {
	defer close(p.done)
	if p.cfg.DecisionWait == 0 {
		<-p.stop
		return
	}
	// The timer is armed for the moment the oldest held trace is due, so no span waits longer
	// than decision_wait (plus the time to decide), and stopped while nothing is held; an
	// arrival when nothing is held wakes the loop to arm it.
	t := p.clock.NewTimer(p.cfg.DecisionWait)
	t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
		case <-t.C():
			ctx := context.Background()
			_ = p.dropped(ctx, p.release(ctx, p.due(p.clock.Now())))
		}
		if d, ok := p.untilNextDue(); ok {
			t.Reset(d)
		} else {
			t.Stop()
		}
	}
}

// untilNextDue is the time until the oldest held trace is due; false when none is held.
func (p *orphanProcessor) untilNextDue() (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.queue {
		if !h.decided {
			return max(h.first.Add(p.cfg.DecisionWait).Sub(p.clock.Now()), 0), true
		}
	}
	return 0, false
}

// due takes the traces whose wait is over at now.
func (p *orphanProcessor) due(now time.Time) []*heldTrace {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ready []*heldTrace
	i := 0
	for ; i < len(p.queue); i++ {
		h := p.queue[i]
		if h.decided {
			continue
		}
		if now.Sub(h.first) < p.cfg.DecisionWait {
			break
		}
		ready = append(ready, p.takeLocked(h))
	}
	p.queue = p.queue[i:]
	return ready
}

// takeLocked removes a trace from the held state. p.mu must be held.
func (p *orphanProcessor) takeLocked(h *heldTrace) *heldTrace {
	h.decided = true
	delete(p.held, h.id)
	p.spansHeld -= len(h.refs)
	p.tel.ProcessorOrphanTracesHeld.Add(context.Background(), -1, p.tel.ID)
	p.tel.ProcessorOrphanSpansHeld.Add(context.Background(), int64(-len(h.refs)), p.tel.ID)
	return h
}

// ConsumeTraces groups the batch's spans by trace (they stay in the batch, which the processor
// now owns), holds each trace, and passes on the traces that are due now (all of them when
// decision_wait is 0; the oldest when a limit is reached).
func (p *orphanProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	var (
		rst         spanread.Stats
		passthrough ptrace.Traces
		hasPass     bool
		ready       []*heldTrace
		observed    []verdict.Span
		invalidIDs  int64
		late        int64
		newTraces   int64
		newSpans    int64
	)
	now := p.clock.Now()

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
	scopes := make([]heldScope, 0, nScopes)
	var lastH *heldTrace // the previous span's trace, for the next span of the same trace
	for ri := range rss.Len() {
		rs := rss.At(ri)
		sss := rs.ScopeSpans()
		for si := range sss.Len() {
			ss := sss.At(si)
			scopes = append(scopes, heldScope{rs, ss})
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
					if !hasPass {
						passthrough, hasPass = ptrace.NewTraces(), true
					}
					// liveness unknown marks it as seen, so the exporter does not count it
					// as a span nobody judged.
					moveSpan(passthrough, rs, ss, sp).Attributes().PutStr(verdict.AttrLiveness, verdict.LivenessUnknown.String())
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
					h = p.held[traceID]
				}
				if h == nil {
					if len(p.held) == 0 {
						select { // wake the loop: its timer is stopped while nothing is held
						case p.wake <- struct{}{}:
						default: // a wake is pending already
						}
					}
					h = &heldTrace{id: traceID, first: now}
					h.late = p.corr.Knows(traceID) && !parentID.IsZero()
					p.held[traceID] = h
					p.queue = append(p.queue, h)
					newTraces++
				}
				if len(h.refs) == cap(h.refs) {
					h.refs = slices.Grow(h.refs, max(p.perTrace[traceID], 1))
				}
				lastH = h
				h.refs = append(h.refs, heldSpan{sp, src})
				if h.late {
					late++
				}
				p.spansHeld++
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
	if newSpans > 0 {
		p.tel.ProcessorOrphanSpansHeld.Add(ctx, newSpans, p.tel.ID)
	}
	// Observe before any decision, under p.mu, so the loop cannot decide a trace that should
	// find this batch's roots or keys.
	p.corr.Observe(observed)
	for len(p.held) > p.cfg.Limits.MaxTraces {
		h := p.oldestLocked()
		if h == nil {
			break
		}
		p.tel.ProcessorOrphanEvictions.Add(ctx, 1, p.tel.With("state", "traces"))
		ready = append(ready, p.takeLocked(h))
	}
	if p.cfg.DecisionWait == 0 {
		for _, h := range p.queue {
			if !h.decided {
				ready = append(ready, p.takeLocked(h))
			}
		}
		p.queue = p.queue[:0]
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
	if hasPass {
		if err := p.next.ConsumeTraces(ctx, passthrough); err != nil {
			return err
		}
	}
	return p.release(ctx, ready)
}

// oldestLocked returns the held trace that arrived first.
func (p *orphanProcessor) oldestLocked() *heldTrace {
	for len(p.queue) > 0 {
		h := p.queue[0]
		if !h.decided {
			return h
		}
		p.queue = p.queue[1:]
	}
	return nil
}

// release decides the given traces, writes their verdicts and passes them on in one batch.
// A refusal by the next consumer is returned; where nobody can be told (the release loop,
// shutdown), the caller passes the error to dropped.
func (p *orphanProcessor) release(ctx context.Context, ready []*heldTrace) error {
	ready = p.keyShareHold(ready) // key sharing: traces waiting for a key record (keysharing.go)
	if len(ready) == 0 {
		return nil
	}
	now := p.clock.Now()
	n := 0
	// The spans leave grouped as they came: by the ScopeSpans they arrived in.
	type group struct {
		src   *heldScope
		spans []ptrace.Span
	}
	var groups []group
	index := map[*heldScope]int{}
	for _, h := range ready {
		p.decide(ctx, h)
		p.tel.ProcessorOrphanDecisionWait.Record(ctx, now.Sub(h.first).Seconds(), p.tel.ID)
		n += len(h.refs)
		for _, r := range h.refs {
			gi, ok := index[r.src]
			if !ok {
				gi = len(groups)
				index[r.src] = gi
				groups = append(groups, group{src: r.src})
			}
			groups[gi].spans = append(groups[gi].spans, r.sp)
		}
		h.refs = nil
	}
	out := ptrace.NewTraces()
	outRS := make(map[ptrace.ResourceSpans]ptrace.ResourceSpans, len(groups))
	for _, g := range groups {
		drs, ok := outRS[g.src.rs]
		if !ok {
			drs = out.ResourceSpans().AppendEmpty()
			g.src.rs.Resource().CopyTo(drs.Resource())
			drs.SetSchemaUrl(g.src.rs.SchemaUrl())
			outRS[g.src.rs] = drs
		}
		dss := drs.ScopeSpans().AppendEmpty()
		g.src.ss.Scope().CopyTo(dss.Scope())
		dss.SetSchemaUrl(g.src.ss.SchemaUrl())
		// Each span moves into the output and leaves an empty span in its batch.
		dst := dss.Spans()
		dst.EnsureCapacity(len(g.spans))
		for _, sp := range g.spans {
			sp.MoveTo(dst.AppendEmpty())
		}
	}
	p.tel.ProcessorOrphanSpansProcessed.Add(ctx, int64(n), p.tel.ID)
	p.countCorrelatorEvictions(ctx)
	if err := p.next.ConsumeTraces(ctx, out); err != nil {
		p.tel.ProcessorOrphanDownstreamErrors.Add(ctx, int64(n), p.tel.ID)
		return &refusedError{err: err, spans: n}
	}
	return nil
}

// refusedError is the next consumer's refusal of n decided spans.
type refusedError struct {
	err   error
	spans int
}

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// dropped counts, and logs at a bounded rate, the spans of a refused release that had nowhere
// to go back to: the release loop and shutdown have no caller to return the error to. It
// returns err.
func (p *orphanProcessor) dropped(ctx context.Context, err error) error {
	var re *refusedError
	if !errors.As(err, &re) {
		return err
	}
	reason := dropRefused
	if consumererror.IsPermanent(re.err) {
		reason = dropPermanent
	}
	p.tel.ProcessorOrphanSpansDropped.Add(ctx, int64(re.spans), p.tel.With("reason", reason))
	if n, ok := p.dropLog.allow(p.clock.Now(), re.spans); ok {
		p.logger.Warn("Next consumer refused decided spans; they are dropped",
			zap.Int("dropped_spans", n), zap.String("reason", reason), zap.Error(re.err),
			zap.Duration("log_interval", dropLogInterval))
	}
	return err
}

// Reasons of otelcol_processor_orphan_spans_dropped.
const (
	dropRefused   = "downstream_refused"         // a retryable refusal (memory_limiter, a full queue)
	dropPermanent = "downstream_permanent_error" // a permanent error: the data itself was rejected
)

// dropLogInterval bounds the warnings about dropped spans: one per interval, with the spans
// dropped since the previous one.
const dropLogInterval = 10 * time.Second

// logLimiter lets one log line through per dropLogInterval and counts what it held back.
type logLimiter struct {
	mu      sync.Mutex
	last    time.Time
	pending int
}

// allow adds n to the pending count; when a line may be logged at now it returns the count
// since the last line and true.
func (l *logLimiter) allow(now time.Time, n int) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending += n
	if !l.last.IsZero() && now.Sub(l.last) < dropLogInterval {
		return 0, false
	}
	n, l.pending, l.last = l.pending, 0, now
	return n, true
}

// decide asks the correlator for one trace's verdicts and writes them onto its spans.
func (p *orphanProcessor) decide(ctx context.Context, h *heldTrace) {
	buf := spanBufs.Get().(*[]verdict.Span)
	spans := slices.Grow((*buf)[:0], len(h.refs))[:len(h.refs)]
	var rst spanread.Stats
	var (
		src     *heldScope
		service string
	)
	for i, r := range h.refs {
		if r.src != src {
			src, service = r.src, spanread.Service(r.src.rs.Resource())
		}
		p.reader.ReadFor(service, r.sp, &spans[i], &rst)
	}
	p.countReaderStats(ctx, &rst)
	vbuf := verdictBufs.Get().(*[]verdict.Verdict)
	verdicts, st := p.corr.DecideInto(*vbuf, spans)
	clear(spans) // drop the strings it points into before the buffer is reused
	*buf = spans[:0]
	spanBufs.Put(buf)
	defer func() {
		clear(verdicts)
		*vbuf = verdicts[:0]
		verdictBufs.Put(vbuf)
	}()
	orphaned := int64(0)
	for i := range verdicts {
		writeVerdict(h.refs[i].sp.Attributes(), &verdicts[i])
		if verdicts[i].Liveness == verdict.LivenessOrphaned {
			orphaned++
		}
	}
	if orphaned > 0 {
		p.tel.ProcessorOrphanSpansOrphaned.Add(ctx, orphaned, p.tel.ID)
	}
	for r, n := range st.Invalid {
		if r != int(verdict.Valid) && n > 0 {
			p.tel.ProcessorOrphanSpansWithoutVerdict.Add(ctx, int64(n), p.tel.With("reason", verdict.Invalid(r).String()))
		}
	}
	if st.AmbiguousRoot > 0 {
		p.tel.ProcessorOrphanSpansWithoutVerdict.Add(ctx, int64(st.AmbiguousRoot), p.tel.With("reason", "ambiguous_root"))
	}
	if st.NoDuration > 0 {
		p.tel.ProcessorOrphanSpansWithoutVerdict.Add(ctx, int64(st.NoDuration), p.tel.With("reason", "no_duration"))
	}
	if st.RootMissing {
		p.tel.ProcessorOrphanTracesRootMissing.Add(ctx, 1, p.tel.ID)
		if n := len(h.refs) - st.InvalidTotal(); n > 0 { // malformed spans are counted by their own reason
			p.tel.ProcessorOrphanSpansWithoutVerdict.Add(ctx, int64(n), p.tel.With("reason", "root_missing"))
		}
	}
	if st.UnknownRootRuns > 0 {
		p.tel.ProcessorOrphanRunsUnknownRoot.Add(ctx, int64(st.UnknownRootRuns), p.tel.ID)
	}
}

func (p *orphanProcessor) countReaderStats(ctx context.Context, st *spanread.Stats) {
	for r := spanread.BadNone + 1; r < spanread.NumBadReasons; r++ {
		if n := st[r]; n > 0 {
			p.tel.ProcessorOrphanAttributesIgnored.Add(ctx, int64(n), p.tel.With("reason", r.String()))
		}
	}
}

// moveSpan moves sp to td, with a copy of its resource and scope. The processor owns the
// batches it is given (MutatesData), so spans need not be copied.
func moveSpan(td ptrace.Traces, rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, sp ptrace.Span) ptrace.Span {
	drs := td.ResourceSpans().AppendEmpty()
	rs.Resource().CopyTo(drs.Resource())
	drs.SetSchemaUrl(rs.SchemaUrl())
	dss := drs.ScopeSpans().AppendEmpty()
	ss.Scope().CopyTo(dss.Scope())
	dss.SetSchemaUrl(ss.SchemaUrl())
	moved := dss.Spans().AppendEmpty()
	sp.MoveTo(moved)
	return moved
}

// verdictAttrs is how many attributes writeVerdict writes for v.
func verdictAttrs(v *verdict.Verdict) int {
	n := 0
	switch v.Liveness {
	case verdict.LivenessLive:
		n += 2
	case verdict.LivenessOrphaned:
		n += 3
	case verdict.LivenessUnknown:
		n++
	}
	if v.Detached {
		n++
	}
	if v.Attempt > 0 {
		n++
	}
	if v.Outcome != verdict.OutcomeNone {
		n += 3
	}
	if v.EndReason != verdict.EndReasonNone {
		n++
	}
	if v.CallerService != "" {
		n++
	}
	if v.SpendRepeated {
		n++
	}
	if v.SpendNested {
		n++
	}
	if v.HasReach {
		n += 2
	}
	if v.Model != "" {
		n++
		if v.InputTokens >= 0 {
			n++
		}
		if v.OutputTokens >= 0 {
			n++
		}
		if v.HasCost {
			n++
		}
	}
	return n
}

// writeVerdict writes the verdict attributes of docs/verdicts.md; nothing for unknown values.
func writeVerdict(a pcommon.Map, v *verdict.Verdict) {
	// One allocation for the span's grown attributes, not one per attribute added.
	if n := verdictAttrs(v); n > 0 {
		a.EnsureCapacity(a.Len() + n)
	}
	if v.Liveness != verdict.LivenessNone {
		a.PutStr(verdict.AttrLiveness, v.Liveness.String())
	}
	if v.Liveness == verdict.LivenessLive || v.Liveness == verdict.LivenessOrphaned {
		a.PutBool(verdict.AttrStartedAfterGone, v.StartedAfterGone)
	}
	if v.Liveness == verdict.LivenessOrphaned {
		a.PutDouble(verdict.AttrAfterGone, v.AfterGone)
	}
	if v.Detached {
		a.PutBool(verdict.AttrDetached, true)
	}
	if v.Attempt > 0 {
		a.PutInt(verdict.AttrAttempt, int64(v.Attempt))
	}
	if v.Outcome != verdict.OutcomeNone {
		a.PutStr(verdict.AttrRunOutcome, v.Outcome.String())
		a.PutInt(verdict.AttrRunAttempts, int64(v.RunAttempts))
		if v.RunOK {
			a.PutStr(verdict.AttrRunResult, "ok")
		} else {
			a.PutStr(verdict.AttrRunResult, "error")
		}
	}
	if v.EndReason != verdict.EndReasonNone {
		a.PutStr(verdict.AttrRootEndReason, v.EndReason.String())
	}
	if v.CallerService != "" {
		a.PutStr(verdict.AttrCallerService, v.CallerService)
	}
	if v.SpendRepeated {
		a.PutBool(verdict.AttrSpendRepeated, true)
	}
	if v.SpendNested {
		a.PutBool(verdict.AttrSpendNested, true)
	}
	if v.HasReach {
		a.PutInt(verdict.AttrCancelReachHops, int64(v.ReachHops))
		a.PutInt(verdict.AttrOrphanedDepth, int64(v.OrphanedDepthHops))
	}
	if v.Model != "" {
		a.PutStr(verdict.AttrSpendModel, v.Model)
		if v.InputTokens >= 0 {
			a.PutInt(verdict.AttrSpendInput, v.InputTokens)
		}
		if v.OutputTokens >= 0 {
			a.PutInt(verdict.AttrSpendOutput, v.OutputTokens)
		}
		if v.HasCost {
			a.PutDouble(verdict.AttrSpendCost, v.Cost)
		}
	}
}

// countCorrelatorEvictions adds the root records and idempotency keys the correlator evicted
// since the last call to the evictions counter.
func (p *orphanProcessor) countCorrelatorEvictions(ctx context.Context) {
	roots, keys := p.corr.Evicted()
	indexed := p.corr.EvictedIndexed()
	p.evictMu.Lock()
	dr, dk, di := roots-p.seenRootEv, keys-p.seenKeyEv, indexed-p.seenIndexedEv
	p.seenRootEv, p.seenKeyEv, p.seenIndexedEv = roots, keys, indexed
	p.evictMu.Unlock()
	if di > 0 {
		p.tel.ProcessorOrphanEvictions.Add(ctx, int64(di), p.tel.With("state", "multi_root_spans"))
	}
	if dr > 0 {
		p.tel.ProcessorOrphanEvictions.Add(ctx, int64(dr), p.tel.With("state", "root_records"))
	}
	if dk > 0 {
		p.tel.ProcessorOrphanEvictions.Add(ctx, int64(dk), p.tel.With("state", "idempotency_keys"))
	}
}
