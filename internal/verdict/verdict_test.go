package verdict

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sec = int64(time.Second)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// sp builds a span of trace 1 with the given ID, parent, service, kind and times in seconds.
func sp(id, parent byte, service string, kind Kind, start, end float64) Span {
	s := Span{
		TraceID: TraceID{1}, SpanID: SpanID{id}, Service: service, Name: service + "-op", Kind: kind,
		Start: t0 + int64(start*float64(sec)), End: t0 + int64(end*float64(sec)),
		GRPCStatus: -1, ResendCount: -1, InputTokens: -1, OutputTokens: -1,
	}
	if parent != 0 {
		s.ParentID = SpanID{parent}
	}
	return s
}

// linkedConsumer is trace 2's root: service consuming, from start to end, what trace 1's span 2
// produced (it links to it).
func linkedConsumer(service string, start, end float64) Span {
	b := sp(1, 0, service, KindConsumer, start, end)
	b.TraceID = TraceID{2}
	b.Links = []Link{{TraceID: TraceID{1}, SpanID: SpanID{2}}}
	return b
}

func decide(t *testing.T, cfg Config, spans ...Span) []Verdict {
	t.Helper()
	c := mustNew(t, cfg)
	c.Observe(spans)
	v, _ := c.Decide(spans)
	return v
}

// mustNew is a correlator with cfg; the test stops if New refuses cfg.
func mustNew(t testing.TB, cfg Config) *Correlator {
	t.Helper()
	c, err := New(cfg)
	require.NoError(t, err)
	return c
}

func TestRootEndReason(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Span)
		want EndReason
	}{
		{"completed", func(*Span) {}, EndReasonCompleted},
		{"http 499", func(s *Span) { s.HTTPStatus = 499 }, EndReasonCancelled},
		{"grpc cancelled", func(s *Span) { s.GRPCStatus = 1 }, EndReasonCancelled},
		{"python exception", func(s *Span) { s.ExceptionTypes = []string{"asyncio.CancelledError"} }, EndReasonCancelled},
		{"java exception", func(s *Span) { s.ErrorType = "java.util.concurrent.CancellationException" }, EndReasonCancelled},
		{"grpc deadline", func(s *Span) { s.GRPCStatus = 4 }, EndReasonDeadlineExceeded},
		{"deadline before end", func(s *Span) { s.Deadline = s.End - sec; s.HTTPStatus = 504 }, EndReasonDeadlineExceeded},
		{"deadline after end", func(s *Span) { s.Deadline = s.End + sec }, EndReasonCompleted},
		{"server error", func(s *Span) { s.HTTPStatus = 500; s.Status = StatusError }, EndReasonError},
		{"status error", func(s *Span) { s.Status = StatusError }, EndReasonError},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := sp(1, 0, "gw", KindServer, 0, 3)
			c.edit(&root)
			v := decide(t, DefaultConfig(), root)
			assert.Equal(t, c.want, v[0].EndReason)
			assert.Equal(t, LivenessLive, v[0].Liveness)
		})
	}
}

func TestLivenessAndSkew(t *testing.T) {
	root := sp(1, 0, "gw", KindServer, 0, 3)
	sameLate := sp(2, 1, "gw", KindInternal, 1, 3.001)       // same service: exact
	otherLate := sp(3, 1, "agent", KindServer, 0.1, 3.2)     // other service: within 250 ms
	otherOrphan := sp(4, 1, "agent2", KindServer, 0.1, 3.3)  // beyond the tolerance
	dispatched := sp(5, 4, "agent2", KindClient, 3.26, 3.29) // started after gone + tolerance
	v := decide(t, DefaultConfig(), root, sameLate, otherLate, otherOrphan, dispatched)
	assert.Equal(t, LivenessOrphaned, v[1].Liveness)
	assert.InDelta(t, 0.001, v[1].AfterGone, 1e-6)
	assert.Equal(t, LivenessLive, v[2].Liveness)
	assert.Equal(t, LivenessOrphaned, v[3].Liveness)
	assert.Equal(t, "gw", v[3].CallerService)
	assert.False(t, v[3].StartedAfterGone)
	assert.True(t, v[4].StartedAfterGone)
}

