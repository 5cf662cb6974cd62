package heldroots

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// TestTakeInOrderOfArrival: roots leave in the order they came, when due or n at a time, and a
// trace's roots can be updated until they leave.
func TestTakeInOrderOfArrival(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var h Held[int]
	a, b := verdict.TraceID{1}, verdict.TraceID{2}
	r := []int{0, 1, 2, 3}
	assert.Equal(t, 1, h.Add(a, t0.Add(1*time.Second), &r[0]))
	h.Add(b, t0.Add(2*time.Second), &r[1])
	h.Add(a, t0.Add(3*time.Second), &r[2])
	assert.Equal(t, 4, h.Add(b, t0.Add(4*time.Second), &r[3]))
	assert.Equal(t, t0.Add(time.Second), h.NextDue())

	assert.Empty(t, h.Take(t0, -1), "none due yet")
	assert.Empty(t, h.Take(t0.Add(time.Hour), 0))
	assert.Equal(t, []*int{&r[0], &r[1]}, h.Take(t0.Add(2*time.Second), -1))
	h.Update(a, func(x *int) { *x += 10 })
	assert.Equal(t, []int{0, 1, 12, 3}, r, "only trace a's root still held")
	assert.Equal(t, []*int{&r[2]}, h.Take(t0, 1), "the oldest, due or not")
	assert.Equal(t, 1, h.Len())
	assert.Equal(t, []*int{&r[3]}, h.Take(time.Time{}, -1), "every one with a zero now")
	assert.Zero(t, h.Len())
	assert.True(t, h.NextDue().IsZero())
	assert.Empty(t, h.byTrace)
}
