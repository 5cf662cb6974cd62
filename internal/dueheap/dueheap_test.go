package dueheap

import (
	"container/heap"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// ref is container/heap over the same entries: the order Heap keeps.
type ref []Entry[int]

func (r ref) Len() int           { return len(r) }
func (r ref) Less(i, j int) bool { return r[i].Due.Before(r[j].Due) }
func (r ref) Swap(i, j int)      { r[i], r[j] = r[j], r[i] }
func (r *ref) Push(x any)        { *r = append(*r, x.(Entry[int])) }
func (r *ref) Pop() any {
	old := *r
	e := old[len(old)-1]
	*r = old[:len(old)-1]
	return e
}

// TestHeapOrdersAsContainerHeap: any pushes and pops (many moments equal) give the entries in
// container/heap's order, values included.
func TestHeapOrdersAsContainerHeap(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	rapid.Check(t, func(rt *rapid.T) {
		var h Heap[int]
		var r ref
		for k := range rapid.IntRange(0, 200).Draw(rt, "ops") {
			if len(h) > 0 && rapid.Bool().Draw(rt, "pop") {
				require.Equal(rt, heap.Pop(&r), h.Pop(), "pop %d", k)
				continue
			}
			due := t0.Add(time.Duration(rapid.IntRange(0, 10).Draw(rt, "due")) * time.Second)
			h.Push(due, k)
			heap.Push(&r, Entry[int]{Due: due, V: k})
		}
		for len(h) > 0 {
			require.Equal(rt, heap.Pop(&r), h.Pop())
		}
		require.Zero(rt, r.Len())
	})
}
