package verdict

import "github.com/orphanwatch/orphanwatch/internal/verdict/record"

// Rules are the verdict rules of docs/verdicts.md for one Config: a decision (decide) and each
// of its steps, functions of the spans, the time and what the decision is given. They take no
// lock and keep nothing between decisions but the model names told to Config.PrefixPriced;
// what they read of other traces, and the open runs, comes in through decisionState.
type Rules struct {
	cfg          record.Config
	Signals      record.Signals
	prefixPriced prefixPricedSet // models told to cfg.PrefixPriced (spend.go)
}

// NewRules returns the rules for cfg, a valid Config.
func NewRules(cfg record.Config) *Rules {
	return &Rules{cfg: cfg, Signals: record.CompileSignals(cfg)}
}

// decisionState is what a decision reaches beyond the spans it decides, implemented by the
// Correlator's state and time model: other traces (crossTrace, read-only, under the state's
// lock), the open-run table (lockRuns: locked by the time model for the run step, given to
// the run rules as a parameter), and what the decision books for later decisions of its trace
// (indexRoots, step 11). It is called a few times per decision, never per span.
type State interface {
	CrossTrace
	// lockRuns locks the open-run table for a decision's run step (runStep), which unlocks it.
	LockRuns() LockedRuns
	// indexRoots books which root each span had, in a trace with several.
	IndexRoots(spans []record.Span, nodes []Node, roots []int32, recs []RootRecord)
}
