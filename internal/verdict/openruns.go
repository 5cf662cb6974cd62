package verdict

import (
	"github.com/orphanwatch/orphanwatch/internal/verdict/record"
	"github.com/orphanwatch/orphanwatch/internal/verdict/rules"
)

// lockRuns locks the open-run table (relMu) for a decision's run step.
func (c *Correlator) lockRuns() rules.LockedRuns {
	c.relMu.Lock()
	return rules.LockedRuns{Open: c.open, Mu: &c.relMu}
}

// sweptRun carries the outcome of an open run closed outside a release.
func (c *Correlator) sweptRun(r *rules.OpenRun) {
	c.swept = append(c.swept, Carried{Span: record.CarriedOf(&r.Last), Part: PartRun,
		Verdict: Verdict{Outcome: r.Outcome, RunAttempts: r.Attempts, RunOK: r.OK}})
	if r.Outcome == OutcomeUnknownRoot {
		c.sweptStats.UnknownRootRuns++
	}
}
