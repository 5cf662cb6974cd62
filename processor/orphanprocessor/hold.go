package orphanprocessor

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/dueheap"
	"github.com/orphanwatch/orphanwatch/internal/shard"
	"github.com/orphanwatch/orphanwatch/internal/spanread"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// The hold: the traces waiting for their decision, sharded by trace ID (holdShards: one
// holdStore and one mutex a shard), and the processor's side of it (due, setDueLocked, makeRoom:
// the release loop's wake-ups, max_traces and the held gauges).

// heldTrace is one trace waiting for its decision: where its spans are in the batches that
// carried them. The correlator's view of each span (verdict.Span) is read when the trace is
// decided, not kept while it waits.
type heldTrace struct {
	id      verdict.TraceID
	seq     uint64 // order of first arrival across the shards (max_traces evicts the lowest)
	first   time.Time
	due     time.Time  // when it is released: first + decision_wait, or root + decision_wait_after_root
	refs    []heldSpan // in order of arrival
	bytes   int64      // the encoded size of its spans (heldBatch.spanBytes each; limits.max_held_bytes)
	decided bool
	late    bool
	hasRoot bool
	last    bool // released at shutdown: decided with nothing left open
}

// holdStore is where traces wait for their decision: the held traces by trace ID, in order of
// first arrival (the oldest is evicted first at max_traces) and by due time (a heap: the release
// loop takes what is due), with the count of spans held. Entries of traces taken, or whose due
// moved, are skipped where they are met (lazily). Not safe for concurrent use: each of the
// processor's shards guards its own with the shard's mutex (holdShard).
type holdStore struct {
	held      map[verdict.TraceID]*heldTrace
	queue     []*heldTrace             // in order of first arrival; taken entries are skipped
	dues      dueheap.Heap[*heldTrace] // by due time; stale entries (taken, or due moved) are skipped
	spansHeld int
}

func newHoldStore() holdStore {
	return holdStore{held: map[verdict.TraceID]*heldTrace{}}
}

// lookup returns the held trace id; nil when it is not held.
func (s *holdStore) lookup(id verdict.TraceID) *heldTrace { return s.held[id] }

// add holds a new trace id whose first span arrived at first; it is due nowhere until setDue.
func (s *holdStore) add(id verdict.TraceID, first time.Time) *heldTrace {
	h := &heldTrace{id: id, first: first}
	s.held[id] = h
	s.queue = append(s.queue, h)
	return h
}

// hold adds a span to the held trace h; hint is how many spans of h the batch being taken in
// carries (h's spans grow once per batch).
func (s *holdStore) hold(h *heldTrace, r heldSpan, hint int) {
	h.add(r, hint)
	s.spansHeld++
}

// add adds a span to h's spans, which grow by hint (at least one) when full.
func (h *heldTrace) add(r heldSpan, hint int) {
	if len(h.refs) == cap(h.refs) {
		h.refs = slices.Grow(h.refs, max(hint, 1))
	}
	h.refs = append(h.refs, r)
}

// setDue makes h due at t when that is earlier than it was (or h was due nowhere); false when
// nothing changed.
func (s *holdStore) setDue(h *heldTrace, t time.Time) bool {
	if !h.due.IsZero() && !t.Before(h.due) {
		return false
	}
	h.due = t
	s.dues.Push(t, h)
	return true
}

// nextDue is the held trace due first; nil when none is held.
func (s *holdStore) nextDue() *heldTrace {
	for len(s.dues) > 0 {
		e := &s.dues[0]
		if !e.V.decided && e.Due.Equal(e.V.due) {
			return e.V
		}
		s.dues.Pop()
	}
	return nil
}

// take removes h from the store (marked decided) and returns it.
func (s *holdStore) take(h *heldTrace) *heldTrace {
	h.decided = true
	delete(s.held, h.id)
	s.spansHeld -= len(h.refs)
	return h
}

// takeDue takes, in due order, the traces due at or before now, appending them to ready.
func (s *holdStore) takeDue(now time.Time, ready []*heldTrace) []*heldTrace {
	for {
		h := s.nextDue()
		if h == nil || h.due.After(now) {
			break
		}
		s.dues.Pop()
		ready = append(ready, s.take(h))
	}
	for len(s.queue) > 0 && s.queue[0].decided {
		s.queue[0] = nil
		s.queue = s.queue[1:]
	}
	return ready
}

// oldest returns the held trace that arrived first; nil when none is held.
func (s *holdStore) oldest() *heldTrace {
	for len(s.queue) > 0 {
		h := s.queue[0]
		if !h.decided {
			return h
		}
		s.queue[0] = nil
		s.queue = s.queue[1:]
	}
	return nil
}

