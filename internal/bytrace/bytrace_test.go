package bytrace

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// items returns each trace's items, traces in order of first item.
func items(t *testing.T, g *Groups[string]) map[verdict.TraceID][]string {
	out := map[verdict.TraceID][]string{}
	for gi := range g.Len() {
		gr := g.Group(gi)
		for i := g.First(gi); i >= 0; i = g.Next(i) {
			out[gr.ID] = append(out[gr.ID], *g.At(i))
		}
		assert.Len(t, out[gr.ID], gr.N)
	}
	return out
}

// TestGroupsKeepArrivalOrder: items interleaved across traces are grouped by trace, each in
// arrival order, the traces in order of their first item; Reset empties them.
func TestGroupsKeepArrivalOrder(t *testing.T) {
	a, b, c := verdict.TraceID{1}, verdict.TraceID{2}, verdict.TraceID{3}
	var g Groups[string]
	for _, x := range []struct {
		id verdict.TraceID
		v  string
	}{{b, "b1"}, {a, "a1"}, {a, "a2"}, {b, "b2"}, {c, "c1"}, {a, "a3"}} {
		g.Add(x.id, x.v)
	}
	assert.Equal(t, 3, g.Len())
	assert.Equal(t, 6, g.Items())
	assert.Equal(t, []verdict.TraceID{b, a, c}, []verdict.TraceID{g.Group(0).ID, g.Group(1).ID, g.Group(2).ID})
	assert.Equal(t, map[verdict.TraceID][]string{a: {"a1", "a2", "a3"}, b: {"b1", "b2"}, c: {"c1"}}, items(t, &g))
	assert.Equal(t, "b1", *g.At(0), "At(0) is the first item to arrive")
	g.Reset()
	assert.Zero(t, g.Len())
	assert.Zero(t, g.Items())
	g.Add(c, "c9")
	assert.Equal(t, map[verdict.TraceID][]string{c: {"c9"}}, items(t, &g))
}
