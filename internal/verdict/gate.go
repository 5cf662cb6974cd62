package verdict

import "go.opentelemetry.io/collector/featuregate"

// IncrementalDecisionsGateID is the feature gate of the incremental path (incremental.go): on
// by default; turned off (--feature-gates=-orphanwatch.incrementalDecisions), every release of
// a trace is decided whole, with all the spans kept of the trace, as its first release is. The
// verdicts are the same either way (TestIncrementalEqualsWhole); only the CPU a trace released
// in many parts costs differs. Read when a Correlator is made (New).
const IncrementalDecisionsGateID = "orphanwatch.incrementalDecisions"

// incrementalDecisions is the registered gate (IncrementalDecisionsGateID).
var incrementalDecisions = featuregate.GlobalRegistry().MustRegister(
	IncrementalDecisionsGateID, featuregate.StageBeta,
	featuregate.WithRegisterDescription("Decide a later release of a trace from its memo's index: only the spans it can change, not the whole trace (the verdicts are the same)."),
	featuregate.WithRegisterFromVersion("v0.1.0"),
	featuregate.WithRegisterReferenceURL("https://github.com/orphanwatch/orphanwatch/blob/main/docs/verdicts.md#when-verdicts-are-decided"),
)
