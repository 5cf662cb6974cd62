package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPerTryTimeoutOrphansTheAbandonedTry: an SDK times a try out at 10.1 s and tries again;
// the server of the first try works on to 25 s. That server and its work are judged against
// the caller's end, though the root waits until 30 s (DESIGN.md "Words": a caller that gave
// up): the server is orphaned, names the edge, and a model call it began after 10.1 s is
// delivered to nobody. The retried try, answered, is live, and the client's run succeeds.
func TestPerTryTimeoutOrphansTheAbandonedTry(t *testing.T) {
	root := sp(1, 0, "gw", KindServer, 0, 30)
	try1 := sp(2, 1, "gw", KindClient, 0.1, 10.1)
	try1.IsHTTP, try1.Status, try1.ErrorType = true, StatusError, "httpx.ReadTimeout"
	srv1 := sp(3, 2, "agent", KindServer, 0.2, 25)
	early := sp(4, 3, "agent", KindClient, 0.5, 9)
	early.Operation, early.Name = "chat", "chat gpt-4o"
	late := sp(5, 3, "agent", KindClient, 12, 24.5)
	late.Operation, late.Name = "chat", "chat gpt-4o"
	try2 := sp(6, 1, "gw", KindClient, 10.6, 20.6)
	try2.IsHTTP, try2.HTTPStatus, try2.ResendCount = true, 200, 1
	srv2 := sp(7, 6, "agent", KindServer, 10.7, 20.5)
	v := decide(t, DefaultConfig(), root, try1, srv1, early, late, try2, srv2)

	assert.Equal(t, EndReasonCompleted, v[0].EndReason)
	assert.Equal(t, LivenessLive, v[1].Liveness, "the caller itself gave up in time")
	assert.Equal(t, LivenessOrphaned, v[2].Liveness)
	assert.InDelta(t, 14.9, v[2].AfterGone, 1e-9, "measured from the caller's end")
	assert.Equal(t, "gw", v[2].CallerService, "the edge the news did not cross")
	assert.False(t, v[2].StartedAfterGone)
	assert.Equal(t, LivenessLive, v[3].Liveness)
	assert.Equal(t, OutcomeSuccess, v[3].Outcome)
	assert.Equal(t, LivenessOrphaned, v[4].Liveness)
	assert.True(t, v[4].StartedAfterGone)
	assert.InDelta(t, 14.4, v[4].AfterGone, 1e-9)
	assert.Equal(t, OutcomeDeliveredToNobody, v[4].Outcome, "though the root still waited")
	assert.True(t, v[4].RunOK)
	assert.Equal(t, OutcomeNone, v[1].Outcome, "the timed-out try is retried")
	assert.Equal(t, OutcomeSuccess, v[5].Outcome)
	assert.Equal(t, 2, v[5].RunAttempts)
	assert.Equal(t, LivenessLive, v[6].Liveness)
	assert.Empty(t, v[6].CallerService)
}

