package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Rules of issue 10, each on the smallest trace that shows it.

func TestCancellationTypesOfMoreLanguages(t *testing.T) {
	// The classes of the names alone: record's TestClassifyCancellationTypesOfMoreLanguages.
	root := sp(1, 0, "gw", KindServer, 0, 3)
	root.ExceptionTypes = []string{"kotlinx.coroutines.TimeoutCancellationException"}
	assert.Equal(t, EndReasonDeadlineExceeded, decide(t, DefaultConfig(), root)[0].EndReason)
}

func TestParentCancellationIsNotTheRunNoticing(t *testing.T) {
	mk := func(lastStart, lastEnd float64) Verdict {
		root := sp(1, 0, "gw", KindServer, 0, 2)
		root.HTTPStatus = 499
		a1 := sp(2, 1, "gw", KindClient, 0.1, 0.5)
		a1.IsHTTP, a1.HTTPStatus, a1.Status = true, 503, StatusError
		a2 := sp(3, 1, "gw", KindClient, lastStart, lastEnd)
		a2.IsHTTP, a2.HTTPStatus, a2.Status, a2.ResendCount = true, 503, StatusError, 1
		return decide(t, DefaultConfig(), root, a1, a2)[2]
	}
	assert.Equal(t, OutcomeCancelled, mk(1.0, 1.5).Outcome, "stopped before the gone time, the loop recorded it")
	assert.Equal(t, OutcomeCancelled, mk(1.8, 2.4).Outcome, "the last try failed within the grace")
	v := mk(5, 9)
	assert.Equal(t, OutcomeDeliveredToNobody, v.Outcome, "the loop went on long after its parent recorded the cancellation")
	assert.False(t, v.RunOK)
}

func TestNoticedSpansAreLive(t *testing.T) {
	root := sp(1, 0, "gw", KindServer, 0, 3)
	root.HTTPStatus = 499
	unwind := sp(2, 1, "gw", KindClient, 0.1, 3.004) // same service: compared exactly
	unwind.ErrorType = "context canceled"
	callee := sp(3, 2, "agent", KindServer, 0.2, 5)
	late := sp(4, 1, "gw", KindInternal, 0.1, 4.5) // recorded it, but 1.5 s late: orphaned
	late.ErrorType = "context canceled"
	v := decide(t, DefaultConfig(), root, unwind, callee, late)
	assert.Equal(t, LivenessLive, v[1].Liveness)
	assert.Equal(t, OutcomeCancelled, v[1].Outcome)
	assert.Equal(t, LivenessOrphaned, v[2].Liveness)
	assert.Equal(t, "gw", v[2].CallerService, "the edge is named though the caller's span ended after the gone time")
	assert.Equal(t, LivenessOrphaned, v[3].Liveness)
}

func TestEdgesOnTheFirstOrphanedEntryOnly(t *testing.T) {
	root := sp(1, 0, "gw", KindServer, 0, 2)
	root.Deadline = t0 + 2*sec
	open := sp(2, 1, "gw", KindClient, 0.1, 5) // kept open past the deadline: orphaned itself
	a := sp(3, 2, "agent", KindServer, 0.2, 4.9)
	aCall := sp(4, 3, "agent", KindClient, 3, 4)
	b := sp(5, 4, "tool", KindServer, 3.1, 3.9) // below an orphaned entry: not an edge of its own
	v := decide(t, DefaultConfig(), root, open, a, aCall, b)
	assert.Equal(t, EndReasonDeadlineExceeded, v[0].EndReason)
	assert.Equal(t, LivenessOrphaned, v[1].Liveness)
	assert.Equal(t, "gw", v[2].CallerService)
	assert.Equal(t, LivenessOrphaned, v[4].Liveness)
	assert.Empty(t, v[4].CallerService)
	assert.True(t, v[0].HasReach)
	assert.Equal(t, 0, v[0].ReachHops)
	assert.Equal(t, 2, v[0].OrphanedDepthHops)
}

