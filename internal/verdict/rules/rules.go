// Package rules holds the verdict rules of docs/verdicts.md, each a named function of its
// inputs and the time:
//   - the steps of a decision, in order: [Rules.Decide] in decide.go;
//   - root end reason and gone time: [Rules.RootRecordOf] in root.go;
//   - detached work and liveness: liveness.go; edges and cancellation reach: reach.go;
//   - model spend and cost: spend.go;
//   - attempts, runs and outcomes: runs.go; the run step and runs left open: openruns.go.
//
// What a decision exchanges with the time model (package verdict: memos, incremental
// decisions, open-run table) is decision.go's [DecisionIn] and [DecisionOut]; what it reads of
// other traces and books for later decisions comes through [State] (crosstrace.go). No rule
// takes a lock: the time model locks the open-run table around the run step and hands it in
// ([LockedRuns]). The package imports the data (internal/verdict/record) and nothing of the
// time model or the state.
package rules

import "github.com/orphanwatch/orphanwatch/internal/verdict/record"

// Rules are the verdict rules of docs/verdicts.md for one Config: a decision (Decide) and each
// of its steps, functions of the spans, the time and what the decision is given. They take no
// lock and keep nothing between decisions but the model names told to Config.PrefixPriced;
// what they read of other traces, and the open runs, comes in through State.
type Rules struct {
	cfg          record.Config
	Signals      record.Signals
	prefixPriced prefixPricedSet // models told to cfg.PrefixPriced (spend.go)
}

// New returns the rules for cfg, a valid Config.
func New(cfg record.Config) *Rules {
	return &Rules{cfg: cfg, Signals: record.CompileSignals(cfg)}
}

// State is what a decision reaches beyond the spans it decides, implemented by the
// Correlator's state and time model: other traces (CrossTrace, read-only, under the state's
// lock), the open-run table (LockRuns: locked by the time model for the run step, given to
// the run rules as a parameter), and what the decision books for later decisions of its trace
// (IndexRoots, step 11). It is called a few times per decision, never per span.
type State interface {
	CrossTrace
	// LockRuns locks the open-run table for a decision's run step (runStep), which unlocks it.
	LockRuns() LockedRuns
	// IndexRoots books which root each span had, in a trace with several.
	IndexRoots(spans []record.Span, nodes []Node, roots []int32, recs []RootRecord)
}