func TestDeadlineAppliesBelow(t *testing.T) {
	root := sp(1, 0, "gw", KindServer, 0, 10)
	callee := sp(2, 1, "coder", KindServer, 0.1, 5)
	callee.Deadline = t0 + 2*sec
	child := sp(3, 2, "coder", KindClient, 2.5, 3.5)
	sibling := sp(4, 1, "planner", KindServer, 0.1, 5)
	v := decide(t, DefaultConfig(), root, callee, child, sibling)
	assert.Equal(t, LivenessOrphaned, v[1].Liveness)
	assert.InDelta(t, 3.0, v[1].AfterGone, 1e-9)
	assert.True(t, v[2].StartedAfterGone)
	assert.Equal(t, OutcomeDeliveredToNobody, v[2].Outcome)
	assert.Equal(t, LivenessLive, v[3].Liveness, "the deadline applies below its carrier only")
}

func TestRunsRetriesVersusParallelSiblings(t *testing.T) {
	root := sp(1, 0, "gw", KindServer, 0, 10)
	agent := sp(2, 1, "agent", KindServer, 0, 9)
	retry1 := sp(3, 2, "agent", KindClient, 0.1, 0.2)
	retry1.HTTPStatus, retry1.Status = 503, StatusError
	retry2 := sp(4, 2, "agent", KindClient, 0.5, 0.6)
	retry2.HTTPStatus = 200
	after := sp(5, 2, "agent", KindClient, 1, 1.1) // after a success: a new run
	par1 := sp(6, 2, "agent", KindInternal, 2, 3)  // overlapping siblings: parallel work
	par1.Name, par1.Operation = "chat", "chat"
	par2 := par1
	par2.SpanID = SpanID{7}
	par2.Start += sec / 2
	v := decide(t, DefaultConfig(), root, agent, retry1, retry2, after, par1, par2)
	assert.Equal(t, 1, v[2].Attempt)
	assert.Equal(t, OutcomeNone, v[2].Outcome)
	assert.Equal(t, 2, v[3].Attempt)
	assert.Equal(t, OutcomeSuccess, v[3].Outcome)
	assert.Equal(t, 2, v[3].RunAttempts)
	assert.Equal(t, 1, v[4].Attempt)
	assert.Equal(t, 1, v[4].RunAttempts)
	assert.Equal(t, 1, v[5].RunAttempts)
	assert.Equal(t, 1, v[6].RunAttempts)
}

func TestRunOutcomes(t *testing.T) {
	mk := func(edit func(*Span), parentEdit func(*Span)) Verdict {
		root := sp(1, 0, "gw", KindServer, 0, 3)
		agent := sp(2, 1, "agent", KindServer, 0, 2.5)
		if parentEdit != nil {
			parentEdit(&agent)
		}
		call := sp(3, 2, "agent", KindClient, 1, 2)
		call.IsHTTP = true
		call.HTTPStatus = 200
		edit(&call)
		return decide(t, DefaultConfig(), root, agent, call)[2]
	}
	assert.Equal(t, OutcomeSuccess, mk(func(*Span) {}, nil).Outcome)
	assert.Equal(t, OutcomeRetryableFailure, mk(func(s *Span) { s.HTTPStatus = 429 }, nil).Outcome)
	assert.Equal(t, OutcomeHardFailure, mk(func(s *Span) { s.HTTPStatus = 501 }, nil).Outcome)
	assert.Equal(t, OutcomeHardFailure, mk(func(s *Span) { s.IsHTTP, s.HTTPStatus, s.GRPCStatus = false, 0, 3 }, nil).Outcome)
	assert.Equal(t, OutcomeRetryableFailure, mk(func(s *Span) { s.IsHTTP, s.HTTPStatus, s.GRPCStatus = false, 0, 14 }, nil).Outcome)
	assert.Equal(t, OutcomeCancelled, mk(func(s *Span) { s.HTTPStatus = 0 }, nil).Outcome, "HTTP client ended without a response")
	assert.Equal(t, OutcomeCancelled, mk(func(s *Span) { s.HTTPStatus = 503 }, func(p *Span) { p.ErrorType = "context canceled" }).Outcome,
		"the loop recorded the cancellation")
	late := mk(func(s *Span) { s.End = t0 + 4*sec }, nil)
	assert.Equal(t, OutcomeDeliveredToNobody, late.Outcome)
	assert.True(t, late.RunOK)
}

