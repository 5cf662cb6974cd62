// Package verdict decides, for the spans of a trace, whether each was still wanted when it ran
// (liveness), how retry attempts group into runs, how each run ended (its outcome), and what
// model spend it carried. It is the correlation and classification core of orphanwatch and has
// no OpenTelemetry Collector types in its API: readers (the orphan processor, the offline CLI)
// turn their span format into [Span] values, call [Correlator.Observe] when spans arrive, and
// [Correlator.Release] as a trace's spans leave the processor (the time model: what is kept
// between releases, carried verdicts, open runs), or [Correlator.Decide] to decide one batch
// whole, and write the returned [Verdict] values back.
//
// Where each verdict is decided:
//   - the steps in order: [Correlator.decide] in decide.go;
//   - the data it reads and writes (Span, Verdict, Config) and the signals a span's records
//     give (cancellation, deadline, retryable, model call): package record
//     (internal/verdict/record), re-exported here by aliases.go;
//   - root end reason and gone time: [Correlator.rootRecordOf] in root.go;
//   - detached work and liveness: liveness.go ([Correlator.startsDetachedWork], [bindDetached],
//     [Correlator.judgeLiveness]); the gone time of a hop whose caller gave up:
//     [Correlator.callerGaveUp], used by [Correlator.goneOf] in decide.go;
//   - attempts, runs and outcomes: runs.go ([Correlator.decideRuns], [Correlator.runOver],
//     [Correlator.runOutcome]); runs left open: openruns.go;
//   - model spend and cost: spend.go; edges and cancellation reach: reach.go;
//   - what is kept between releases: memo.go ([Correlator.Release], trace memos and their
//     bounds; memobufs.go recycles their records), incremental.go (a later release decides
//     only what it changes), state.go and keyindex.go (root records, idempotency keys).
//
// The words are those of the project's DESIGN.md; docs/verdicts.md records the choices made
// where it was silent.
package verdict
