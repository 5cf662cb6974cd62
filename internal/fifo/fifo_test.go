package fifo

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQueueKeepsOrderAcrossGrowthAndWrap(t *testing.T) {
	var q Queue[int]
	next, want := 0, 0
	for round := 0; round < 5; round++ {
		for i := 0; i < 100; i++ { // grows past 64, then wraps after pops
			q.Push(next)
			next++
		}
		for i := 0; i < 70; i++ {
			v, ok := q.Pop()
			assert.True(t, ok)
			assert.Equal(t, want, v)
			want++
		}
	}
	assert.Equal(t, next-want, q.Len())
	for q.Len() > 0 {
		v, _ := q.Pop()
		assert.Equal(t, want, v)
		want++
	}
	_, ok := q.Pop()
	assert.False(t, ok)
}