func TestLateEntryIsAFollowUpOnlyAfterACompletedRootAndACleanParent(t *testing.T) {
	mk := func(rootStatus int, parentErr string) Verdict {
		root := sp(1, 0, "gw", KindServer, 0, 2)
		root.HTTPStatus = rootStatus
		call := sp(2, 1, "gw", KindClient, 0.1, 0.5)
		call.IsHTTP, call.HTTPStatus, call.ErrorType = true, 200, parentErr
		if parentErr != "" {
			call.HTTPStatus, call.Status = 0, StatusError
		}
		srv := sp(3, 2, "worker", KindServer, 2.5, 4) // starts after its parent ended
		return decide(t, DefaultConfig(), root, call, srv)[2]
	}
	assert.True(t, mk(200, "").Detached, "a follow-up after a completed request")
	v := mk(499, "")
	assert.False(t, v.Detached, "the request was cancelled: its own work, picked up late")
	assert.Equal(t, LivenessOrphaned, v.Liveness)
	assert.True(t, v.StartedAfterGone)
	v = mk(200, "timeout")
	assert.False(t, v.Detached, "the caller gave up on this call")
	assert.Equal(t, LivenessOrphaned, v.Liveness)
}

func TestEveryRootJudgesItsOwnSubtree(t *testing.T) {
	sched := sp(1, 0, "scheduler", KindInternal, 0, 10)
	schedCall := sp(2, 1, "scheduler", KindClient, 4, 9)
	req := sp(3, 0, "gw", KindServer, 1, 3)
	req.HTTPStatus = 499
	reqWork := sp(4, 3, "agent", KindServer, 1.1, 6)
	lost := sp(5, 9, "agent", KindClient, 2, 2.5) // its parent (9) never arrives
	c, err := New(DefaultConfig())
	require.NoError(t, err)
	spans := []Span{sched, schedCall, req, reqWork, lost}
	c.Observe(spans)
	v, st := c.Decide(spans)
	assert.Equal(t, EndReasonCompleted, v[0].EndReason)
	assert.Equal(t, LivenessLive, v[1].Liveness, "judged against the scheduler, not the cancelled request")
	assert.Equal(t, EndReasonCancelled, v[2].EndReason)
	assert.Equal(t, LivenessOrphaned, v[3].Liveness)
	assert.Equal(t, LivenessUnknown, v[4].Liveness)
	assert.Equal(t, OutcomeUnknownRoot, v[4].Outcome)
	assert.Equal(t, 1, st.AmbiguousRoot)
	assert.False(t, st.RootMissing)

	// A late span finds the root its siblings had: under the request's agent, orphaned; under
	// the scheduler's call, live.
	lateA := sp(6, 4, "agent", KindClient, 5, 5.5)
	lateS := sp(7, 2, "scheduler", KindInternal, 5, 5.5)
	lateS.Operation = "chat"
	late := []Span{lateA, lateS}
	c.Observe(late)
	v, st = c.Decide(late)
	assert.Equal(t, LivenessOrphaned, v[0].Liveness)
	assert.True(t, v[0].StartedAfterGone)
	assert.Equal(t, LivenessLive, v[1].Liveness)
	assert.Zero(t, st.AmbiguousRoot)
	assert.Equal(t, 6, c.HeldIndexed(), "four from the first decision, the two late spans too")
}

func TestRootIndexIsBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxIndexedSpans = 10
	c, err := New(cfg)
	require.NoError(t, err)
	for tr := byte(1); tr <= 20; tr++ {
		a := sp(1, 0, "a", KindServer, 0, 1)
		b := sp(2, 0, "b", KindServer, 0, 1)
		kid := sp(3, 1, "a", KindClient, 0.1, 0.2)
		spans := []Span{a, b, kid}
		for i := range spans {
			spans[i].TraceID = TraceID{tr}
		}
		c.Observe(spans)
		c.Decide(spans)
		assert.LessOrEqual(t, c.HeldIndexed(), 10)
	}
	assert.Equal(t, uint64(20*3-9), c.EvictedIndexed())
}

