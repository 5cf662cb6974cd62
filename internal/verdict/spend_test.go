package verdict

import (
	"fmt"
	"sync"
	"testing"
)

// TestPrefixPriced: a model without an entry of its own is priced by the longest entry that
// prefixes it and told to Config.PrefixPriced once, with that entry; an exact entry, or no
// entry at all, is never told.
func TestPrefixPriced(t *testing.T) {
	type told struct{ model, entry string }
	var mu sync.Mutex
	var got []told
	cfg := DefaultConfig()
	cfg.Prices = map[string]Price{
		"gpt-4o":      {InputPerMillion: 2.5, OutputPerMillion: 10},
		"gpt-4o-mini": {InputPerMillion: 0.15, OutputPerMillion: 0.6},
		"claude":      {InputPerMillion: 3, OutputPerMillion: 15},
	}
	cfg.PrefixPriced = func(model, entry string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, told{model, entry})
	}
	c := mustNew(t, cfg)
	for range 3 {
		for _, m := range []string{"gpt-4o", "gpt-4o-mini", "gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18", "claude-3-5-sonnet", "llama-3"} {
			c.rules.PriceOf(m)
		}
	}
	want := []told{{"gpt-4o-2024-08-06", "gpt-4o"}, {"gpt-4o-mini-2024-07-18", "gpt-4o-mini"}, {"claude-3-5-sonnet", "claude"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("told %v, want %v", got, want)
	}
	if p, ok := c.rules.PriceOf("gpt-4o-mini-2024-07-18"); !ok || p.InputPerMillion != 0.15 {
		t.Errorf("gpt-4o-mini-2024-07-18 priced %v %v, want the gpt-4o-mini entry", p, ok)
	}
	if _, ok := c.rules.PriceOf("llama-3"); ok {
		t.Error("llama-3 priced without an entry")
	}
}

// TestPrefixPricedBounded: model names come from span data; from many goroutines at once, each
// name is told once, and no more than MaxPrefixPricedReported names in all.
func TestPrefixPricedBounded(t *testing.T) {
	var mu sync.Mutex
	told := map[string]int{}
	cfg := DefaultConfig()
	cfg.Prices = map[string]Price{"m": {InputPerMillion: 1, OutputPerMillion: 1}}
	cfg.PrefixPriced = func(model, _ string) {
		mu.Lock()
		defer mu.Unlock()
		told[model]++
	}
	c := mustNew(t, cfg)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2 * MaxPrefixPricedReported {
				c.rules.PriceOf(fmt.Sprintf("m-%d", (i+g*7)%(2*MaxPrefixPricedReported)))
			}
		}()
	}
	wg.Wait()
	if len(told) != MaxPrefixPricedReported {
		t.Errorf("%d names told, want %d", len(told), MaxPrefixPricedReported)
	}
	for m, n := range told {
		if n != 1 {
			t.Errorf("%s told %d times", m, n)
		}
	}
}
