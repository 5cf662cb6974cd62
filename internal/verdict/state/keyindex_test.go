package state

import (
	"sync"
	"testing"

	"github.com/orphanwatch/orphanwatch/internal/verdict/record"
)

// TestKeyIndexObserve: a key keeps the first four distinct traces that carried it, once each.
func TestKeyIndexObserve(t *testing.T) {
	x := newKeyIndex(100)
	for _, tr := range []byte{1, 2, 1, 3, 4, 5, 2} {
		x.observe(42, record.TraceID{tr})
	}
	kt, ok := x.get(42)
	if !ok || kt.n != 4 || kt.traces != [4]record.TraceID{{1}, {2}, {3}, {4}} {
		t.Fatalf("key 42: %+v %v, want traces 1, 2, 3, 4", kt, ok)
	}
	if _, ok := x.get(43); ok {
		t.Fatal("a key never observed is known")
	}
}

// TestKeyIndexBounds: a small MaxKeys is one shard that forgets its oldest key first; a large one
// is keyShards shards whose keys add up to at most MaxKeys, each forgetting its own oldest.
func TestKeyIndexBounds(t *testing.T) {
	small := newKeyIndex(3)
	if len(small.shards) != 1 {
		t.Fatalf("MaxKeys 3: %d shards, want 1", len(small.shards))
	}
	for h := uint64(1); h <= 5; h++ {
		small.observe(h, record.TraceID{byte(h)})
	}
	if small.len() != 3 || small.evicted() != 2 {
		t.Fatalf("MaxKeys 3 after 5 keys: %d kept, %d evicted; want 3, 2", small.len(), small.evicted())
	}
	for h, want := range map[uint64]bool{1: false, 2: false, 3: true, 4: true, 5: true} {
		if _, ok := small.get(h); ok != want {
			t.Errorf("key %d kept = %v, want %v (the oldest first out)", h, ok, want)
		}
	}

	large := newKeyIndex(keyShardMin)
	if len(large.shards) != keyShards {
		t.Fatalf("MaxKeys %d: %d shards, want %d", keyShardMin, len(large.shards), keyShards)
	}
	const n = 3 * keyShardMin
	mix := func(h uint64) uint64 { return h * 0x2545F4914F6CDD1D }
	for h := uint64(1); h <= n; h++ {
		large.observe(mix(h), record.TraceID{1})
	}
	if got := large.len(); got > keyShardMin || got < keyShardMin*9/10 {
		t.Fatalf("MaxKeys %d after %d keys: %d kept", keyShardMin, n, got)
	}
	if got := uint64(large.len()) + large.evicted(); got != n {
		t.Fatalf("kept + evicted = %d, want %d", got, n)
	}
	// The newest keys are kept, the first ones forgotten.
	if _, ok := large.get(mix(n)); !ok {
		t.Error("the newest key was forgotten")
	}
	if _, ok := large.get(mix(1)); ok {
		t.Error("the first key is still kept after three times the bound")
	}
}

// TestKeyIndexConcurrent: observing from several goroutines at once loses no key (run with
// -race).
func TestKeyIndexConcurrent(t *testing.T) {
	x := newKeyIndex(keyShardMin)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for h := uint64(1); h <= 5000; h++ {
				x.observe(h*0x9E3779B97F4A7C15, record.TraceID{byte(g + 1)})
			}
		})
	}
	wg.Wait()
	for h := uint64(1); h <= 5000; h++ {
		if kt, ok := x.get(h * 0x9E3779B97F4A7C15); !ok || kt.n != 4 {
			t.Fatalf("key %d: %+v %v, want the four goroutines' traces", h, kt, ok)
		}
	}
}