// takeAll takes every held trace, in order of first arrival, appending them to ready.
func (s *holdStore) takeAll(ready []*heldTrace) []*heldTrace {
	for _, h := range s.queue {
		if !h.decided {
			ready = append(ready, s.take(h))
		}
	}
	clear(s.queue)
	s.queue = s.queue[:0]
	clear(s.dues)
	s.dues = s.dues[:0]
	return ready
}

// heldSpan is one held span. Held spans stay where they arrived, in the batches the processor
// was given (and owns: MutatesData), until their trace is released.
type heldSpan struct {
	sp   ptrace.Span
	src  *heldScope
	hold bool // an abandoned root kept after its trace's release (heldRoot)
}

// heldScope is a ScopeSpans of a batch that held spans came in, with its ResourceSpans.
type heldScope struct {
	b   *heldBatch
	rs  ptrace.ResourceSpans
	ss  ptrace.ScopeSpans
	res spanread.Resource // what rs gives its spans' records, read at intake
}

// holdShard is one shard of the hold: the held traces whose ID hashes to it (shardOf), under its
// own mutex. The intake locks the shard of each trace of a batch in turn, the release loop each
// shard in turn to take what is due: no lock is held across shards.
type holdShard struct {
	mu sync.Mutex
	holdStore
	wakeDue time.Time // earliest due set since the last wake check (wakeFor)
	_       [64]byte  // keeps two shards' mutexes off one cache line
}

// holdShards is the hold: a fixed power of two of shards (shardCount), the count of traces
// held across them and the order of first arrival, so that max_traces is one global limit that
// evicts the oldest trace of all shards.
type holdShards struct {
	shards []holdShard
	bits   uint
	// traces counts the traces held in all shards plus the places reserved by intakes about to
	// add one (makeRoom): held traces never exceed max_traces while an older one can be evicted.
	traces  atomic.Int64
	seq     atomic.Uint64 // last arrival number given (heldTrace.seq)
	evictMu sync.Mutex    // one eviction for max_traces at a time (evictOldest)
	// armed is when the release loop's timer fires, unix ns; 0 when it is stopped.
	armed atomic.Int64
	// heldBytes is the encoded size of the spans held in all shards and of the held abandoned
	// roots (limits.max_held_bytes; 0 throughout when it is 0).
	heldBytes atomic.Int64
}

// shardCount is the number of hold shards: shard.Count, the count the correlator's memos use
// too, fixed at creation.
func shardCount() int { return shard.Count() }

// init makes n shards (a power of two).
func (s *holdShards) init(n int) {
	s.shards = make([]holdShard, n)
	s.bits = shard.Bits(n)
	for i := range s.shards {
		s.shards[i].holdStore = newHoldStore()
	}
}

// shardOf is the shard of trace id (shard.Of: the one shard function of trace IDs).
func (s *holdShards) shardOf(id verdict.TraceID) *holdShard {
	return &s.shards[shard.Of(id, s.bits)]
}

// heldCount is the number of traces and spans held in all shards at one moment (a test's view:
// it locks every shard, in order; nothing else holds two shard locks at once).
func (s *holdShards) heldCount() (traces, spans int) {
	for i := range s.shards {
		s.shards[i].mu.Lock()
	}
	for i := range s.shards {
		sh := &s.shards[i]
		traces += len(sh.held)
		spans += sh.spansHeld
		sh.mu.Unlock()
	}
	return traces, spans
}

// setDueLocked makes h, held in sh (locked), due at t (no later than it was); wakeFor then
// wakes the release loop once for the batch when a trace is due before the moment its timer is
// armed for.
func (p *orphanProcessor) setDueLocked(sh *holdShard, h *heldTrace, t time.Time) {
	if sh.setDue(h, t) && (sh.wakeDue.IsZero() || t.Before(sh.wakeDue)) {
		sh.wakeDue = t
	}
}

// wakeFor wakes the release loop if a trace taken into sh (locked) since the last call is due
// before its timer fires.
func (p *orphanProcessor) wakeFor(sh *holdShard) {
	if sh.wakeDue.IsZero() {
		return
	}
	if armed := p.armed.Load(); armed == 0 || sh.wakeDue.UnixNano() < armed {
		select {
		case p.wake <- struct{}{}:
		default: // a wake is pending already
		}
	}
	sh.wakeDue = time.Time{}
}

// take takes h out of sh (locked). The trace still counts in traces_held and spans_held until
// release has decided it and handed its spans on (leftHeld).
func (p *orphanProcessor) take(sh *holdShard, h *heldTrace) *heldTrace {
	p.traces.Add(-1)
	p.tookBytes(h)
	return sh.take(h)
}

// tookBytes takes the spans of the traces taken out of the shards out of heldBytes.
func (p *orphanProcessor) tookBytes(taken ...*heldTrace) {
	n := int64(0)
	for _, h := range taken {
		n += h.bytes
	}
	if n != 0 {
		p.heldBytes.Add(-n)
	}
}

