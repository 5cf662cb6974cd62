package badinput

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestOneLinePerReasonPerInterval: the first occurrence of a reason is logged at once; the
// ones within the interval after it come with the next line, whatever the goroutines; reasons
// are sampled apart; nothing is lost from the counts.
func TestOneLinePerReasonPerInterval(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	l := New(zap.New(core), "bad", "some_counter", "spans", 0, clock)

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				l.Add("a", 1)
			}
		})
	}
	wg.Wait()
	l.Add("b", 5)
	require.Equal(t, 2, logs.Len(), "one line for a, one for b")
	// The first line counts what was pending when it was written: the first occurrence, and
	// those other goroutines added between it and the line (at least 1, at most all 800).
	first := logs.All()[0].ContextMap()["spans"].(int64)
	assert.True(t, first >= 1 && first <= 800, "first line counts %d", first)
	assert.Equal(t, "a", logs.All()[0].ContextMap()["reason"])
	assert.Equal(t, "some_counter", logs.All()[0].ContextMap()["counter"])
	assert.Equal(t, int64(5), logs.All()[1].ContextMap()["spans"])

	mu.Lock()
	now = now.Add(DefaultInterval - 1)
	mu.Unlock()
	l.Add("a", 1)
	require.Equal(t, 2, logs.Len(), "still within the interval")
	mu.Lock()
	now = now.Add(1)
	mu.Unlock()
	l.Add("a", 1)
	require.Equal(t, 3, logs.Len())
	assert.Equal(t, 800-first+2, logs.All()[2].ContextMap()["spans"], "every occurrence since the last line")

	var nilLog *Log
	nilLog.Add("a", 1) // no logger: nothing, no panic
	New(nil, "bad", "c", "spans", 0, nil).Add("a", 1)
	assert.Equal(t, 3, logs.Len())
}
