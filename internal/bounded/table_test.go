package bounded

import (
	"testing"

	"pgregory.net/rapid"
)

func TestEvictsInInsertionOrder(t *testing.T) {
	var gone []int
	tb := New[int, string](3, func(k int, _ string) { gone = append(gone, k) })
	tb.Put(1, "a")
	tb.Put(2, "b")
	tb.Put(3, "c")
	tb.Put(2, "B") // present: replaced, keeps its age
	tb.Put(4, "d") // evicts 1
	tb.Delete(3)
	tb.Put(5, "e") // room after the delete: nothing evicted
	tb.Put(6, "f") // evicts 2 (3 was deleted: skipped)
	if want := []int{1, 2}; len(gone) != 2 || gone[0] != want[0] || gone[1] != want[1] {
		t.Fatalf("evicted %v, want %v", gone, want)
	}
	if tb.Evicted() != 2 || tb.Len() != 3 {
		t.Fatalf("evicted %d, len %d; want 2, 3", tb.Evicted(), tb.Len())
	}
	for k, want := range map[int]string{4: "d", 5: "e", 6: "f"} {
		if v, ok := tb.Get(k); !ok || v != want {
			t.Errorf("Get(%d) = %q, %v; want %q", k, v, ok, want)
		}
	}
	if _, ok := tb.Get(2); ok {
		t.Error("evicted key 2 still present")
	}
}

func TestDeletedAndPutAgainIsYoung(t *testing.T) {
	tb := New[int, int](2, nil)
	tb.Put(1, 1)
	tb.Put(2, 2)
	tb.Delete(1)
	tb.Put(1, 10) // young again: its old slot is stale
	tb.Put(3, 3)  // evicts 2, the oldest live entry
	if _, ok := tb.Get(2); ok {
		t.Fatal("2 should be evicted")
	}
	if v, ok := tb.Get(1); !ok || v != 10 {
		t.Fatalf("1 = %d, %v; want 10", v, ok)
	}
}

// TestModel checks the table against a plain model (a slice in insertion order) over any
// sequence of operations, through compactions of the order ring.
func TestModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		max := rapid.IntRange(0, 6).Draw(rt, "max")
		tb := New[int, int](max, nil)
		type kv struct{ k, v int }
		var model []kv
		evicted := 0
		find := func(k int) int {
			for i, e := range model {
				if e.k == k {
					return i
				}
			}
			return -1
		}
		n := rapid.IntRange(0, 400).Draw(rt, "ops")
		for i := range n {
			k := rapid.IntRange(0, 9).Draw(rt, "k")
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0, 1:
				tb.Put(k, i)
				if j := find(k); j >= 0 {
					model[j].v = i
				} else {
					for max > 0 && len(model) >= max {
						model = model[1:]
						evicted++
					}
					model = append(model, kv{k, i})
				}
			case 2:
				tb.Delete(k)
				if j := find(k); j >= 0 {
					model = append(model[:j], model[j+1:]...)
				}
			case 3:
				k, v, ok := tb.EvictOldest()
				if ok != (len(model) > 0) || (ok && (k != model[0].k || v != model[0].v)) {
					rt.Fatalf("EvictOldest = %d, %d, %v; model %v", k, v, ok, model)
				}
				if ok {
					model = model[1:]
					evicted++
				}
			}
			if tb.Len() != len(model) || tb.Evicted() != uint64(evicted) {
				rt.Fatalf("len %d evicted %d; model %d %d", tb.Len(), tb.Evicted(), len(model), evicted)
			}
			for _, e := range model {
				if v, ok := tb.Get(e.k); !ok || v != e.v {
					rt.Fatalf("Get(%d) = %d, %v; model %d", e.k, v, ok, e.v)
				}
			}
		}
	})
}