func TestRunLimitsCloseRunsEvenForExplicitRetries(t *testing.T) {
	mk := func(cfg Config, starts ...float64) []Verdict {
		root := sp(1, 0, "gw", KindServer, 0, 1000)
		spans := []Span{root}
		for i, s := range starts {
			a := sp(byte(2+i), 1, "gw", KindClient, s, s+0.1)
			a.IsHTTP, a.HTTPStatus, a.Status = true, 503, StatusError
			if i > 0 {
				a.ResendCount = i
			}
			spans = append(spans, a)
		}
		return decide(t, cfg, spans...)[1:]
	}
	cfg := DefaultConfig()
	cfg.MaxAttempts = 2
	v := mk(cfg, 1, 2, 3)
	assert.Equal(t, []int{1, 2, 1}, []int{v[0].Attempt, v[1].Attempt, v[2].Attempt})
	assert.Equal(t, 2, v[1].RunAttempts)
	assert.Equal(t, 1, v[2].RunAttempts, "a third try is attempt 1 of a new run: attempt and run agree")

	cfg = DefaultConfig()
	cfg.RunTimeout = 10 * 1e9
	v = mk(cfg, 1, 2, 60)
	assert.Equal(t, 2, v[1].RunAttempts)
	assert.Equal(t, OutcomeRetryableFailure, v[1].Outcome)
	assert.Equal(t, 1, v[2].Attempt, "run_timeout applies to an explicit retry too")
	assert.Equal(t, 1, v[2].RunAttempts)
}

func TestSpendRepeatedOnSpansThatRepeatTheirCallsUsage(t *testing.T) {
	root := sp(1, 0, "app", KindInternal, 0, 2)
	root.Model, root.InputTokens, root.OutputTokens = "m", 412, 27
	call := sp(2, 1, "app", KindInternal, 0.1, 1.9)
	call.Model, call.InputTokens, call.OutputTokens = "m", 412, 27
	v := decide(t, DefaultConfig(), root, call)
	assert.True(t, v[0].SpendRepeated)
	assert.Empty(t, v[0].Model)
	assert.False(t, v[1].SpendRepeated)
	assert.Equal(t, "m", v[1].Model)
}

func TestToolCallsAreAttempts(t *testing.T) {
	root := sp(1, 0, "app", KindInternal, 0, 1)
	tool := sp(2, 1, "app", KindInternal, 1.01, 1.18)
	tool.ToolCall = true
	v := decide(t, DefaultConfig(), root, tool)
	assert.Equal(t, 1, v[1].Attempt)
	assert.Equal(t, OutcomeDeliveredToNobody, v[1].Outcome)
	assert.Equal(t, LivenessOrphaned, v[1].Liveness)
}

func TestCancellationSaidOnlyInAMessage(t *testing.T) {
	mk := func(edit func(*Span)) Verdict {
		root := sp(1, 0, "gw", KindServer, 0, 2)
		root.HTTPStatus = 499
		work := sp(2, 1, "svc", KindInternal, 0.02, 2.41) // ends beyond the tolerance, within the grace
		edit(&work)
		return decide(t, DefaultConfig(), root, work)[1]
	}
	for _, msgs := range [][]string{
		{"context canceled"},                             // Go: span.RecordError(ctx.Err()), type *errors.errorString
		{`Get "http://search:8080/q": context canceled`}, // Go: *url.Error
		{"rpc error: code = Canceled desc = context canceled"},
		{"CANCELLED: io.grpc.Context was cancelled"}, // grpc-java StatusRuntimeException
		{"task 42 was cancelled"},                    // tokio JoinError
	} {
		v := mk(func(s *Span) { s.ExceptionTypes, s.Messages = []string{"*errors.errorString"}, msgs })
		assert.Equal(t, LivenessLive, v.Liveness, "%q noticed", msgs)
	}
	v := mk(func(s *Span) {
		s.Messages = []string{"upstream closed the stream: 5 retries cancelled by policy later"}
	})
	assert.Equal(t, LivenessOrphaned, v.Liveness, "free text that only mentions a cancellation is not one")
}

