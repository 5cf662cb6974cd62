package verdict

import "sync"

// Recycling trace memos' records. Every release of a trace appends its spans' records to the
// trace's memo (memo.go), and the memos are forgotten oldest first within MaxContextSpans: in a
// steady stream the correlator allocates a memo's worth of records (a few hundred bytes a span)
// for every trace and drops as many. A memo's slices are therefore taken from, and given back
// to, one free list (Correlator.memoFree, under its own mutex, held only to push or pop a
// slice; one list for all shards, as a memo is mostly forgotten in another shard than the next
// one is made in): slices of 8 to 1,024 records by capacity class (memoClassSizes: a new slice
// is of its class's size, at most 7 records or a quarter larger than asked), at most memoFreeRecords
// records. Larger memos grow by half at least (as append does) and are left to the garbage
// collector. A forgotten memo's index (incremental.go) goes to the same list, emptied, at most
// memoFreeIndexes of them, and is taken by the next memo that builds one.

// memoClassSizes are the capacities of recycled memo slices, in records: steps of 8 to 64, then
// of a quarter at most, to 1,024.
var memoClassSizes = [...]int{8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024}

// memoClasses is the number of capacity classes of recycled memo slices.
const memoClasses = len(memoClassSizes)

// memoFreeRecords bounds the records kept on the free list, one for all shards (about 330 B
// each): some 1.3 MB at most beside the MaxContextSpans records in use.
const memoFreeRecords = 4096

// memoBufs are the slices of one trace memo, of one capacity.
type memoBufs struct {
	spans   []Span
	emitted []bool
	edged   []bool
}

// memoFree is the free list of memo slices.
type memoFree struct {
	mu      sync.Mutex // guards what follows; taken by growMemo and recycleMemo only
	lists   [memoClasses][]memoBufs
	records int // records held by lists (their capacity)
	// indexes are emptied memo indexes (incremental.go), at most memoFreeIndexes.
	indexes []*memoIndex
}

// takeIndex returns an emptied memo index from the list, nil when it has none.
func (f *memoFree) takeIndex() *memoIndex {
	if len(f.indexes) == 0 {
		return nil
	}
	ix := f.indexes[len(f.indexes)-1]
	f.indexes[len(f.indexes)-1] = nil
	f.indexes = f.indexes[:len(f.indexes)-1]
	return ix
}

// memoClass is the capacity class that holds n records, or -1 when n is above every class.
func memoClass(n int) int {
	for c, size := range memoClassSizes {
		if n <= size {
			return c
		}
	}
	return -1
}

// growMemo makes room in m's slices for n more records, from the free list when it must move
// them; the slices it leaves are given back. m's shard is locked.
func (c *Correlator) growMemo(m *traceMemo, n int) {
	need := len(m.spans) + n
	if need <= cap(m.spans) && need <= cap(m.emitted) && need <= cap(m.edged) {
		return
	}
	if memoClass(need) < 0 {
		// Above every class: grown by half at least, as append grows, so that a large trace
		// released in small parts is not copied whole at every release.
		need = max(need, cap(m.spans)+cap(m.spans)/2)
	}
	c.memoFree.mu.Lock()
	b := c.memoFree.take(need)
	c.memoFree.mu.Unlock()
	b.spans = append(b.spans, m.spans...)
	b.emitted = append(b.emitted, m.emitted...)
	b.edged = append(b.edged, m.edged...)
	c.recycle(memoBufs{spans: m.spans, emitted: m.emitted, edged: m.edged})
	m.spans, m.emitted, m.edged = b.spans, b.emitted, b.edged
}

// recycleMemo gives m's slices, and its index, back to the free list when m is forgotten.
// Nothing may use m's records afterwards.
func (c *Correlator) recycleMemo(m *traceMemo) {
	c.recycle(memoBufs{spans: m.spans, emitted: m.emitted, edged: m.edged})
	m.spans, m.emitted, m.edged = nil, nil, nil
	c.recycleIndex(m.ix) // its index (incremental.go) indexes those records: dropped with them
	m.ix = nil
}

// recycle gives b to the free list; its records are cleared (they point into spans' strings)
// outside the list's lock.
func (c *Correlator) recycle(b memoBufs) {
	if b.class() < 0 {
		return
	}
	clear(b.spans[:len(b.spans)])
	c.memoFree.mu.Lock()
	c.memoFree.give(b)
	c.memoFree.mu.Unlock()
}

// class is the capacity class b's slices are all exactly of, or -1 (not recyclable).
func (b memoBufs) class() int {
	size := cap(b.spans)
	c := memoClass(size)
	if c < 0 || size != memoClassSizes[c] || cap(b.emitted) != size || cap(b.edged) != size {
		return -1
	}
	return c
}

// take returns empty slices with room for n records: recycled ones of n's class, new ones of the
// class's capacity, or new ones of n when n is above every class.
func (f *memoFree) take(n int) memoBufs {
	c := memoClass(n)
	if c < 0 {
		return memoBufs{spans: make([]Span, 0, n), emitted: make([]bool, 0, n), edged: make([]bool, 0, n)}
	}
	if l := f.lists[c]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = memoBufs{}
		f.lists[c] = l[:len(l)-1]
		f.records -= cap(b.spans)
		return b
	}
	size := memoClassSizes[c]
	return memoBufs{spans: make([]Span, 0, size), emitted: make([]bool, 0, size), edged: make([]bool, 0, size)}
}

// give keeps b's slices, whose records are cleared, for reuse when they are of a class (the
// capacity of one) and the free list has room.
func (f *memoFree) give(b memoBufs) {
	c := b.class()
	size := cap(b.spans)
	if c < 0 || f.records+size > memoFreeRecords {
		return
	}
	f.lists[c] = append(f.lists[c], memoBufs{spans: b.spans[:0], emitted: b.emitted[:0], edged: b.edged[:0]})
	f.records += size
}
