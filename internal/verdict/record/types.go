package record

// Liveness says whether a span ended while somebody still waited for its root request.
type Liveness uint8

// Liveness values. LivenessNone means nothing is written (detached or malformed spans).
const (
	LivenessNone Liveness = iota
	LivenessLive
	LivenessOrphaned
	LivenessUnknown
)

// String returns the attribute value: "live", "orphaned", "unknown", or "" for none.
func (l Liveness) String() string {
	switch l {
	case LivenessLive:
		return "live"
	case LivenessOrphaned:
		return "orphaned"
	case LivenessUnknown:
		return "unknown"
	}
	return ""
}

// Outcome is how a run of attempts ended (DESIGN.md "Run outcomes").
type Outcome uint8

// Run outcomes. OutcomeNone marks spans that do not close a run.
const (
	OutcomeNone Outcome = iota
	OutcomeSuccess
	OutcomeRetryableFailure
	OutcomeHardFailure
	OutcomeCancelled
	OutcomeDeliveredToNobody
	OutcomeUnknownRoot
)

// String returns the attribute value of the outcome, or "" for OutcomeNone.
func (o Outcome) String() string {
	switch o {
	case OutcomeSuccess:
		return "success"
	case OutcomeRetryableFailure:
		return "retryable_failure"
	case OutcomeHardFailure:
		return "hard_failure"
	case OutcomeCancelled:
		return "cancelled"
	case OutcomeDeliveredToNobody:
		return "delivered_to_nobody"
	case OutcomeUnknownRoot:
		return "unknown_root"
	}
	return ""
}

// EndReason is why a root request ended (DESIGN.md "Words": end reason).
type EndReason uint8

// End reasons. EndReasonNone is used for spans that are not roots.
const (
	EndReasonNone EndReason = iota
	EndReasonCompleted
	EndReasonCancelled
	EndReasonDeadlineExceeded
	EndReasonError
	// EndReasonDetached is the end reason of the root of a trace of detached work (a
	// parentless CONSUMER span, a root with links): not a root request (DESIGN.md "Words":
	// detached work).
	EndReasonDetached
)

// String returns the attribute value of the end reason, or "" for EndReasonNone.
func (r EndReason) String() string {
	switch r {
	case EndReasonCompleted:
		return "completed"
	case EndReasonCancelled:
		return "cancelled"
	case EndReasonDeadlineExceeded:
		return "deadline_exceeded"
	case EndReasonError:
		return "error"
	case EndReasonDetached:
		return "detached"
	}
	return ""
}

// Invalid names why a span got no verdict (or only "unknown"). The processor counts spans by it.
type Invalid uint8

// Reasons a span is not judged.
const (
	Valid                 Invalid = iota
	InvalidTraceID                // all-zero trace ID
	InvalidSpanID                 // all-zero span ID
	InvalidTimes                  // zero start or end time
	InvalidEndBeforeStart         // end time before start time
	InvalidDuplicate              // a second span with the same span ID and kind in the trace
	InvalidParentCycle            // the parent chain loops back on itself
	InvalidEndInFuture            // end time beyond the correlator's clock plus FutureTolerance
	InvalidTooLong                // lasts longer than MaxRequestDuration
	numInvalid
)

// NumInvalid is the number of Invalid values, Valid included: the size of an array indexed by
// Invalid.
const NumInvalid = int(numInvalid)

// String returns the reason as used in telemetry attributes.
func (r Invalid) String() string {
	switch r {
	case InvalidTraceID:
		return "zero_trace_id"
	case InvalidSpanID:
		return "zero_span_id"
	case InvalidTimes:
		return "zero_timestamps"
	case InvalidEndBeforeStart:
		return "end_before_start"
	case InvalidDuplicate:
		return "duplicate_span_id"
	case InvalidParentCycle:
		return "parent_cycle"
	case InvalidEndInFuture:
		return "end_in_future"
	case InvalidTooLong:
		return "over_max_duration"
	}
	return ""
}

// InvalidReasons lists every reason other than Valid, for telemetry set-up.
func InvalidReasons() []Invalid {
	out := make([]Invalid, 0, numInvalid-1)
	for r := Valid + 1; r < numInvalid; r++ {
		out = append(out, r)
	}
	return out
}

