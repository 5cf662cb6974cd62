// Package bytrace groups a batch's spans by trace as they are read: the observing exporter's
// batch and the orphan processor's intake. Each trace's items keep their order of arrival, the
// traces the order of their first item; once its memory has grown, grouping allocates nothing.
package bytrace

import "github.com/orphanwatch/orphanwatch/internal/verdict"

// Groups is a batch's items (T: what a caller keeps of a span) grouped by trace. The zero value
// is empty and ready to use. Not safe for concurrent use.
type Groups[T any] struct {
	groups []Group
	items  []item[T]
	index  map[verdict.TraceID]int32 // groups by trace ID
	last   int32                     // the previous item's group: a trace's spans mostly come one after another
}

// Group is a trace's items in the batch.
type Group struct {
	ID         verdict.TraceID
	N          int // how many items
	head, tail int32
}

type item[T any] struct {
	v    T
	next int32 // the next item of its trace; -1 for the last
}

// Add adds v, an item of trace id.
func (g *Groups[T]) Add(id verdict.TraceID, v T) {
	gi := g.last
	if len(g.groups) == 0 || g.groups[gi].ID != id {
		var ok bool
		if g.index == nil {
			g.index = map[verdict.TraceID]int32{}
		}
		if gi, ok = g.index[id]; !ok {
			gi = int32(len(g.groups))
			g.groups = append(g.groups, Group{ID: id, head: -1, tail: -1})
			g.index[id] = gi
		}
		g.last = gi
	}
	i := int32(len(g.items))
	g.items = append(g.items, item[T]{v: v, next: -1})
	gr := &g.groups[gi]
	if gr.tail < 0 {
		gr.head = i
	} else {
		g.items[gr.tail].next = i
	}
	gr.tail = i
	gr.N++
}

// Len returns the number of traces.
func (g *Groups[T]) Len() int { return len(g.groups) }

// Group returns the i-th trace's group (in order of first item).
func (g *Groups[T]) Group(i int) *Group { return &g.groups[i] }

// Items returns the number of items, of all traces.
func (g *Groups[T]) Items() int { return len(g.items) }

// First returns the index of the first item of the i-th trace: walk its items with Next, read
// them with At.
func (g *Groups[T]) First(i int) int32 { return g.groups[i].head }

// Next returns the index of the item of the same trace after item k; -1 after the last.
func (g *Groups[T]) Next(k int32) int32 { return g.items[k].next }

// At returns item k (an index from First or Next, or 0 to Items()-1 in order of arrival).
func (g *Groups[T]) At(k int32) *T { return &g.items[k].v }

// Reset empties g and clears what it held (a pool keeps nothing alive through it), keeping its
// memory but for a huge batch's table.
func (g *Groups[T]) Reset() {
	g.groups = g.groups[:0]
	if len(g.index) > 4096 {
		g.index = map[verdict.TraceID]int32{} // do not keep a huge batch's table
	} else {
		clear(g.index)
	}
	clear(g.items)
	g.items = g.items[:0]
	g.last = 0
}
