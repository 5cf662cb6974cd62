package state

import (
	"sync"

	"github.com/orphanwatch/orphanwatch/internal/bounded"
	"github.com/orphanwatch/orphanwatch/internal/verdict/record"
)

// keyIndex is the traces that carried each idempotency key hash (Observe), within MaxKeys, for
// binding work across traces (lookupKeyLocked). Every keyed span that arrives is observed in
// it, so it is sharded by key hash, each shard a bounded table under a mutex of its own: two
// batches observed at once rarely wait for each other, and Observe holds the correlator's
// mutex for root records only. With MaxKeys of keyShardMin keys or more there are keyShards
// shards of MaxKeys/keyShards keys each (the oldest key of a shard is forgotten first: about
// the oldest of all, as keys hash evenly over the shards); with fewer, one shard of MaxKeys
// (the oldest of all first).
type keyIndex struct {
	shards []keyShard
}

// keyShards is the number of shards of a large key index.
const keyShards = 16

// keyShardMin is the smallest MaxKeys that is sharded: 4,096 keys a shard or more.
const keyShardMin = keyShards * 4096

// keyShard is one shard of a keyIndex.
type keyShard struct {
	mu sync.Mutex
	t  *bounded.Table[uint64, keyTraces]
	_  [48]byte // keeps two shards' mutexes off one cache line
}

// newKeyIndex returns an index of at most maxKeys keys.
func newKeyIndex(maxKeys int) *keyIndex {
	n := 1
	if maxKeys >= keyShardMin {
		n = keyShards
	}
	x := &keyIndex{shards: make([]keyShard, n)}
	for i := range x.shards {
		x.shards[i].t = bounded.New[uint64, keyTraces](maxKeys/n, nil)
	}
	return x
}

// shard is the shard of key hash h (its top bits: the hash is FNV or an HMAC, even in all).
func (x *keyIndex) shard(h uint64) *keyShard {
	if len(x.shards) == 1 {
		return &x.shards[0]
	}
	return &x.shards[(h*0x9E3779B97F4A7C15)>>(64-4)]
}

// get returns the traces that carried key hash h (n == 0 when none is known).
func (x *keyIndex) get(h uint64) (keyTraces, bool) {
	s := x.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.Get(h)
}

// observe records that trace t carried key hash h: kept among the first four distinct traces
// of the key; a new key evicts the oldest of its shard when the shard is full.
func (x *keyIndex) observe(h uint64, t record.TraceID) {
	s := x.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	kt, _ := s.t.Get(h)
	for i := uint8(0); i < kt.n; i++ {
		if kt.traces[i] == t {
			return
		}
	}
	if int(kt.n) < len(kt.traces) {
		kt.traces[kt.n] = t
		kt.n++
	}
	s.t.Put(h, kt)
}

// len is the number of keys kept.
func (x *keyIndex) len() int {
	return int(x.sum(func(t *bounded.Table[uint64, keyTraces]) uint64 { return uint64(t.Len()) }))
}

// evicted is the number of keys forgotten to stay within the bound.
func (x *keyIndex) evicted() uint64 {
	return x.sum(func(t *bounded.Table[uint64, keyTraces]) uint64 { return t.Evicted() })
}

// sum adds f of every shard's table, each read under its shard's mutex.
func (x *keyIndex) sum(f func(*bounded.Table[uint64, keyTraces]) uint64) uint64 {
	var n uint64
	for i := range x.shards {
		s := &x.shards[i]
		s.mu.Lock()
		n += f(s.t)
		s.mu.Unlock()
	}
	return n
}