// due takes the traces whose wait is over at now from every shard, in due order (then order of
// arrival), as one heap of all would give them.
func (p *orphanProcessor) due(now time.Time) []*heldTrace {
	var ready []*heldTrace
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		n := len(ready)
		ready = sh.takeDue(now, ready)
		p.traces.Add(int64(n - len(ready)))
		p.tookBytes(ready[n:]...)
		sh.mu.Unlock()
	}
	slices.SortFunc(ready, func(a, b *heldTrace) int {
		if c := a.due.Compare(b.due); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	return ready
}

// nextDue is the time the first held trace of all shards is due; zero when none is held.
func (p *orphanProcessor) nextDue() time.Time {
	var at time.Time
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		if h := sh.holdStore.nextDue(); h != nil && (at.IsZero() || h.due.Before(at)) {
			at = h.due
		}
		sh.mu.Unlock()
	}
	return at
}

// takeAll takes every held trace of all shards, in order of first arrival.
func (p *orphanProcessor) takeAll() []*heldTrace {
	var ready []*heldTrace
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		n := len(ready)
		ready = sh.holdStore.takeAll(ready)
		p.traces.Add(int64(n - len(ready)))
		p.tookBytes(ready[n:]...)
		sh.mu.Unlock()
	}
	slices.SortFunc(ready, func(a, b *heldTrace) int { return cmp.Compare(a.seq, b.seq) })
	return ready
}

// makeRoom reserves the place of a trace about to be added (no shard locked): when max_traces
// are held, the oldest traces of all shards are taken out first, appended to ready (decided
// early, counted as evictions). The caller adds the trace (addHeld, intake.go) or gives the place
// back (traces.Add(-1)).
func (p *orphanProcessor) makeRoom(ctx context.Context, ready []*heldTrace) []*heldTrace {
	if p.traces.Add(1) <= int64(p.cfg.Limits.MaxTraces) {
		return ready
	}
	for p.traces.Load() > int64(p.cfg.Limits.MaxTraces) {
		h := p.evictOldest()
		if h == nil {
			break // every place is reserved by an intake under way: bounded by them
		}
		p.tel.ProcessorOrphanEvictions.Add(ctx, 1, p.tel.With("state", "traces"))
		ready = append(ready, h)
	}
	return ready
}

// fitBytes decides the oldest held traces of all shards early (appended to ready, counted as
// evictions{state="bytes"}) while the spans held weigh more than limits.max_held_bytes: the
// processor gives up what it holds before the memory limiter in front of it has to refuse new
// spans (which are as likely to be the roots the held spans wait for).
func (p *orphanProcessor) fitBytes(ctx context.Context, ready []*heldTrace) []*heldTrace {
	limit := p.cfg.Limits.MaxHeldBytes
	if limit <= 0 {
		return ready
	}
	evicted := int64(0)
	for p.heldBytes.Load() > limit {
		h := p.evictOldest()
		if h == nil {
			break // what is left is held abandoned roots (bounded by max_traces) and intakes under way
		}
		evicted++
		ready = append(ready, h)
	}
	if evicted > 0 {
		p.tel.ProcessorOrphanEvictions.Add(ctx, evicted, p.tel.With("state", "bytes"))
	}
	return ready
}

// evictOldest takes out the held trace of all shards that arrived first; nil when none is held.
func (p *orphanProcessor) evictOldest() *heldTrace {
	p.evictMu.Lock()
	defer p.evictMu.Unlock()
	for {
		var (
			best    *holdShard
			bestSeq uint64
		)
		for i := range p.shards {
			sh := &p.shards[i]
			sh.mu.Lock()
			if h := sh.oldest(); h != nil && (best == nil || h.seq < bestSeq) {
				best, bestSeq = sh, h.seq
			}
			sh.mu.Unlock()
		}
		if best == nil {
			return nil
		}
		best.mu.Lock()
		if h := best.oldest(); h != nil && h.seq == bestSeq {
			h = p.take(best, h)
			best.mu.Unlock()
			return h
		}
		best.mu.Unlock() // taken meanwhile: look again
	}
}

// leftHeld takes traces that were taken (take) out of traces_held and spans_held, once
// decided and handed on: while they are being decided the processor still holds them, and the
// gauges must not tell a reader that nothing is held or owed while verdicts are being made
// (issue 19 item 9: "owes nothing" was read before the last verdicts were counted).
func (p *orphanProcessor) leftHeld(ctx context.Context, traces, spans int) {
	if traces == 0 {
		return
	}
	p.tel.ProcessorOrphanTracesHeld.Add(ctx, int64(-traces), p.tel.ID)
	p.tel.ProcessorOrphanSpansHeld.Add(ctx, int64(-spans), p.tel.ID)
}

// heldRefs is the number of spans the traces hold (held abandoned roots included: holdRoot
// counts them again while they wait).
func heldRefs(traces []*heldTrace) int {
	n := 0
	for _, h := range traces {
		n += len(h.refs)
	}
	return n
}
