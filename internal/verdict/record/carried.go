package record

// Carried is a final verdict of a span that already left: written as an EventVerdict event by
// the processor. Part says which part of the span's verdict it is.
type Carried struct {
	Span    CarriedSpan
	Verdict Verdict
	Part    Part
}

// CarriedSpan is what a carried verdict keeps of its span: what names it in the event (trace
// and span ID, name, kind, start, service), its end (the event's time), and the reader's Extra.
// 96 bytes where the span's whole record is 328: a carried verdict is made for most spans of a
// trace released in many parts.
type CarriedSpan struct {
	TraceID    TraceID
	SpanID     SpanID
	Service    string
	Name       string
	Start, End int64 // unix ns
	Kind       Kind
	Extra      any
}

// CarriedOf is what a carried verdict keeps of s.
func CarriedOf(s *Span) CarriedSpan {
	return CarriedSpan{TraceID: s.TraceID, SpanID: s.SpanID, Service: s.Service, Name: s.Name, Start: s.Start, End: s.End, Kind: s.Kind, Extra: s.Extra}
}

// Part is the part of a span's verdict a Carried holds.
type Part uint8

// Parts of a verdict carried.
const (
	// PartAll: the whole verdict of a span that left deferred.
	PartAll Part = iota
	// PartRun: only the outcome of a run whose final attempt, Span, left with the run open
	// (Outcome, RunAttempts, RunOK); the rest of Span's verdict was written on it.
	PartRun
	// PartEdge: only the edge (CallerService) of an orphaned span that entered its service
	// from a caller whose span arrived after it left.
	PartEdge
)
