package verdict

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
