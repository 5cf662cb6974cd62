// Package lookupcount is the tests' key_lookups counter: key look-ups counted by outcome, as a
// keyshare.Sharer reports them to the component that shares keys (the processor, the observing
// exporter).
package lookupcount

import (
	"context"
	"maps"
	"sync"
)

// Counts counts key look-ups by outcome. The zero value is ready to use; safe for concurrent use.
type Counts struct {
	mu sync.Mutex
	m  map[string]int64
}

// Add counts n look-ups of outcome: the counting function a keyshare.Sharer is given.
func (c *Counts) Add(_ context.Context, outcome string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int64{}
	}
	c.m[outcome] += n
}

// Get returns a copy of the counts so far, by outcome (every outcome counted, zero included).
func (c *Counts) Get() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.m))
	maps.Copy(out, c.m)
	return out
}