func TestModelCallsCountedOnce(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Prices = map[string]Price{"gpt-4o": {InputPerMillion: 2.5, OutputPerMillion: 10}, "gpt-4o-mini": {InputPerMillion: 0.15, OutputPerMillion: 0.6}}
	root := sp(1, 0, "app", KindInternal, 0, 3)
	root.Model, root.InputTokens, root.OutputTokens = "gpt-4o-mini", 412, 27 // repeats its child's usage
	call := sp(2, 1, "app", KindInternal, 0.1, 2)
	call.Model, call.InputTokens, call.OutputTokens = "gpt-4o-mini-2024-07-18", 412, 27
	v := decide(t, cfg, root, call)
	assert.Empty(t, v[0].Model)
	assert.Equal(t, "gpt-4o-mini-2024-07-18", v[1].Model)
	require.True(t, v[1].HasCost)
	assert.InDelta(t, (412*0.15+27*0.6)/1e6, v[1].Cost, 1e-12, "priced by the longest matching prefix")
}

func TestDetachedWork(t *testing.T) {
	root := sp(1, 0, "gw", KindServer, 0, 1)
	consumer := sp(2, 1, "worker", KindConsumer, 5, 6)
	redirect := sp(3, 1, "gw", KindClient, 0.5, 0.5) // no duration
	follow := sp(4, 3, "login", KindServer, 2, 3)    // started after its parent ended
	v := decide(t, DefaultConfig(), root, consumer, redirect, follow)
	assert.True(t, v[1].Detached)
	assert.Equal(t, LivenessNone, v[1].Liveness)
	assert.Equal(t, LivenessUnknown, v[2].Liveness, "a span without a duration")
	assert.True(t, v[3].Detached)
}

func TestKeyBindsAcrossTraces(t *testing.T) {
	c, err := New(DefaultConfig())
	require.NoError(t, err)
	a := sp(1, 0, "gw", KindServer, 0, 1)
	a.HTTPStatus = 499
	prod := sp(2, 1, "gw", KindProducer, 0.5, 0.52)
	prod.KeyHash = 42
	b := linkedConsumer("worker", 2, 6)
	call := sp(2, 1, "worker", KindClient, 2, 3)
	call.TraceID, call.KeyHash = TraceID{2}, 42
	c.Observe([]Span{b, call})
	c.Observe([]Span{a, prod})
	v, _ := c.Decide([]Span{b, call})
	assert.True(t, v[0].Detached)
	assert.Equal(t, LivenessOrphaned, v[1].Liveness)
	assert.True(t, v[1].StartedAfterGone)
	assert.Equal(t, OutcomeDeliveredToNobody, v[1].Outcome)
}

