package rules

import "github.com/orphanwatch/orphanwatch/internal/verdict/record"

// DecisionIn is what the time model gives a decision of a trace within it (a release, a
// settling, a memo forgotten, a trace given up), besides its spans: read by the rules, never
// written. A decision of its own (Decide) has none.
type DecisionIn struct {
	Trace   record.TraceID
	Mode    ReleaseMode
	NOld    int    // spans[:nOld] of the decision come from the trace's memo
	Emitted []bool // of those: the verdict was written on the span when it left
	Now     int64  // unix ns
	// Extra gives the reader's Extra of the decision's new span i (spans[nOld+i]) whose record
	// an open run keeps; nil: none.
	Extra func(i int) any
	// Context, when set, marks by decision index the spans there only for what the spans
	// below them read: their runs are not decided (decideRuns; incremental.go).
	Context []bool
}

// DecisionOut is what the time model needs from a decision besides its verdicts and stats: the
// decision's return value (decide), written by the rules into the decision's working memory and
// handed back, never kept by them.
type DecisionOut struct {
	Carried []record.Carried // run outcomes that became final, of attempts that left before
	Unknown int              // runs closed unknown_root among carried
	// Opened lists the runs the decision left open (incremental.go reads until when).
	Opened []OpenedRun
	// Detached tells that a span of the decision is detached work (the incremental path does
	// not apply to the trace: incremental.go).
	Detached bool
}

// ReleaseMode is what a decision within the time model may leave for later.
type ReleaseMode uint8

const (
	// ModeRelease: a release of spans that leave now. Runs may stay open; spans whose chain to
	// the root is incomplete are provisional, their edges pending.
	ModeRelease ReleaseMode = iota
	// ModeFinal: every run is over; the trace is given up (its root never came, or the
	// processor shuts down) and its memo dropped.
	ModeFinal
	// ModeEdges: a settled memo is forgotten: the edges of orphaned entries whose chain is
	// incomplete are named now (no more of its spans will be seen with them).
	ModeEdges
	// ModeChains: ChainWait passed: spans whose chain is incomplete are judged against the root
	// the absent-parent rule gives them instead of waiting; their edges stay pending.
	ModeChains
)

// chainsWhole tells that an incomplete chain to the root will not be completed: edges are named
// without it (a decision of its own, in nil).
func (in *DecisionIn) chainsWhole() bool {
	return in == nil || in.Mode == ModeFinal || in.Mode == ModeEdges
}

// chainsWait tells that spans whose chain is incomplete wait (provisional) for it.
func (in *DecisionIn) chainsWait() bool { return in != nil && in.Mode == ModeRelease }

// OpenedRun is a run a decision left open: its final attempt (decision index) and the release
// time up to which it stays open while nothing of it changes.
type OpenedRun struct {
	Pos   int32
	Until int64
}
