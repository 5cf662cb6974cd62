package orphanprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

func tid(b byte) verdict.TraceID { return verdict.TraceID{b} }

func ids(hs []*heldTrace) []byte {
	var out []byte
	for _, h := range hs {
		out = append(out, h.id[0])
	}
	return out
}

// The hold store gives traces back in due order, a due moved earlier taking effect and a later
// one ignored, and counts the spans it holds.
func TestHoldStoreDueOrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := newHoldStore()
	a, b, c := s.add(tid(1), t0), s.add(tid(2), t0), s.add(tid(3), t0)
	require.True(t, s.setDue(a, t0.Add(30*time.Second)))
	require.True(t, s.setDue(b, t0.Add(20*time.Second)))
	require.True(t, s.setDue(c, t0.Add(10*time.Second)))
	assert.True(t, s.setDue(a, t0.Add(5*time.Second)), "an earlier due moves the trace up")
	assert.False(t, s.setDue(c, t0.Add(15*time.Second)), "a later due is ignored")
	s.hold(a, heldSpan{}, 2)
	s.hold(a, heldSpan{}, 2)
	s.hold(b, heldSpan{}, 1)
	assert.Equal(t, 3, s.spansHeld)
	assert.Same(t, a, s.nextDue())

	assert.Equal(t, []byte{1, 3}, ids(s.takeDue(t0.Add(12*time.Second), nil)), "due by 12 s: a (5 s), c (10 s)")
	assert.Equal(t, 1, s.spansHeld)
	assert.True(t, a.decided && c.decided && !b.decided)
	assert.Nil(t, s.lookup(tid(1)))
	assert.Same(t, b, s.lookup(tid(2)))
	assert.Same(t, b, s.nextDue(), "stale heap entries of a (30 s) are skipped")
	assert.Empty(t, s.takeDue(t0.Add(19*time.Second), nil))
	assert.Equal(t, []byte{2}, ids(s.takeDue(t0.Add(20*time.Second), nil)))
	assert.Nil(t, s.nextDue())
	assert.Equal(t, 0, s.spansHeld)
	assert.Empty(t, s.held)
}

// The oldest trace is the first to arrive that is still held; takeAll takes the rest in order
// of arrival and leaves the store empty.
func TestHoldStoreOldestAndTakeAll(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := newHoldStore()
	for i := byte(1); i <= 4; i++ {
		h := s.add(tid(i), t0.Add(time.Duration(i)*time.Second))
		s.setDue(h, t0.Add(time.Minute))
		s.hold(h, heldSpan{}, 1)
	}
	assert.Equal(t, byte(1), s.oldest().id[0])
	s.take(s.oldest())
	s.take(s.lookup(tid(3)))
	assert.Equal(t, byte(2), s.oldest().id[0])
	assert.Equal(t, []byte{2, 4}, ids(s.takeAll(nil)))
	assert.Nil(t, s.oldest())
	assert.Nil(t, s.nextDue())
	assert.Equal(t, 0, s.spansHeld)
	assert.Empty(t, s.held)
}

// Trace IDs that differ in one byte only, at either end (tests, legacy 64-bit IDs), spread over
// the shards; the shards' oldest trace of all is the one evicted first, whichever shard holds it.
func TestHoldShardsSpreadAndEvictOldest(t *testing.T) {
	p := &orphanProcessor{cfg: testConfig(time.Hour)}
	p.holdShards.init(8)
	used := map[*holdShard]bool{}
	for i := range 64 {
		used[p.shardOf(verdict.TraceID{byte(i)})] = true
		var low verdict.TraceID
		low[15] = byte(i)
		used[p.shardOf(low)] = true
	}
	assert.Len(t, used, 8, "every shard is used")

	t0 := time.Unix(1000, 0)
	for i := byte(1); i <= 20; i++ {
		sh := p.shardOf(tid(i))
		sh.mu.Lock()
		h := p.addHeld(sh, tid(i), t0, false, true)
		sh.hold(h, heldSpan{}, 1)
		sh.mu.Unlock()
		p.traces.Add(1)
	}
	for want := byte(1); want <= 3; want++ {
		h := p.evictOldest()
		require.NotNil(t, h)
		assert.Equal(t, want, h.id[0], "evicted in order of arrival across shards")
	}
	traces, spans := p.heldCount()
	assert.Equal(t, 17, traces)
	assert.Equal(t, 17, spans)
	assert.Equal(t, int64(17), p.traces.Load())
	rest := p.takeAll()
	require.Len(t, rest, 17)
	assert.Equal(t, byte(4), rest[0].id[0], "takeAll gives every shard's traces in order of arrival")
	assert.Equal(t, byte(20), rest[16].id[0])
	assert.Equal(t, int64(0), p.traces.Load())
}
