package verdict

// rootRecord is what is kept of a root request after its spans have left: enough to judge
// spans and traces that arrive later.
// Its fields are ordered so that it takes 32 bytes (limits.max_root_records of them are kept).
type rootRecord struct {
	gone     int64 // unix ns: the earliest of the root's end and its deadline
	service  string
	reason   EndReason
	detached bool // the trace's root is itself detached work (a CONSUMER, or linked)
}

// rootRecordOf decides a root span's end reason and gone time (DESIGN.md "Words": gone time,
// end reason). A cancellation signal wins; then a deadline signal or a deadline at or before
// the end; then any error; otherwise the request completed.
func (c *Correlator) rootRecordOf(s *Span) rootRecord {
	rec := rootRecord{gone: s.End, service: s.Service}
	if s.Deadline > 0 && s.Deadline < rec.gone {
		rec.gone = s.Deadline
	}
	switch {
	case c.rules.cancelSignal(s) && !(s.Kind == KindClient && s.IsHTTP && s.HTTPStatus == 0 && s.Status == StatusUnset && s.ErrorType == "" && s.Deadline > 0 && s.Deadline <= s.End):
		rec.reason = EndReasonCancelled
	case c.rules.deadlineSignal(s) || (s.Deadline > 0 && s.Deadline <= s.End):
		rec.reason = EndReasonDeadlineExceeded
	case s.Status == StatusError || s.HTTPStatus >= 400 || s.GRPCStatus > grpcOK || s.ErrorType != "":
		rec.reason = EndReasonError
	default:
		rec.reason = EndReasonCompleted
	}
	rec.detached = c.rootIsDetached(s)
	return rec
}

// rootIsDetached: a trace whose root is a messaging CONSUMER span, or whose root was reached
// only through a span link, is detached work (DESIGN.md "Words": detached work).
func (c *Correlator) rootIsDetached(s *Span) bool {
	return (c.cfg.DetachConsumers && s.Kind == KindConsumer) || (c.cfg.DetachLinkedRoots && len(s.Links) > 0)
}