// Verdict is what the correlator decided about one span. Zero values mean "not known": write
// nothing for them.
type Verdict struct {
	// Invalid is set for malformed spans; they get at most Liveness = LivenessUnknown.
	Invalid Invalid
	// Liveness of the span against its gone time.
	Liveness Liveness
	// Detached is true for work meant to outlive the request that no key or deadline binds.
	Detached bool
	// StartedAfterGone is meaningful when Liveness is live or orphaned.
	StartedAfterGone bool
	// AfterGone is end minus gone time in seconds, set for orphaned spans.
	AfterGone float64
	// Attempt is the 1-based attempt number for attempt spans, 0 for other spans.
	Attempt int
	// Outcome is set on the span that closes a run (its final attempt).
	Outcome Outcome
	// RunAttempts is the number of attempts of the run closed by this span.
	RunAttempts int
	// RunOK tells whether the final attempt of the run closed by this span succeeded.
	RunOK bool
	// EndReason is set on root spans.
	EndReason EndReason
	// CallerService is set on an orphaned span that entered a service from a caller that was
	// not itself orphaned: the edge the cancellation did not cross.
	CallerService string
	// Model is set on model calls; InputTokens/OutputTokens are -1 when unknown.
	Model                     string
	InputTokens, OutputTokens int64
	// Cost in USD of a model call, valid when HasCost.
	Cost    float64
	HasCost bool
	// SpendRepeated is set on a span that carries token usage repeated from model calls below
	// it (an agent or workflow span): its tokens are counted on those calls, never on it.
	SpendRepeated bool
	// SpendNested is set on an attempt inside another attempt of its own service (httpx
	// retries inside an SDK's chat call, a tool call's HTTP request): its seconds are part of
	// the enclosing attempt's, and counting both would count them twice.
	SpendNested bool
	// HasReach is set on roots that ended cancelled or deadline_exceeded: ReachHops is how many
	// service hops down the news travelled before something noticed, OrphanedDepthHops the
	// deepest hop still working after the gone time (reach.go).
	HasReach                     bool
	ReachHops, OrphanedDepthHops int
	// Ambiguous is set on a span whose parent is absent in a trace with several roots: it is
	// unknown (not written; counted by the processor).
	Ambiguous bool
	// EdgePending is set (not written) on an orphaned span entering its service whose edge
	// cannot be named yet: spans above it have not arrived (reach.go decideEdges).
	EdgePending bool
	// Provisional is set (not written) on an orphaned span whose chain to its root is not
	// complete in a release (reach.go markProvisional): the processor marks it deferred and its
	// verdict is carried when the chain completes or ChainWait passes. The other fields of a
	// provisional verdict are not its verdict: an incremental decision (incremental.go) does
	// not read the spans below a span whose chain is incomplete.
	Provisional bool
}

// Stats counts what one Decide call saw, for the processor's telemetry.
type Stats struct {
	Invalid         [numInvalid]int // spans by Invalid reason (index Valid unused)
	UnknownRootRuns int             // runs whose root was never seen
	RootMissing     bool            // no root span was among the spans nor retained
	// RootUnusable: with RootMissing, the trace's root came but its times are not sane
	// (counted by its own Invalid reason): the spans were judged without it.
	RootUnusable  bool
	AmbiguousRoot int // spans whose parent is absent in a trace with several roots: unknown
	NoDuration    int // spans with end equal to start: liveness unknown
	// Spans is the number of verdicts counted; RootMissingSpans those of them judged with no
	// root known (valid ones), when RootMissing.
	Spans, RootMissingSpans int
}

// InvalidTotal is the number of malformed spans the Decide call saw.
func (s *Stats) InvalidTotal() int {
	n := 0
	for _, c := range s.Invalid {
		n += c
	}
	return n
}

// Add adds o's counts to s (the counts of decisions summed).
func (s *Stats) Add(o Stats) {
	for i := range s.Invalid {
		s.Invalid[i] += o.Invalid[i]
	}
	s.UnknownRootRuns += o.UnknownRootRuns
	s.AmbiguousRoot += o.AmbiguousRoot
	s.NoDuration += o.NoDuration
	s.RootMissingSpans += o.RootMissingSpans
	s.RootMissing = s.RootMissing || o.RootMissing
	s.RootUnusable = s.RootUnusable || o.RootUnusable
	s.Spans += o.Spans
}
