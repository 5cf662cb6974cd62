package rules

import "github.com/orphanwatch/orphanwatch/internal/verdict/record"

// Position returns the index of root id in m.roots, -1 if it is not there.
func (m *MultiRoot) Position(id record.SpanID) int {
	for q, e := range m.Roots {
		if e.ID == id {
			return q
		}
	}
	return -1
}

// MultiRoot is what is kept of a trace with several roots.
type MultiRoot struct {
	Roots    []RootEntry             // at most 255
	SpanRoot map[record.SpanID]uint8 // a decided span's root, by position in roots
}

// RootEntry is one root of a trace with several.
type RootEntry struct {
	ID  record.SpanID
	Rec RootRecord
}

// CrossTrace is what the rules read of other traces: one small, read-only view, implemented by
// the Correlator's state under its one lock (mu), so that no rule takes a lock or reaches the
// tables. The open runs, which the run rules read and change, come in apart (LockedRuns,
// openruns.go).
type CrossTrace interface {
	// KnownOf is what is known of the roots of the trace of spans (KnownRoots), given the
	// decision's roots (indexes in spans, their records recs): it fills above, for each span
	// whose parent is absent (nodes[i].parent < 0, not a root), the root it is judged against,
	// and returns the roots the spans' idempotency keys bind to, once per key (nil when none).
	KnownOf(spans []record.Span, nodes []Node, roots []int32, recs []RootRecord, above []AbsentParentRoot) (KnownRoots, map[uint64]RootRecord)
}

// KnownRoots is what a decision knows of its trace's roots: those among its spans, those kept
// from earlier decisions.
type KnownRoots struct {
	N        int           // distinct roots that are not detached work
	Single   RootRecord    // the root, when n == 1
	SingleID record.SpanID // its span ID, when known (zero for a record kept from an earlier decision)
	Detached bool          // no root but detached ones is known: work below is detached
	DetRec   RootRecord
	Multi    *MultiRoot // the trace's index, if it has one
	// Unusable: the trace's only roots seen have times that are not sane (badRoots): its
	// spans are judged without a root, and not counted as root_missing.
	Unusable bool
}

// AbsentParentRoot is the root a span whose parent is absent is judged against.
type AbsentParentRoot struct {
	Rec       RootRecord
	ID        record.SpanID // the root's span ID, when known
	OK        bool          // a root was found
	Detached  bool          // the work is detached (the only roots known are detached work)
	Ambiguous bool          // several roots, and the trace's index does not know the parent
}
