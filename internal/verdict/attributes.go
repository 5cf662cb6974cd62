package verdict

// Names of the span attributes that carry verdicts (docs/verdicts.md). The `orphanwatch.`
// prefix marks the project's own attributes, as the OpenTelemetry attribute naming rules ask
// of names outside the semantic conventions.
const (
	AttrLiveness         = "orphanwatch.liveness"
	AttrStartedAfterGone = "orphanwatch.started_after_gone"
	AttrAfterGone        = "orphanwatch.after_gone"
	AttrDetached         = "orphanwatch.detached"
	AttrAttempt          = "orphanwatch.attempt"
	AttrRunOutcome       = "orphanwatch.run.outcome"
	AttrRunAttempts      = "orphanwatch.run.attempts"
	AttrRunResult        = "orphanwatch.run.result"
	AttrRootEndReason    = "orphanwatch.root.end_reason"
	AttrCallerService    = "orphanwatch.caller.service"
	AttrSpendModel       = "orphanwatch.spend.model"
	AttrSpendInput       = "orphanwatch.spend.input_tokens"
	AttrSpendOutput      = "orphanwatch.spend.output_tokens"
	AttrSpendCost        = "orphanwatch.spend.cost"
	AttrSpendRepeated    = "orphanwatch.spend.repeated"
	AttrSpendNested      = "orphanwatch.spend.nested"
	AttrCancelReachHops  = "orphanwatch.cancel.reach_hops"
	AttrOrphanedDepth    = "orphanwatch.orphaned.depth_hops"
)

// Knows reports whether a root record is kept for the trace.
func (c *Correlator) Knows(t TraceID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.roots[t]
	return ok
}