// TestWhichCallersGaveUp: a CLIENT span gave up on its server without a response: a
// cancellation, a timeout or deadline error, HTTP 504 or 408, gRPC CANCELLED or
// DEADLINE_EXCEEDED, an HTTP client span with unset status and no response status code. A
// response (200, or a 500 that is an answer) is not giving up, whenever the caller ended; a
// protocol that records no code gives up only by an error; a server that ended within the
// clock-skew tolerance of its caller was not left behind.
func TestWhichCallersGaveUp(t *testing.T) {
	judge := func(edit func(call, srv *Span)) Verdict {
		root := sp(1, 0, "gw", KindServer, 0, 30)
		call := sp(2, 1, "gw", KindClient, 1, 5)
		srv := sp(3, 2, "agent", KindServer, 1.1, 9)
		edit(&call, &srv)
		return decide(t, DefaultConfig(), root, call, srv)[2]
	}
	httpCall := func(c *Span) { c.IsHTTP = true }
	gaveUp := map[string]func(c, s *Span){
		"gateway timeout 504": func(c, _ *Span) { httpCall(c); c.HTTPStatus, c.Status = 504, StatusError },
		"request timeout 408": func(c, _ *Span) { httpCall(c); c.HTTPStatus, c.Status = 408, StatusError },
		"grpc cancelled":      func(c, _ *Span) { c.GRPCStatus, c.Status = 1, StatusError },
		"grpc deadline":       func(c, _ *Span) { c.GRPCStatus, c.Status = 4, StatusError },
		"http no response":    func(c, _ *Span) { httpCall(c) },
		"context canceled":    func(c, _ *Span) { c.ErrorType, c.Status = "context canceled", StatusError },
		"java socket timeout": func(c, _ *Span) {
			c.ExceptionTypes, c.Status = []string{"java.net.SocketTimeoutException"}, StatusError
		},
		"node ETIMEDOUT":        func(c, _ *Span) { c.ErrorType, c.Status = "ETIMEDOUT", StatusError },
		"go i/o timeout":        func(c, _ *Span) { c.ErrorType, c.Status = "read tcp 10.0.0.1:5->10.0.0.2:80: i/o timeout", StatusError },
		"python TimeoutError":   func(c, _ *Span) { c.ExceptionTypes, c.Status = []string{"TimeoutError"}, StatusError },
		"deadline in a message": func(c, _ *Span) { c.Messages, c.Status = []string{"context deadline exceeded"}, StatusError },
	}
	for name, edit := range gaveUp {
		v := judge(edit)
		assert.Equal(t, LivenessOrphaned, v.Liveness, name)
		assert.InDelta(t, 4.0, v.AfterGone, 1e-9, name)
		assert.Equal(t, "gw", v.CallerService, name)
	}
	stayed := map[string]func(c, s *Span){
		"a 200 answered early": func(c, _ *Span) { httpCall(c); c.HTTPStatus = 200 },
		"a 500 is an answer":   func(c, _ *Span) { httpCall(c); c.HTTPStatus, c.Status = 500, StatusError },
		"grpc unavailable":     func(c, _ *Span) { c.GRPCStatus, c.Status = 14, StatusError },
		"a connection reset":   func(c, _ *Span) { httpCall(c); c.ErrorType, c.Status = "ECONNRESET", StatusError },
		"no code, not http":    func(*Span, *Span) {},
		"older http, no code":  func(*Span, *Span) {}, // http.method only: IsHTTP false
		"server within skew":   func(c, s *Span) { httpCall(c); s.End = c.End + sec/5 },
		"same service":         func(c, s *Span) { httpCall(c); s.Service = "gw" },
		"not a client":         func(c, _ *Span) { c.Kind = KindInternal; c.ErrorType = "timeout" },
	}
	for name, edit := range stayed {
		v := judge(edit)
		assert.Equal(t, LivenessLive, v.Liveness, name)
		assert.Empty(t, v.CallerService, name)
	}
}

// TestGaveUpSkewAndStart: the caller's end is on the caller's clock: a span of another service
// is compared with the clock-skew tolerance, a span of the caller's own service (a callback)
// exactly; started_after_gone counts from the caller's end.
func TestGaveUpSkewAndStart(t *testing.T) {
	root := sp(1, 0, "gw", KindServer, 0, 30)
	call := sp(2, 1, "gw", KindClient, 1, 5)
	call.IsHTTP = true // no response
	srv := sp(3, 2, "agent", KindServer, 1.1, 9)
	within := sp(4, 3, "agent", KindClient, 5.2, 5.24) // starts and ends within the tolerance
	after := sp(5, 3, "agent", KindClient, 5.3, 5.4)   // starts beyond it
	back := sp(6, 3, "gw", KindServer, 5.05, 5.1)      // a callback into the caller's service
	v := decide(t, DefaultConfig(), root, call, srv, within, after, back)
	assert.Equal(t, LivenessOrphaned, v[2].Liveness)
	assert.Equal(t, LivenessLive, v[3].Liveness)
	assert.False(t, v[3].StartedAfterGone)
	assert.Equal(t, LivenessOrphaned, v[4].Liveness)
	assert.True(t, v[4].StartedAfterGone)
	assert.Equal(t, LivenessOrphaned, v[5].Liveness, "the caller's own clock: compared exactly")
	assert.True(t, v[5].StartedAfterGone)
	assert.Empty(t, v[5].CallerService, "below an orphaned entry: not an edge of its own")
}

// TestGaveUpNeedsAGoneTime: a caller's end makes a gone time earlier, never makes one: without
// the root (or a deadline) the spans below stay unknown and their runs unknown_root (S9).
func TestGaveUpNeedsAGoneTime(t *testing.T) {
	call := sp(2, 1, "gw", KindClient, 1, 5) // its parent, the root, never arrives
	call.ErrorType, call.Status = "context canceled", StatusError
	srv := sp(3, 2, "agent", KindServer, 1.1, 9)
	chat := sp(4, 3, "agent", KindClient, 6, 8)
	v := decide(t, DefaultConfig(), call, srv, chat)
	assert.Equal(t, LivenessUnknown, v[1].Liveness)
	assert.Equal(t, LivenessUnknown, v[2].Liveness)
	assert.Equal(t, OutcomeUnknownRoot, v[2].Outcome)

	// A deadline above judges as before; the caller's earlier end judges below it.
	call.Deadline = t0 + 20*sec
	v = decide(t, DefaultConfig(), call, srv, chat)
	assert.Equal(t, LivenessOrphaned, v[1].Liveness)
	assert.InDelta(t, 4.0, v[1].AfterGone, 1e-9)
}
