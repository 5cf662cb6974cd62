// Package verdictattrs writes a verdict onto span attributes as the orphanwatch.* attributes of
// docs/verdicts.md: what the orphan processor writes on the spans it passes on (annotate), and
// what `orphanwatch analyze` writes on the spans of the files it reads.
package verdictattrs

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// KindNames are the span kinds, by their ptrace.SpanKind (and verdict.Kind) value, as
// verdict.AttrEventSpanKind names them.
var KindNames = [...]string{"unspecified", "internal", "server", "client", "producer", "consumer"}

// Count is how many attributes Write writes for v.
func Count(v *verdict.Verdict) int {
	n := 0
	switch v.Liveness {
	case verdict.LivenessLive:
		n += 2
	case verdict.LivenessOrphaned:
		n += 3
	case verdict.LivenessUnknown:
		n++
	}
	if v.Detached {
		n++
	}
	if v.Attempt > 0 {
		n++
	}
	if v.Outcome != verdict.OutcomeNone {
		n += 3
	}
	if v.EndReason != verdict.EndReasonNone {
		n++
	}
	if v.CallerService != "" {
		n++
	}
	if v.SpendRepeated {
		n++
	}
	if v.SpendNested {
		n++
	}
	if v.HasReach {
		n += 2
	}
	if v.Model != "" {
		n++
		if v.InputTokens >= 0 {
			n++
		}
		if v.OutputTokens >= 0 {
			n++
		}
		if v.HasCost {
			n++
		}
	}
	return n
}

// Write writes the verdict attributes of docs/verdicts.md; nothing for unknown values.
func Write(a pcommon.Map, v *verdict.Verdict) {
	// One allocation for the span's grown attributes, not one per attribute added.
	if n := Count(v); n > 0 {
		a.EnsureCapacity(a.Len() + n)
	}
	if v.Liveness != verdict.LivenessNone {
		a.PutStr(verdict.AttrLiveness, v.Liveness.String())
	}
	if v.Liveness == verdict.LivenessLive || v.Liveness == verdict.LivenessOrphaned {
		a.PutBool(verdict.AttrStartedAfterGone, v.StartedAfterGone)
	}
	if v.Liveness == verdict.LivenessOrphaned {
		a.PutDouble(verdict.AttrAfterGone, v.AfterGone)
	}
	if v.Detached {
		a.PutBool(verdict.AttrDetached, true)
	}
	if v.Attempt > 0 {
		a.PutInt(verdict.AttrAttempt, int64(v.Attempt))
	}
	if v.Outcome != verdict.OutcomeNone {
		writeRun(a, v)
	}
	if v.EndReason != verdict.EndReasonNone {
		a.PutStr(verdict.AttrRootEndReason, v.EndReason.String())
	}
	if v.CallerService != "" {
		a.PutStr(verdict.AttrCallerService, v.CallerService)
	}
	if v.SpendRepeated {
		a.PutBool(verdict.AttrSpendRepeated, true)
	}
	if v.SpendNested {
		a.PutBool(verdict.AttrSpendNested, true)
	}
	if v.HasReach {
		a.PutInt(verdict.AttrCancelReachHops, int64(v.ReachHops))
		a.PutInt(verdict.AttrOrphanedDepth, int64(v.OrphanedDepthHops))
	}
	if v.Model != "" {
		a.PutStr(verdict.AttrSpendModel, v.Model)
		if v.InputTokens >= 0 {
			a.PutInt(verdict.AttrSpendInput, v.InputTokens)
		}
		if v.OutputTokens >= 0 {
			a.PutInt(verdict.AttrSpendOutput, v.OutputTokens)
		}
		if v.HasCost {
			a.PutDouble(verdict.AttrSpendCost, v.Cost)
		}
	}
}

// WritePart writes the part of v a carried verdict holds (verdict.Carried's Part): the caller
// service for an edge, the run's outcome for a run, and all Write writes for a whole verdict.
func WritePart(a pcommon.Map, part verdict.Part, v *verdict.Verdict) {
	switch part {
	case verdict.PartEdge:
		a.PutStr(verdict.AttrCallerService, v.CallerService)
	case verdict.PartRun:
		writeRun(a, v)
	default:
		Write(a, v)
	}
}

// writeRun writes v's run: its outcome, attempts and result.
func writeRun(a pcommon.Map, v *verdict.Verdict) {
	a.PutStr(verdict.AttrRunOutcome, v.Outcome.String())
	a.PutInt(verdict.AttrRunAttempts, int64(v.RunAttempts))
	if v.RunOK {
		a.PutStr(verdict.AttrRunResult, "ok")
	} else {
		a.PutStr(verdict.AttrRunResult, "error")
	}
}
