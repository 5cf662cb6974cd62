// Package shard is the one way trace IDs are split into shards: by what holds a trace's spans
// or records until its decision (the orphan processor's hold) and by the correlator's trace
// memos (internal/verdict). Both use the same count, chosen once at their creation, and the same
// function of a trace ID.
package shard

import "runtime"

// maxCount bounds Count: beyond it more shards only cost memory.
const maxCount = 64

// Count is the number of shards: four per core (GOMAXPROCS when called) rounded up to a power of
// two, between 4 and 64. More shards than cores keeps two goroutines rarely on the same shard; a
// power of two makes the shard of a trace a shift of its hash. Call it once, at creation: the
// count of a set of shards never changes.
func Count() int {
	n := 4
	for n < 4*runtime.GOMAXPROCS(0) && n < maxCount {
		n *= 2
	}
	return n
}

// Bits is log2 of n, a power of two (Count, or a test's own count): the shift Of takes.
func Bits(n int) uint {
	var b uint
	for n > 1 {
		b++
		n >>= 1
	}
	return b
}

// Of is the shard, in [0, 2^bits), of trace ID id: its two halves mixed (test and legacy IDs
// vary in either half only), the top bits of a Fibonacci hash of the mix. 0 when bits is 0.
func Of(id [16]byte, bits uint) int {
	if bits == 0 {
		return 0
	}
	var lo, hi uint64
	for i := range 8 {
		lo |= uint64(id[i]) << (8 * i)
		hi |= uint64(id[8+i]) << (8 * i)
	}
	return int(((lo ^ hi) * 0x9E3779B97F4A7C15) >> (64 - bits))
}