func TestRetryableExceptionTypes(t *testing.T) {
	root := sp(1, 0, "gw", KindServer, 0, 10)
	a1 := sp(2, 1, "gw", KindInternal, 0.1, 1)
	a1.Operation, a1.Status, a1.ExceptionTypes = "chat", StatusError, []string{"litellm.RateLimitError"}
	a2 := sp(3, 1, "gw", KindInternal, 2, 3)
	a2.Operation = "chat"
	v := decide(t, DefaultConfig(), root, a1, a2)
	assert.Equal(t, OutcomeNone, v[1].Outcome, "a rate limit recorded as an exception is retried: one run")
	assert.Equal(t, 2, v[2].RunAttempts)
	assert.Equal(t, OutcomeSuccess, v[2].Outcome)
}

func TestNestedAttemptsAreMarked(t *testing.T) {
	root := sp(1, 0, "app", KindServer, 0, 10)
	chat := sp(2, 1, "app", KindClient, 0.1, 6) // an SDK's chat call
	chat.Operation = "chat"
	httpA := sp(3, 2, "app", KindClient, 0.2, 1) // its HTTP attempt
	callee := sp(4, 3, "provider", KindServer, 0.3, 0.9)
	calleeCall := sp(5, 4, "provider", KindClient, 0.4, 0.8) // in another service: its own
	v := decide(t, DefaultConfig(), root, chat, httpA, callee, calleeCall)
	assert.False(t, v[1].SpendNested)
	assert.True(t, v[2].SpendNested)
	assert.False(t, v[4].SpendNested)
}

// TestWhenARunIsOver: startsNewRun's rules (DESIGN.md "Run outcomes", issue 27) on a loop under
// a handler (span 2, 0.00-10.00) in a live request: two tries of one call, the second starting
// at 2.0; what the first did and where the handler ended decide whether they are one run.
func TestWhenARunIsOver(t *testing.T) {
	mk := func(first func(*Span), handlerEnd float64, key uint64) []Verdict {
		root := sp(1, 0, "gw", KindServer, 0, 20)
		h := sp(2, 1, "gw", KindInternal, 0.01, handlerEnd)
		a1 := sp(3, 2, "gw", KindClient, 0.1, 1.0)
		a1.IsHTTP, a1.HTTPStatus, a1.KeyHash = true, 200, key
		first(&a1)
		a2 := sp(4, 2, "gw", KindClient, 2.0, 3.0)
		a2.IsHTTP, a2.HTTPStatus, a2.KeyHash = true, 200, key
		return decide(t, DefaultConfig(), root, h, a1, a2)
	}
	status := func(code int) func(*Span) {
		return func(s *Span) { s.HTTPStatus, s.Status = code, StatusError }
	}
	cancelled := func(s *Span) { s.HTTPStatus, s.ErrorType, s.Status = 0, "context canceled", StatusError }
	for _, c := range []struct {
		name       string
		first      func(*Span)
		handlerEnd float64
		key        uint64
		runs       int
	}{
		{"a retryable error does not end a run", status(503), 10, 0, 1},
		{"nor a non-retryable one", status(400), 10, 0, 1},
		{"nor a recorded cancellation", cancelled, 10, 0, 1},
		{"a success does", func(*Span) {}, 10, 0, 2},
		{"but for a keyed run: a client re-sends", func(*Span) {}, 10, 0xabc1, 1},
		{"the loop's span ended between the tries", status(503), 1.5, 0, 2},
		{"a try in flight when the loop's span ended joins", status(503), 2.5, 0, 1},
	} {
		v := mk(c.first, c.handlerEnd, c.key)
		runs := 0
		for _, x := range v[2:] {
			if x.Outcome != OutcomeNone {
				runs++
			}
		}
		assert.Equal(t, c.runs, runs, c.name)
		if c.runs == 1 {
			final := 3 // the last to end, or the first that succeeded
			if c.key != 0 {
				final = 2
			}
			assert.Equal(t, 2, v[final].RunAttempts, c.name)
		}
	}
}

