package verdict_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// TestLockOrder drives one correlator with tight limits through every scenario (each span its
// own release, roots last so that spans are deferred; sweeps past ChainWait and run_timeout;
// memos forgotten, given up and evicted; Finish) and checks at every memo-shard lock that
// neither relMu nor the state's mu is held (verdict.CheckLockOrder): the lock order of correlator.go
// is tested, not only written.
func TestLockOrder(t *testing.T) {
	_, files := allScenarioSpans(t)
	c := newCorrelatorLimited(t, verdict.Config{MaxContextSpans: 8, MaxPendingSpans: 6, MaxOpenRuns: 2})
	checked := verdict.CheckLockOrder(t, c)
	now := int64(1767225600) * int64(time.Second)
	for _, spans := range files {
		var roots, rest []verdict.Span
		for _, s := range spans {
			if s.ParentID.IsZero() {
				roots = append(roots, s)
			} else {
				rest = append(rest, s)
			}
		}
		for k, s := range append(rest, roots...) {
			c.Observe([]verdict.Span{s})
			c.Release(nil, []verdict.Span{s}, now, nil)
			now += int64(time.Second)
			if k%4 == 3 {
				now += int64(31 * time.Second) // past ChainWait
				c.Sweep(now)
			}
		}
		now += int64(6 * time.Minute) // past run_timeout
		c.Sweep(now)
	}
	if len(files) > 0 {
		c.ReleaseLast(nil, files[0], now, nil)
	}
	c.Finish(now)
	require.Positive(t, checked.Load(), "no memo shard was locked")
}
