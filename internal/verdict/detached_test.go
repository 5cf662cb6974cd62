package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDetachedRootsEndDetached: the root of a trace of detached work (a parentless CONSUMER
// span, a root with links) is not a root request: its end reason is detached, whatever its
// status, and it carries no liveness. A root request keeps its own end reason; with consumer
// detachment off a CONSUMER root is a root request like any.
func TestDetachedRootsEndDetached(t *testing.T) {
	consumer := sp(1, 0, "worker", KindConsumer, 0, 2)
	consumer.Status = StatusError
	v := decide(t, DefaultConfig(), consumer)
	assert.Equal(t, EndReasonDetached, v[0].EndReason)
	assert.True(t, v[0].Detached)
	assert.Equal(t, LivenessNone, v[0].Liveness)
	assert.Equal(t, "detached", v[0].EndReason.String())

	linked := sp(1, 0, "batch", KindServer, 0, 2)
	linked.HTTPStatus = 499
	linked.Links = []Link{{TraceID: TraceID{9}, SpanID: SpanID{9}}}
	v = decide(t, DefaultConfig(), linked)
	assert.Equal(t, EndReasonDetached, v[0].EndReason, "a cancelled linked root is still detached work")
	assert.False(t, v[0].HasReach)

	delivery := sp(1, 0, "worker", KindConsumer, 0, 2)
	delivery.MessageHash = 7
	v = decide(t, DefaultConfig(), delivery)
	assert.Equal(t, EndReasonDetached, v[0].EndReason)
	assert.Equal(t, 1, v[0].Attempt, "a delivery that begins its trace is an attempt too")

	cfg := DefaultConfig()
	cfg.DetachConsumers = false
	v = decide(t, cfg, consumer)
	assert.Equal(t, EndReasonError, v[0].EndReason)
	assert.Equal(t, LivenessLive, v[0].Liveness)
}

// handoff builds trace 1, a request whose producer hands a job over with key 42 (the root
// edited by root), and trace 2, the job: a linked CONSUMER root and a call with the key that
// ends long after the request did.
func handoff(root func(*Span), call func(*Span)) []Verdict {
	a := sp(1, 0, "api", KindServer, 0, 0.3)
	root(&a)
	prod := sp(2, 1, "api", KindProducer, 0.1, 0.12)
	prod.KeyHash = 42
	b := linkedConsumer("worker", 1, 60)
	job := sp(2, 1, "worker", KindClient, 2, 50)
	job.TraceID, job.KeyHash, job.Operation = TraceID{2}, 42, "chat"
	call(&job)
	c, err := New(DefaultConfig())
	if err != nil {
		panic(err)
	}
	c.Observe([]Span{a, prod})
	c.Observe([]Span{b, job})
	v, _ := c.Decide([]Span{b, job})
	return v
}

// TestWorkHandedOverByACompletedRequest: work bound by a key to a request that completed
// normally (an asynchronous API that answered 202) is judged only against the deadline it
// carries, and is otherwise live; bound to a request that ended abandoned it is judged against
// the request's gone time (S7).
func TestWorkHandedOverByACompletedRequest(t *testing.T) {
	v := handoff(func(a *Span) { a.HTTPStatus = 202 }, func(*Span) {})
	require.Equal(t, EndReasonDetached, v[0].EndReason)
	assert.True(t, v[0].Detached, "the job's root carries no key: unbound")
	assert.False(t, v[1].Detached, "bound by its key")
	assert.Equal(t, LivenessLive, v[1].Liveness, "handed over by a completed request, no deadline: live")
	assert.False(t, v[1].StartedAfterGone)
	assert.Equal(t, OutcomeSuccess, v[1].Outcome)

	v = handoff(func(a *Span) { a.HTTPStatus = 202 }, func(j *Span) { j.Deadline = t0 + 30*sec })
	assert.Equal(t, LivenessOrphaned, v[1].Liveness, "judged against the deadline it carries")
	assert.InDelta(t, 20.0, v[1].AfterGone, 1e-9)
	assert.Equal(t, OutcomeDeliveredToNobody, v[1].Outcome)

	v = handoff(func(a *Span) { a.HTTPStatus = 202 }, func(j *Span) { j.Deadline = t0 + 55*sec })
	assert.Equal(t, LivenessLive, v[1].Liveness, "the request's own end does not judge it")

	for name, abandon := range map[string]func(*Span){
		"cancelled": func(a *Span) { a.HTTPStatus = 499 },
		"deadline":  func(a *Span) { a.GRPCStatus = 4 },
		"error":     func(a *Span) { a.HTTPStatus, a.Status = 500, StatusError },
	} {
		v = handoff(abandon, func(*Span) {})
		assert.Equal(t, LivenessOrphaned, v[1].Liveness, name)
		assert.InDelta(t, 49.7, v[1].AfterGone, 1e-9, name)
		assert.True(t, v[1].StartedAfterGone, name)
	}
}

// TestMessageIdentityNeverBinds: deliveries of one message (its messaging.message.id or Kafka
// partition and offset: MessageHash) are one run, and the identity never binds them to the
// producer's root, whether they sit under the PRODUCER span in its trace or begin traces of
// their own: the producing request was cancelled, and still they are detached work judged by
// their own result.
func TestMessageIdentityNeverBinds(t *testing.T) {
	root := sp(1, 0, "gw", KindServer, 0, 1)
	root.HTTPStatus = 499
	prod := sp(2, 1, "gw", KindProducer, 0.1, 0.12)
	prod.MessageHash = 5 // a producer's record of the message: not a key
	d1 := sp(3, 2, "billing", KindConsumer, 2, 3)
	d1.MessageHash, d1.Status = 5, StatusError
	d2 := sp(4, 2, "billing", KindConsumer, 90, 91)
	d2.MessageHash = 5
	v := decide(t, DefaultConfig(), root, prod, d1, d2)
	for i, d := range []Verdict{v[2], v[3]} {
		assert.True(t, d.Detached, "delivery %d", i+1)
		assert.Equal(t, LivenessNone, d.Liveness, "delivery %d", i+1)
	}
	assert.Equal(t, OutcomeNone, v[2].Outcome)
	assert.Equal(t, 2, v[3].Attempt)
	assert.Equal(t, OutcomeSuccess, v[3].Outcome, "one run, judged by its own result")
	assert.Equal(t, 2, v[3].RunAttempts)
	assert.Equal(t, 0, v[0].OrphanedDepthHops, "nothing of the request's went on")
}
