// Package bounded is the bounded table of orphanwatch's correlation state (root records,
// idempotency keys, the several-roots index, open runs, keys waiting for their root): a map
// that keeps its keys in insertion order, so that the oldest entries are evicted first when it
// is full, and counts what it evicted.
package bounded

import "github.com/orphanwatch/orphanwatch/internal/fifo"

// Table is a map from K to V bounded to Max entries (0: unbounded, the caller evicts with
// EvictOldest against a bound of its own). Put of a new key evicts the oldest entries until
// there is room; Put of a key present replaces its value and keeps its age; Delete forgets a
// key (its place in the order is skipped when reached). Each entry costs its map slot and one
// slot of the order ring; entries deleted leave their ring slot until it reaches the front or
// the ring is compacted (when it holds more than twice the live entries). The zero value is not
// usable: make one with New. Not safe for concurrent use.
type Table[K comparable, V any] struct {
	m       map[K]entry[V]
	order   fifo.Queue[aged[K]]
	max     int
	seq     uint64
	evicted uint64
	onEvict func(K, V)
}

type entry[V any] struct {
	v   V
	seq uint64
}

// aged is a key in insertion order; stale when its entry was deleted or put again since.
type aged[K any] struct {
	k   K
	seq uint64
}

// New returns a table of at most max entries (0: no bound of its own). onEvict, when set, is
// called with each entry evicted to make room (Put, EvictOldest), not with those deleted.
func New[K comparable, V any](max int, onEvict func(K, V)) *Table[K, V] {
	return &Table[K, V]{m: make(map[K]entry[V]), max: max, onEvict: onEvict}
}

// Get returns the value of k and whether k is present.
func (t *Table[K, V]) Get(k K) (V, bool) {
	e, ok := t.m[k]
	return e.v, ok
}

// Put sets the value of k. A new key is the youngest entry; when the table is full the oldest
// entries are evicted first (counted, onEvict called).
func (t *Table[K, V]) Put(k K, v V) {
	if e, ok := t.m[k]; ok {
		e.v = v
		t.m[k] = e
		return
	}
	if t.max > 0 {
		for len(t.m) >= t.max {
			if _, _, ok := t.EvictOldest(); !ok {
				break
			}
		}
	}
	t.seq++
	t.m[k] = entry[V]{v: v, seq: t.seq}
	t.order.Push(aged[K]{k, t.seq})
	if t.order.Len() > 2*len(t.m)+64 {
		t.compact()
	}
}

// Delete forgets k (not counted as an eviction).
func (t *Table[K, V]) Delete(k K) { delete(t.m, k) }

// EvictOldest evicts the oldest entry (counted, onEvict called) and returns it; false when the
// table is empty.
func (t *Table[K, V]) EvictOldest() (K, V, bool) {
	for {
		a, ok := t.order.Pop()
		if !ok {
			var k K
			var v V
			return k, v, false
		}
		e, ok := t.m[a.k]
		if !ok || e.seq != a.seq {
			continue // deleted (or deleted and put again: its newer place counts)
		}
		delete(t.m, a.k)
		t.evicted++
		if t.onEvict != nil {
			t.onEvict(a.k, e.v)
		}
		return a.k, e.v, true
	}
}

// Len returns the number of entries.
func (t *Table[K, V]) Len() int { return len(t.m) }

// Evicted returns how many entries were evicted since the table was made.
func (t *Table[K, V]) Evicted() uint64 { return t.evicted }

// All calls f for every entry, in no particular order, until f returns false. f may Delete the
// entry it is given.
func (t *Table[K, V]) All(f func(K, V) bool) {
	for k, e := range t.m {
		if !f(k, e.v) {
			return
		}
	}
}

// compact drops the stale slots of the order ring.
func (t *Table[K, V]) compact() {
	var q fifo.Queue[aged[K]]
	for {
		a, ok := t.order.Pop()
		if !ok {
			break
		}
		if e, ok := t.m[a.k]; ok && e.seq == a.seq {
			q.Push(a)
		}
	}
	t.order = q
}
