package rules

import "github.com/orphanwatch/orphanwatch/internal/verdict/record"

// RootRecord is what is kept of a root request after its spans have left: enough to judge
// spans and traces that arrive later.
// Its fields are ordered so that it takes 32 bytes (limits.max_root_records of them are kept).
type RootRecord struct {
	Gone     int64 // unix ns: the earliest of the root's end and its deadline
	Service  string
	Reason   record.EndReason
	Detached bool // the root is itself detached work (a CONSUMER, or linked)
	// NRoots counts the distinct roots that are not detached work seen for the trace
	// (Observe; saturates at 255): two or more make a span whose parent is absent ambiguous.
	NRoots uint8
	// ID is the root's span ID: it tells a second root from a resent one, and key records
	// shared across a tier name it (keydir.go).
	ID record.SpanID
}

// PreferredRoot reports whether root record a should stand for its trace rather than b: a root
// that is not detached work first, then the earlier gone time.
func PreferredRoot(a, b RootRecord) bool {
	if a.Detached != b.Detached {
		return !a.Detached
	}
	return a.Gone < b.Gone
}

// RootRecordOf decides a root span's end reason and gone time (DESIGN.md "Words": gone time,
// end reason). A cancellation signal wins; then a deadline signal or a deadline at or before
// the end; then any error; otherwise the request completed.
func (c *Rules) RootRecordOf(s *record.Span) RootRecord {
	rec := RootRecord{Gone: s.End, Service: s.Service}
	if s.Deadline > 0 && s.Deadline < rec.Gone {
		rec.Gone = s.Deadline
	}
	switch {
	case c.Signals.CancelSignal(s) && !cutByOwnDeadline(s):
		rec.Reason = record.EndReasonCancelled
	case c.Signals.DeadlineSignal(s) || deadlineBeforeEnd(s):
		rec.Reason = record.EndReasonDeadlineExceeded
	case s.Status == record.StatusError || s.HTTPStatus >= 400 || s.GRPCStatus > record.GRPCStatusOK || s.ErrorType != "":
		rec.Reason = record.EndReasonError
	default:
		rec.Reason = record.EndReasonCompleted
	}
	rec.Detached = c.rootIsDetached(s)
	rec.ID = s.SpanID
	if !rec.Detached {
		rec.NRoots = 1
	}
	return rec
}

// rootIsDetached: a trace whose root is a messaging CONSUMER span, or whose root was reached
// only through a span link, is detached work (DESIGN.md "Words": detached work).
func (c *Rules) rootIsDetached(s *record.Span) bool {
	return (c.cfg.DetachConsumers && s.Kind == record.KindConsumer) || (c.cfg.DetachLinkedRoots && len(s.Links) > 0)
}

// deadlineBeforeEnd reports whether the span's deadline came at or before its end: whatever it
// recorded, it ran out of time (DESIGN.md "Words": deadline_exceeded, "the deadline came before
// the end").
func deadlineBeforeEnd(s *record.Span) bool { return s.Deadline > 0 && s.Deadline <= s.End }

// cutByOwnDeadline is the condition that tells deadline_exceeded from cancelled for an HTTP
// CLIENT span left the way the HTTP conventions leave a deliberately cancelled call (unset
// status, no response status code, no error.type): when its deadline had passed by its end,
// what cancelled it was that deadline, so the root ended deadline_exceeded, not cancelled.
func cutByOwnDeadline(s *record.Span) bool {
	return record.SilentlyCancelledCall(s) && deadlineBeforeEnd(s)
}
