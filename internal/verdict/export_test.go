package verdict

import (
	"runtime/debug"
	"sync/atomic"
	"testing"
)

// CheckLockOrder makes every memo-shard lock, until the test ends, check the lock order (a memo
// shard, then relMu or the state's mu): neither of c's relMu and mu may be held when a shard is
// locked. The test drives c from one goroutine, so a lock held then is its own. It returns the
// number of shard locks checked.
func CheckLockOrder(t testing.TB, c *Correlator) *atomic.Int64 {
	var checked atomic.Int64
	lockShardHook = func() {
		checked.Add(1)
		if !c.relMu.TryLock() {
			t.Errorf("a memo shard locked with relMu held:\n%s", debug.Stack())
		} else {
			c.relMu.Unlock()
		}
		if c.tables.LockHeld() {
			t.Errorf("a memo shard locked with the state's mu held:\n%s", debug.Stack())
		}
	}
	t.Cleanup(func() { lockShardHook = nil })
	return &checked
}

// SetIncremental turns the incremental path of c's releases on or off (on by default), so that
// a test can compare it with the decision of the whole trace.
func SetIncremental(c *Correlator, on bool) { c.noIncremental = !on }

// WholeForced is the index in DecisionPaths' whole counts of the releases decided whole
// because the incremental path is off.
const WholeForced = wholeForced

// SetLinearIndex sets the memo size from which the incremental path's index keeps maps, and
// returns the size it had.
func SetLinearIndex(n int) int {
	old := linearIndex
	linearIndex = n
	return old
}
