package orphankeysextension

import (
	"sync"

	"github.com/orphanwatch/orphanwatch/internal/fifo"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// maxTracesPerKey bounds the requests (traces) remembered for one key, as the processor's own
// key index does; later requests with the same key are not kept until one is evicted.
const maxTracesPerKey = 4

// recordID is a record's identity in the table and on the topic: a key and a trace.
type recordID struct {
	h uint64
	t verdict.TraceID
}

// table holds the records read from the topic: per key hash, one root per trace, in order of
// arrival, at most max records in all (the oldest evicted first).
type table struct {
	mu      sync.RWMutex
	keys    map[uint64][]verdict.RootRef
	n       int
	order   fifo.Queue[recordID]
	max     int
	evicted int64
}

func newTable(maxRecords int) *table {
	return &table{keys: map[uint64][]verdict.RootRef{}, max: maxRecords}
}

// put stores a record, replacing the one of the same key and trace; it returns how many records
// were evicted to make room.
func (t *table) put(h uint64, ref verdict.RootRef) (evicted int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	refs := t.keys[h]
	for i := range refs {
		if refs[i].Trace == ref.Trace {
			refs[i] = ref
			return 0
		}
	}
	if len(refs) >= maxTracesPerKey {
		return 0
	}
	for t.n >= t.max {
		old, ok := t.order.Pop()
		if !ok {
			break
		}
		if t.remove(old) {
			evicted++
		}
	}
	t.keys[h] = append(t.keys[h], ref)
	t.n++
	t.order.Push(recordID{h, ref.Trace})
	t.evicted += int64(evicted)
	return evicted
}

func (t *table) remove(id recordID) bool {
	refs := t.keys[id.h]
	for i := range refs {
		if refs[i].Trace == id.t {
			refs = append(refs[:i], refs[i+1:]...)
			if len(refs) == 0 {
				delete(t.keys, id.h)
			} else {
				t.keys[id.h] = refs
			}
			t.n--
			return true
		}
	}
	return false
}

// lookup returns the record of key h for a trace in linked, else the first one kept.
func (t *table) lookup(h uint64, linked []verdict.TraceID) (verdict.RootRef, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	refs := t.keys[h]
	if len(refs) == 0 {
		return verdict.RootRef{}, false
	}
	for _, l := range linked {
		for i := range refs {
			if refs[i].Trace == l {
				return refs[i], true
			}
		}
	}
	return refs[0], true
}

// len is the number of records held.
func (t *table) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.n
}
