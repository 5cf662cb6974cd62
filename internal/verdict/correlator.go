package verdict

import (
	"sync"

	"github.com/orphanwatch/orphanwatch/internal/bounded"
	"github.com/orphanwatch/orphanwatch/internal/fifo"
	"github.com/orphanwatch/orphanwatch/internal/shard"
	"github.com/orphanwatch/orphanwatch/internal/verdict/rules"
	"github.com/orphanwatch/orphanwatch/internal/verdict/state"
)

// Correlator decides verdicts and keeps the bounded cross-trace memory they need: root records
// (so late spans and traces bound by an idempotency key can be judged) and an index of
// idempotency-key hashes to the traces that carried them. It is safe for concurrent use.
type Correlator struct {
	cfg   Config
	rules *rules.Rules // the verdict rules (internal/verdict/rules), for cfg

	// tables are the cross-trace tables (root records, idempotency keys, the roots of traces
	// with several), under their one lock (internal/verdict/state).
	tables *state.Tables

	// The time model (memo.go). The trace memos are sharded by trace ID (memoShards: each
	// shard's mutex is held for a whole release of one of its traces); what binds traces or
	// bounds them all is under relMu, held briefly: open runs (for a decision's run step),
	// the memos' order and counts (the bounds evict the oldest of all shards), and what was
	// given up or closed outside a release, waiting for Sweep. Lock order: a memo shard, then
	// relMu or the tables' mu: a function that needs a shard locked takes a lockedShard (memo.go), and
	// TestLockOrder checks that no shard is locked with relMu or the tables' mu held.
	memoShards              []memoShard // shard.Count() of them, fixed at creation
	memoShardBits           uint        // log2 len(memoShards)
	relMu                   sync.Mutex
	evictMu                 sync.Mutex             // one eviction of memos at a time (evictOver)
	memoFree                memoFree               // recycled memo slices (memobufs.go), under its own mutex
	memoOrder               [2]fifo.Queue[TraceID] // settled, pending
	memoSpans, pendingSpans int
	open                    *bounded.Table[rules.RunID, *rules.OpenRun] // within MaxOpenRuns (openruns.go)
	swept                   []Carried
	sweptStats              Stats
	// noIncremental decides every release of a trace whole: the feature gate
	// orphanwatch.incrementalDecisions off when the correlator was made (gate.go); tests
	// compare the incremental path, incremental.go, with it.
	noIncremental bool

	evictedContext, evictedPending, evictedExpired uint64
}

// New returns a Correlator for cfg, or the error of cfg.Validate.
func New(cfg Config) (*Correlator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := rules.New(cfg)
	c := &Correlator{
		cfg:    cfg,
		rules:  r,
		tables: state.NewTables(cfg, r),
		// The incremental path, unless its feature gate is off (gate.go).
		noIncremental: !incrementalDecisions.IsEnabled(),
	}
	c.memoShards = make([]memoShard, shard.Count())
	c.memoShardBits = shard.Bits(len(c.memoShards))
	for i := range c.memoShards {
		c.memoShards[i].memos = make(map[TraceID]*traceMemo)
		c.memoShards[i].owingMemos = make(map[TraceID]*traceMemo)
	}
	// An open run evicted to stay within MaxOpenRuns is closed: its outcome, as decided when it
	// was left open, is carried by the next Sweep.
	c.open = bounded.New(cfg.MaxOpenRuns, func(_ rules.RunID, r *rules.OpenRun) { c.sweptRun(r) })
	return c, nil
}

// Config returns the correlator's configuration.
func (c *Correlator) Config() Config { return c.cfg }

// Observe records what arriving spans tell other traces: root records of root spans and the
// traces that carry each idempotency key. Call it when spans arrive, before Decide, so that
// traces decided in any order can find each other. Malformed spans are ignored here.
//
// Root records (and, with key sharing, the directory) are kept under the tables' mutex,
// then the keys in their shards (keyIndex): a decision running meanwhile sees a key of the
// batch with its root, or not yet.
func (c *Correlator) Observe(spans []Span) { c.ObserveAt(spans, 0) }

// ObserveAt is Observe for spans that arrive at now (unix ns, the caller's clock; 0: none): a
// root ending beyond now plus FutureTolerance is not usable (see rules.Validity). A root whose times
// are not sane (no start or end, an end before its start, longer than MaxRequestDuration, in
// the future) makes its trace known all the same, with no usable root: its spans are decided
// at once, judged without a root (liveness unknown, runs unknown_root), rather than waiting
// MaxRequestDuration for a root that has come already. It marks future spans in spans.
func (c *Correlator) ObserveAt(spans []Span, now int64) {
	c.rules.MarkFuture(spans, now)
	c.tables.Observe(spans)
}

// Held returns the number of root records and idempotency keys kept.
func (c *Correlator) Held() (roots, keys int) { return c.tables.Held() }

// HeldIndexed returns the number of spans indexed to their root in traces with several roots.
func (c *Correlator) HeldIndexed() int { return c.tables.HeldIndexed() }

// EvictedIndexed returns how many indexed spans of traces with several roots were evicted to
// stay within MaxIndexedSpans since the Correlator was made.
func (c *Correlator) EvictedIndexed() uint64 { return c.tables.EvictedIndexed() }

// Evicted returns how many root records and idempotency keys were evicted to stay within
// MaxRootRecords and MaxKeys since the Correlator was made.
func (c *Correlator) Evicted() (roots, keys uint64) { return c.tables.Evicted() }

// Knows reports whether a root record is kept for the trace, or its root came with times that
// are not sane (badRoots): either way no root is still to come.
func (c *Correlator) Knows(t TraceID) bool { return c.tables.Knows(t) }

// KnowsAll sets known[i] to whether a root record is kept for trace ids[i] (Knows for many
// traces, under one lock). known must be as long as ids.
func (c *Correlator) KnowsAll(ids []TraceID, known []bool) { c.tables.KnowsAll(ids, known) }

// SetKeyDirectory makes the Correlator publish keys to d and consult d when a key does not
// bind locally. Call it before the Correlator is used; nil turns key sharing off.
func (c *Correlator) SetKeyDirectory(d KeyDirectory) { c.tables.SetKeyDirectory(d) }

// KeyBinding tells where key hash h binds now: to a trace of this Correlator's own index whose
// root is known and not detached, through the directory, or nowhere.
func (c *Correlator) KeyBinding(h uint64) Binding { return c.tables.KeyBinding(h) }

// KeyBindingLinked is KeyBinding for a trace that links to the traces in linked: with links,
// only a binding to one of them counts (here, or a record of one of them through the
// directory); without, any binding does.
func (c *Correlator) KeyBindingLinked(h uint64, linked []TraceID) Binding {
	return c.tables.KeyBindingLinked(h, linked)
}