func TestMalformed(t *testing.T) {
	root := sp(1, 0, "gw", KindServer, 0, 3)
	zeroTimes := sp(2, 1, "gw", KindClient, 0, 0)
	zeroTimes.Start, zeroTimes.End = 0, 0
	backwards := sp(3, 1, "gw", KindClient, 2, 1)
	self := sp(4, 4, "gw", KindClient, 1, 2)
	cyc1, cyc2 := sp(5, 6, "gw", KindClient, 1, 2), sp(6, 5, "gw", KindClient, 1, 2)
	copy1 := sp(7, 1, "gw", KindClient, 1, 2)
	copy2 := copy1
	c, err := New(DefaultConfig())
	require.NoError(t, err)
	spans := []Span{root, zeroTimes, backwards, self, cyc1, cyc2, copy1, copy2}
	c.Observe(spans)
	v, st := c.Decide(spans)
	assert.Equal(t, InvalidTimes, v[1].Invalid)
	assert.Equal(t, LivenessUnknown, v[1].Liveness)
	assert.Equal(t, InvalidEndBeforeStart, v[2].Invalid)
	assert.Equal(t, InvalidParentCycle, v[3].Invalid)
	assert.Equal(t, InvalidParentCycle, v[4].Invalid)
	assert.Equal(t, InvalidParentCycle, v[5].Invalid)
	assert.Equal(t, Valid, v[6].Invalid, "the first of two exact copies keeps its verdict")
	assert.Equal(t, InvalidDuplicate, v[7].Invalid)
	assert.Equal(t, 3, st.Invalid[InvalidParentCycle])
	assert.Equal(t, 1, st.Invalid[InvalidDuplicate])
}

func TestBoundedMemory(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxRootRecords, cfg.MaxKeys = 10, 5
	c, err := New(cfg)
	require.NoError(t, err)
	for i := range 100 {
		r := sp(1, 0, "gw", KindServer, 0, 1)
		r.TraceID = TraceID{byte(i), byte(i >> 8), 9}
		r.KeyHash = uint64(i + 1)
		c.Observe([]Span{r})
	}
	roots, keys := c.Held()
	assert.Equal(t, 10, roots)
	assert.Equal(t, 5, keys)
	er, ek := c.Evicted()
	assert.Equal(t, uint64(90), er)
	assert.Equal(t, uint64(95), ek)
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ClockSkew = -1
	cfg.RetryableGRPCStatus = []int{99}
	cfg.Prices = map[string]Price{"m": {InputPerMillion: -1, OutputPerMillion: 0}}
	err := cfg.Validate()
	require.Error(t, err)
	for _, want := range []string{"clock_skew_tolerance: ", "retryable.grpc_status_codes", "prices.m.input_per_million"} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = New(cfg)
	assert.Error(t, err)
}

// TestConsumerKeysOfItsOwnBindNothing: detached work with idempotency keys that the request's
// trace never carried stays detached, link or not.
func TestConsumerKeysOfItsOwnBindNothing(t *testing.T) {
	c, err := New(DefaultConfig())
	require.NoError(t, err)
	a := sp(1, 0, "shop", KindServer, 0, 1)
	prod := sp(2, 1, "shop", KindProducer, 0.5, 0.52)
	b := linkedConsumer("mailer", 5, 6)
	call := sp(2, 1, "mailer", KindClient, 5, 5.5)
	call.TraceID, call.KeyHash = TraceID{2}, 77
	c.Observe([]Span{a, prod, b, call})
	v, _ := c.Decide([]Span{b, call})
	assert.True(t, v[1].Detached)
	assert.Equal(t, LivenessNone, v[1].Liveness)
	assert.Equal(t, OutcomeSuccess, v[1].Outcome)
}

// TestCancellationMustBeNoticedAboutTheGoneTime: a cancellation or timeout recorded far from
// the gone time is the attempt's own timeout, not the run noticing its caller left.
func TestCancellationMustBeNoticedAboutTheGoneTime(t *testing.T) {
	run := func(start, end float64) Verdict {
		root := sp(1, 0, "gw", KindServer, 0, 3)
		root.HTTPStatus = 499
		agent := sp(2, 1, "agent", KindServer, 0, 12)
		call := sp(3, 2, "agent", KindClient, start, end)
		call.ErrorType, call.Status = "context deadline exceeded", StatusError
		return decide(t, DefaultConfig(), root, agent, call)[2]
	}
	assert.Equal(t, OutcomeCancelled, run(2, 3.2).Outcome, "noticed at about the gone time")
	late := run(4, 9)
	assert.Equal(t, OutcomeDeliveredToNobody, late.Outcome, "its own timeout, long after the caller left")
	assert.False(t, late.RunOK)
	assert.Equal(t, OutcomeRetryableFailure, run(0.1, 1).Outcome, "a timeout while the caller still waited")
}
