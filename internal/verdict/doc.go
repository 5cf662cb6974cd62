// Package verdict decides, for the spans of a trace, whether each was still wanted when it ran
// (liveness), how retry attempts group into runs, how each run ended (its outcome), and what
// model spend it carried. It is the correlation and classification core of orphanwatch and has
// no OpenTelemetry Collector types in its API: readers (the orphan processor, the offline CLI)
// turn their span format into [Span] values, call [Correlator.Observe] when spans arrive, and
// [Correlator.Release] as a trace's spans leave the processor (the time model: what is kept
// between releases, carried verdicts, open runs), or [Correlator.Decide] to decide one batch
// whole, and write the returned [Verdict] values back.
//
// The core is three folders below this one, each importing only those above it in this list:
//   - record (internal/verdict/record): the data read and written (Span, Verdict, Config,
//     Carried, the attribute names) and the signals a span's records give (cancellation,
//     deadline, retryable, model call); re-exported here by aliases.go, so that callers import
//     verdict alone;
//   - rules (internal/verdict/rules): the rules of docs/verdicts.md, taking no lock: the steps
//     of a decision in order in decide.go (rules.Rules.Decide); root end reason and gone time
//     in root.go; detached work and liveness in liveness.go; edges and cancellation reach in
//     reach.go; model spend in spend.go; attempts, runs and outcomes in runs.go, the run step
//     and runs left open in openruns.go; what a decision exchanges with the time model in
//     decision.go; its view of other traces in crosstrace.go;
//   - state (internal/verdict/state): the cross-trace tables under their one lock (root
//     records, idempotency keys and the key directory, the roots of traces with several).
//
// This package is the time model on top of them: the Correlator (correlator.go), what is kept
// between releases (memo.go: [Correlator.Release], trace memos and their bounds; memobufs.go
// recycles their records), incremental.go (a later release decides only what it changes;
// gate.go turns it off), the open-run table (openruns.go) and the state as the rules see it
// (rulestate.go).
//
// The words are those of the project's DESIGN.md; docs/verdicts.md records the choices made
// where it was silent.
package verdict
