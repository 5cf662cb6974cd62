package verdict

import "github.com/orphanwatch/orphanwatch/internal/verdict/rules"

// ruleState is the Correlator as the rules see it (rules.State): other traces in the tables,
// under their lock (KnownOf), the open-run table under relMu (LockRuns), the roots a decision
// books (IndexRoots).
// The rules reach the state only through it; it is c itself, converted, so it costs nothing.
type ruleState Correlator

var _ rules.State = (*ruleState)(nil)

// ruleState is c as the rules see it.
func (c *Correlator) ruleState() *ruleState { return (*ruleState)(c) }

// KnownOf implements rules.CrossTrace: the tables' KnownOf, under their lock.
func (s *ruleState) KnownOf(spans []Span, nodes []rules.Node, roots []int32, recs []rules.RootRecord, above []rules.AbsentParentRoot) (rules.KnownRoots, map[uint64]rules.RootRecord) {
	return s.tables.KnownOf(spans, nodes, roots, recs, above)
}

// LockRuns implements rules.State: the open-run table, relMu locked (lockRuns).
func (s *ruleState) LockRuns() rules.LockedRuns { return (*Correlator)(s).lockRuns() }

// IndexRoots implements rules.State: the tables' IndexRoots, under their lock.
func (s *ruleState) IndexRoots(spans []Span, nodes []rules.Node, roots []int32, recs []rules.RootRecord) {
	s.tables.IndexRoots(spans, nodes, roots, recs)
}
