package shard

import (
	"runtime"
	"testing"
)

func TestCountIsAPowerOfTwoFromTheCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for procs, want := range map[int]int{1: 4, 2: 8, 3: 16, 4: 16, 5: 32, 16: 64, 64: 64} {
		runtime.GOMAXPROCS(procs)
		if got := Count(); got != want {
			t.Errorf("GOMAXPROCS %d: Count() = %d, want %d", procs, got, want)
		}
	}
}

func TestBits(t *testing.T) {
	for n, want := range map[int]uint{1: 0, 2: 1, 4: 2, 16: 4, 64: 6} {
		if got := Bits(n); got != want {
			t.Errorf("Bits(%d) = %d, want %d", n, got, want)
		}
	}
}

// Of spreads IDs that differ in one half only, or in one byte only, over every shard, and stays
// within the count.
func TestOfSpreadsEitherHalf(t *testing.T) {
	const bits = 4
	for _, half := range []int{0, 8} {
		used := map[int]bool{}
		for i := range 256 {
			var id [16]byte
			id[half] = byte(i)
			s := Of(id, bits)
			if s < 0 || s >= 1<<bits {
				t.Fatalf("Of(%x) = %d, outside [0, %d)", id, s, 1<<bits)
			}
			used[s] = true
		}
		if len(used) != 1<<bits {
			t.Errorf("IDs varying in byte %d use %d of %d shards", half, len(used), 1<<bits)
		}
	}
	if got := Of([16]byte{9, 9, 9}, 0); got != 0 {
		t.Errorf("Of with 0 bits = %d, want 0", got)
	}
}
