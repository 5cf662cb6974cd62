package verdict

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The times-sane rules (docs/verdicts.md "Bad input"): validity's time rules, with and without
// a clock, and a root whose times are not sane.

// saneTrace is a cancelled root (0-3 s) with a client call that outlived it (1-6 s).
func saneTrace(t0 int64) []Span {
	tid := TraceID{7}
	return []Span{
		{TraceID: tid, SpanID: SpanID{1}, Service: "gw", Kind: KindServer, Start: t0, End: t0 + 3*sec, HTTPStatus: 499, Status: StatusError, ResendCount: -1, GRPCStatus: -1, InputTokens: -1, OutputTokens: -1},
		{TraceID: tid, SpanID: SpanID{2}, ParentID: SpanID{1}, Service: "gw", Kind: KindClient, Start: t0 + sec, End: t0 + 6*sec, ResendCount: 1, GRPCStatus: -1, InputTokens: -1, OutputTokens: -1},
	}
}

func TestFutureEndNeedsAClock(t *testing.T) {
	const t0 = int64(1_800_000_000) * sec
	c, err := New(DefaultConfig())
	require.NoError(t, err)

	spans := saneTrace(t0)
	spans[1].End = t0 + 100*365*24*3600*sec // a century on
	vs, _ := c.DecideInto(nil, spans)
	assert.Equal(t, InvalidTooLong, vs[1].Invalid, "without a clock no end is in the future, but a century is longer than max_request_duration")

	spans = saneTrace(t0)
	spans[1].Start = t0 + 100*365*24*3600*sec
	spans[1].End = spans[1].Start + sec // a second long, a century ahead
	vs, _ = c.DecideInto(nil, spans)
	assert.Equal(t, Valid, vs[1].Invalid, "Decide has no clock")
	assert.Equal(t, LivenessOrphaned, vs[1].Liveness)

	spans = saneTrace(t0)
	spans[1].Start = t0 + 100*365*24*3600*sec
	spans[1].End = spans[1].Start + sec
	vs, st := c.DecideAt(nil, spans, t0+10*sec)
	assert.Equal(t, InvalidEndInFuture, vs[1].Invalid)
	assert.Equal(t, LivenessUnknown, vs[1].Liveness)
	assert.Zero(t, vs[1].AfterGone)
	assert.Zero(t, vs[1].Attempt, "no attempt, no run")
	assert.Equal(t, 1, st.Invalid[InvalidEndInFuture])
	assert.Equal(t, "end_in_future", InvalidEndInFuture.String())

	// Within future_tolerance of the clock: usable.
	spans = saneTrace(t0)
	vs, _ = c.DecideAt(nil, spans, t0+6*sec-int64(DefaultConfig().FutureTolerance))
	assert.Equal(t, Valid, vs[1].Invalid)
	assert.Equal(t, LivenessOrphaned, vs[1].Liveness)
}

func TestTooLongSpanCountsNoTime(t *testing.T) {
	const t0 = int64(1_800_000_000) * sec
	cfg := DefaultConfig()
	cfg.MaxRequestDuration = 4 * time.Second
	c, err := New(cfg)
	require.NoError(t, err)
	vs, st := c.DecideInto(nil, saneTrace(t0)) // the call lasts 5 s
	assert.Equal(t, InvalidTooLong, vs[1].Invalid)
	assert.Equal(t, LivenessUnknown, vs[1].Liveness)
	assert.Zero(t, vs[1].Attempt)
	assert.Equal(t, 1, st.Invalid[InvalidTooLong])
	assert.Equal(t, "over_max_duration", InvalidTooLong.String())
	assert.Equal(t, EndReasonCancelled, vs[0].EndReason, "the 3 s root is judged")
}

// TestUnusableRootDecidesAtOnce: a root whose times are not sane makes its trace known
// (Observe), so that a release decides its spans at once, without a root: unknown, runs
// unknown_root, RootUnusable. Spans released later are judged alike; a usable root coming
// later replaces it.
func TestUnusableRootDecidesAtOnce(t *testing.T) {
	const t0 = int64(1_800_000_000) * sec
	now := t0 + 10*sec
	for _, c := range []struct {
		name   string
		mutate func(root *Span)
		want   Invalid
	}{
		{"zero start", func(r *Span) { r.Start = 0 }, InvalidTimes},
		{"end before start", func(r *Span) { r.Start = r.End + 1 }, InvalidEndBeforeStart},
		{"end in the future", func(r *Span) { r.End = now + int64(time.Hour) }, InvalidEndInFuture},
		{"too long", func(r *Span) { r.Start = r.End - int64(time.Hour) }, InvalidTooLong},
	} {
		t.Run(c.name, func(t *testing.T) {
			corr, err := New(DefaultConfig())
			require.NoError(t, err)
			spans := saneTrace(t0)
			c.mutate(&spans[0])
			tid := spans[0].TraceID
			assert.False(t, corr.Knows(tid))
			corr.ObserveAt(spans[:1], now)
			assert.True(t, corr.Knows(tid), "its root came")
			d := corr.Release(nil, spans, now, nil)
			require.False(t, d.Deferred)
			require.Len(t, d.Verdicts, 2)
			assert.Equal(t, c.want, d.Verdicts[0].Invalid)
			assert.Equal(t, EndReasonNone, d.Verdicts[0].EndReason)
			assert.False(t, d.Verdicts[1].Provisional, "its chain is complete: nothing above the root will come")
			assert.Equal(t, LivenessUnknown, d.Verdicts[1].Liveness)
			assert.Equal(t, OutcomeUnknownRoot, d.Verdicts[1].Outcome)
			assert.True(t, d.Stats.RootMissing)
			assert.True(t, d.Stats.RootUnusable)
			assert.Equal(t, 1, d.Stats.RootMissingSpans)
			assert.Equal(t, 1, d.Stats.Invalid[c.want])

			// A late span: judged alike, at once.
			late := Span{TraceID: tid, SpanID: SpanID{3}, ParentID: SpanID{2}, Service: "tool", Kind: KindServer, Start: t0 + 2*sec, End: t0 + 5*sec, ResendCount: -1, GRPCStatus: -1, InputTokens: -1, OutputTokens: -1}
			d = corr.Release(nil, []Span{late}, now+sec, nil)
			require.False(t, d.Deferred)
			assert.Equal(t, LivenessUnknown, d.Verdicts[0].Liveness)

			// A usable root of the same trace: the trace has a root again.
			good := saneTrace(t0)[0]
			corr.ObserveAt([]Span{good}, now)
			assert.True(t, corr.Knows(tid))
			roots, _ := corr.Held()
			assert.Equal(t, 1, roots)
		})
	}
}
