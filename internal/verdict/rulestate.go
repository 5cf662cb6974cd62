package verdict

import "github.com/orphanwatch/orphanwatch/internal/verdict/rules"

// ruleState is the Correlator as the rules see it (State): other traces under the state's lock
// (knownOf), the open-run table under relMu (lockRuns), the roots a decision books (indexRoots).
// The rules reach the state only through it; it is c itself, converted, so it costs nothing.
type ruleState Correlator

var _ rules.State = (*ruleState)(nil)

// ruleState is c as the rules see it.
func (c *Correlator) ruleState() *ruleState { return (*ruleState)(c) }

// KnownOf implements CrossTrace (knownOf).
func (s *ruleState) KnownOf(spans []Span, nodes []rules.Node, roots []int32, recs []rules.RootRecord, above []rules.AbsentParentRoot) (rules.KnownRoots, map[uint64]rules.RootRecord) {
	return s.tables.KnownOf(spans, nodes, roots, recs, above)
}

// LockRuns implements State (lockRuns).
func (s *ruleState) LockRuns() rules.LockedRuns { return (*Correlator)(s).lockRuns() }

// IndexRoots implements State (indexRoots).
func (s *ruleState) IndexRoots(spans []Span, nodes []rules.Node, roots []int32, recs []rules.RootRecord) {
	s.tables.IndexRoots(spans, nodes, roots, recs)
}