// TestFinalAttemptIsTheFirstThatSucceeded: hedged tries, the loser cancelled long before the
// winner finished (one run, its outcome on the winner), and tries that failed (the last to
// end is final, not the last to start).
func TestFinalAttemptIsTheFirstThatSucceeded(t *testing.T) {
	root := sp(1, 0, "gw", KindServer, 0, 20)
	h := sp(2, 1, "gw", KindInternal, 0.01, 10)
	lose := sp(3, 2, "gw", KindClient, 0.1, 0.4)
	lose.IsHTTP, lose.ErrorType, lose.Status = true, "context canceled", StatusError
	win := sp(4, 2, "gw", KindClient, 0.3, 1.8)
	win.IsHTTP, win.HTTPStatus = true, 200
	v := decide(t, DefaultConfig(), root, h, lose, win)
	assert.Equal(t, OutcomeNone, v[2].Outcome)
	assert.Equal(t, OutcomeSuccess, v[3].Outcome)
	assert.Equal(t, 2, v[3].RunAttempts)

	long := sp(3, 2, "gw", KindClient, 0.1, 3.0)
	long.IsHTTP, long.HTTPStatus, long.Status = true, 503, StatusError
	short := sp(4, 2, "gw", KindClient, 0.2, 0.5)
	short.IsHTTP, short.HTTPStatus, short.Status, short.ResendCount = true, 503, StatusError, 1
	v = decide(t, DefaultConfig(), root, h, long, short)
	assert.Equal(t, OutcomeRetryableFailure, v[2].Outcome, "the last to end carries the outcome")
	assert.Equal(t, OutcomeNone, v[3].Outcome)
}

// TestKeyedRunWhoseFinalAttemptIsAnotherTraces: a key's first try succeeds in trace 1 (the run's
// final attempt, the first that succeeded); trace 2 re-sends it twice, in two releases. The run
// has three attempts, counted once each, its outcome on trace 1's try when it closes.
func TestKeyedRunWhoseFinalAttemptIsAnotherTraces(t *testing.T) {
	c, err := New(DefaultConfig())
	require.NoError(t, err)
	mk := func(tr, id, parent byte, kind Kind, start, end float64, status int) Span {
		s := sp(id, parent, "shop", kind, start, end)
		s.TraceID = TraceID{tr}
		s.IsHTTP, s.HTTPStatus = true, status
		if kind == KindClient {
			s.Name, s.KeyHash = "POST", 0xabc1
		}
		return s
	}
	release := func(now float64, spans ...Span) Decision {
		c.Observe(spans)
		return c.Release(nil, spans, t0+int64(now*float64(sec)), func(i int) any { return spans[i].SpanID })
	}
	d := release(3, mk(1, 1, 0, KindServer, 0, 2, 200), mk(1, 2, 1, KindClient, 0.1, 0.9, 200))
	assert.Equal(t, OutcomeNone, d.Verdicts[1].Outcome, "a keyed run goes on after a success")
	d = release(12, mk(2, 1, 0, KindServer, 10, 11, 200), mk(2, 2, 1, KindClient, 10.1, 10.5, 503))
	assert.Equal(t, 2, d.Verdicts[1].Attempt)
	d = release(14, mk(2, 3, 1, KindClient, 10.6, 10.9, 200))
	assert.Equal(t, 3, d.Verdicts[0].Attempt, "trace 2's first re-send is counted once")
	assert.Equal(t, OutcomeNone, d.Verdicts[0].Outcome)
	carried, _ := c.Finish(t0 + 20*sec)
	require.Len(t, carried, 1)
	assert.Equal(t, SpanID{2}, carried[0].Span.SpanID)
	assert.Equal(t, TraceID{1}, carried[0].Span.TraceID)
	assert.Equal(t, OutcomeSuccess, carried[0].Verdict.Outcome)
	assert.Equal(t, 3, carried[0].Verdict.RunAttempts)
}
