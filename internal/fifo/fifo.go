// Package fifo is a growable ring-buffer queue: the eviction order of orphanwatch's bounded
// tables (root records, idempotency keys, the root index, shared key records), oldest first.
package fifo

// Queue is a first-in first-out queue of T. The zero value is an empty queue ready to use; it
// grows as needed (doubling, from 64) and never shrinks. Not safe for concurrent use.
type Queue[T any] struct {
	buf        []T
	head, size int
}

// Push adds v at the back.
func (q *Queue[T]) Push(v T) {
	if q.size == len(q.buf) {
		nb := make([]T, max(len(q.buf)*2, 64))
		for i := 0; i < q.size; i++ {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = v
	q.size++
}

// Pop removes and returns the front value; ok is false when the queue is empty.
func (q *Queue[T]) Pop() (v T, ok bool) {
	if q.size == 0 {
		return v, false
	}
	v = q.buf[q.head]
	var zero T
	q.buf[q.head] = zero // drop the reference
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return v, true
}

// Len returns the number of values queued.
func (q *Queue[T]) Len() int { return q.size }

// Peek returns the front value without removing it; ok is false when the queue is empty.
func (q *Queue[T]) Peek() (v T, ok bool) {
	if q.size == 0 {
		return v, false
	}
	return q.buf[q.head], true
}
