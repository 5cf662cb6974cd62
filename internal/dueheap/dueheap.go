// Package dueheap is a min-heap of the moments things are due: the decision waits of the orphan
// processor's hold and of the observing exporter's waiting room. An entry stays when its thing
// is taken or made due at another moment; the owner skips such stale entries where it meets them.
package dueheap

import "time"

// Entry is V, due at Due.
type Entry[T any] struct {
	Due time.Time
	V   T
}

// Heap is a min-heap of entries by due time: h[0] is due first. The zero value is empty and
// ready to use. It orders entries as container/heap does (equal moments included), with no
// value boxed on the way. Not safe for concurrent use.
type Heap[T any] []Entry[T]

// Push adds v, due at due.
func (h *Heap[T]) Push(due time.Time, v T) {
	*h = append(*h, Entry[T]{Due: due, V: v})
	h.up(len(*h) - 1)
}

// Pop removes and returns the entry due first; the heap must not be empty.
func (h *Heap[T]) Pop() Entry[T] {
	q := *h
	n := len(q) - 1
	q[0], q[n] = q[n], q[0]
	h.down(0, n)
	e := q[n]
	q[n] = Entry[T]{} // drop the reference
	*h = q[:n]
	return e
}

func (h Heap[T]) up(j int) {
	for {
		i := (j - 1) / 2 // parent
		if i == j || !h[j].Due.Before(h[i].Due) {
			break
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

func (h Heap[T]) down(i, n int) {
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 { // j1 < 0 after int overflow
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && h[j2].Due.Before(h[j1].Due) {
			j = j2 // right child
		}
		if !h[j].Due.Before(h[i].Due) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}
