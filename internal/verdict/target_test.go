package verdict

import (
	"hash/fnv"
	"strconv"
	"testing"
)

// TestTargetHashIsFNVOfTheJoinedText: hashing a target part by part gives hash/fnv's FNV-1a of
// the joined text, so that "svc" + "/" + "m" groups runs exactly as the text "svc/m" would.
func TestTargetHashIsFNVOfTheJoinedText(t *testing.T) {
	for _, parts := range [][]string{{"search-tool", ":", "8080"}, {"vectors.Search", "/", "Query"}, {"a"}, {""}} {
		joined := ""
		h := NewTargetHash()
		for _, p := range parts {
			joined += p
			h = h.Add(p)
		}
		f := fnv.New64a()
		f.Write([]byte(joined))
		if got, want := uint64(h), f.Sum64(); got != want {
			t.Errorf("%q: %x, want %x", parts, got, want)
		}
	}
	for _, n := range []int64{0, 7, 8080, -1, 1<<63 - 1, -1 << 63} {
		if got, want := NewTargetHash().AddInt(n), NewTargetHash().Add(strconv.FormatInt(n, 10)); got != want {
			t.Errorf("AddInt(%d) = %x, want %x", n, got, want)
		}
	}
	if NewTargetHash().Add("a") == NewTargetHash().Add("b") {
		t.Error("two targets hash alike")
	}
}
