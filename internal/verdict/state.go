package verdict

import (
	"sync"
)

// Correlator decides verdicts and keeps the bounded cross-trace memory they need: root records
// (so late spans and traces bound by an idempotency key can be judged) and an index of
// idempotency-key hashes to the traces that carried them. It is safe for concurrent use.
type Correlator struct {
	cfg   Config
	rules rules

	mu    sync.Mutex
	roots map[TraceID]rootRecord
	// rootOrder is a ring of trace IDs in insertion order, for FIFO eviction.
	rootOrder fifo[TraceID]
	keys      map[uint64]keyTraces
	keyOrder  fifo[uint64]

	evictedRoots, evictedKeys uint64

	dir *keyDir // key sharing across a tier (keydir.go); nil when off
}

// keyTraces holds up to four distinct traces that carried one idempotency key, in arrival order.
type keyTraces struct {
	traces [4]TraceID
	n      uint8
}

// New returns a Correlator for cfg, or the error of cfg.Validate.
func New(cfg Config) (*Correlator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Correlator{
		cfg:   cfg,
		rules: compileRules(cfg),
		roots: make(map[TraceID]rootRecord),
		keys:  make(map[uint64]keyTraces),
	}, nil
}

// Config returns the correlator's configuration.
func (c *Correlator) Config() Config { return c.cfg }

// Observe records what arriving spans tell other traces: root records of root spans and the
// traces that carry each idempotency key. Call it when spans arrive, before Decide, so that
// traces decided in any order can find each other. Malformed spans are ignored here.
func (c *Correlator) Observe(spans []Span) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range spans {
		s := &spans[i]
		if s.TraceID.IsZero() || s.SpanID.IsZero() {
			continue
		}
		if s.ParentID.IsZero() && s.Start > 0 && s.End >= s.Start {
			rec := c.rootRecordOf(s)
			if old, ok := c.roots[s.TraceID]; ok {
				// Two roots (or the same root twice): keep the earlier gone time.
				if rec.gone < old.gone {
					c.roots[s.TraceID] = rec
				}
			} else {
				c.putRootLocked(s.TraceID, rec)
			}
			c.keyDirRootLocked(s.TraceID) // keydir.go
		}
		if s.KeyHash != 0 {
			c.observeKeyLocked(s)
			c.keyDirKeyLocked(s) // keydir.go
		}
	}
}

func (c *Correlator) observeKeyLocked(s *Span) {
	kt, ok := c.keys[s.KeyHash]
	if !ok {
		for len(c.keys) >= c.cfg.MaxKeys {
			old, ok := c.keyOrder.pop()
			if !ok {
				break
			}
			delete(c.keys, old)
			c.evictedKeys++
		}
		c.keyOrder.push(s.KeyHash)
	}
	for i := uint8(0); i < kt.n; i++ {
		if kt.traces[i] == s.TraceID {
			return
		}
	}
	if int(kt.n) < len(kt.traces) {
		kt.traces[kt.n] = s.TraceID
		kt.n++
	}
	c.keys[s.KeyHash] = kt
}

func (c *Correlator) putRootLocked(t TraceID, rec rootRecord) {
	for len(c.roots) >= c.cfg.MaxRootRecords {
		old, ok := c.rootOrder.pop()
		if !ok {
			break
		}
		if _, present := c.roots[old]; present {
			delete(c.roots, old)
			c.evictedRoots++
		}
	}
	c.roots[t] = rec
	c.rootOrder.push(t)
}

// lookupKeyLocked finds the root an idempotency key binds to: the first trace that carried the
// key and whose root is known and is not itself detached work.
func (c *Correlator) lookupKeyLocked(h uint64) (rootRecord, bool) {
	kt := c.keys[h] // a key not seen here has n == 0 and falls through to the directory
	for i := uint8(0); i < kt.n; i++ {
		if rec, ok := c.roots[kt.traces[i]]; ok && !rec.detached {
			return rec, true
		}
	}
	return c.keyDirLookupLocked(h) // another member's record (keydir.go), if shared
}

// Held returns the number of root records and idempotency keys kept.
func (c *Correlator) Held() (roots, keys int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.roots), len(c.keys)
}

// Evicted returns how many root records and idempotency keys were evicted to stay within
// MaxRootRecords and MaxKeys since the Correlator was made.
func (c *Correlator) Evicted() (roots, keys uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evictedRoots, c.evictedKeys
}

// fifo is a growable ring buffer queue.
type fifo[T any] struct {
	buf        []T
	head, size int
}

func (q *fifo[T]) push(v T) {
	if q.size == len(q.buf) {
		n := len(q.buf) * 2
		if n == 0 {
			n = 64
		}
		nb := make([]T, n)
		for i := 0; i < q.size; i++ {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = v
	q.size++
}

func (q *fifo[T]) pop() (T, bool) {
	var zero T
	if q.size == 0 {
		return zero, false
	}
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return v, true
}
