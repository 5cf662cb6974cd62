package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRetryableConnectionAndTimeoutErrorsByDefault: the connection and timeout errors DESIGN.md
// lists ("Run outcomes") are retryable in the defaults, as error.type or as an exception type,
// by their last segment; an error the list does not name stays a hard failure.
func TestRetryableConnectionAndTimeoutErrorsByDefault(t *testing.T) {
	retryable := []string{
		"ReadTimeout", "httpx.ReadTimeout", "requests.exceptions.ConnectTimeout", "TimeoutError",
		"builtins.TimeoutError", "openai.APITimeoutError", "openai.APIConnectionError",
		"anthropic.APITimeoutError", "java.net.SocketTimeoutException", "System.TimeoutException",
		"dial tcp 10.0.0.7:443: i/o timeout", "i/o timeout", "ETIMEDOUT", "ECONNRESET",
	}
	judge := func(edit func(*Span)) Verdict {
		root := sp(1, 0, "gw", KindServer, 0, 10)
		call := sp(2, 1, "gw", KindClient, 0.1, 1)
		call.Status = StatusError
		edit(&call)
		return decide(t, DefaultConfig(), root, call)[1]
	}
	for _, typ := range retryable {
		v := judge(func(s *Span) { s.ErrorType = typ })
		assert.Equal(t, OutcomeRetryableFailure, v.Outcome, "error.type %q", typ)
		v = judge(func(s *Span) { s.ExceptionTypes = []string{typ} })
		assert.Equal(t, OutcomeRetryableFailure, v.Outcome, "exception type %q", typ)
	}
	for _, typ := range []string{"ValueError", "java.lang.IllegalStateException", "openai.BadRequestError", "ETIMEDOUTX"} {
		v := judge(func(s *Span) { s.ErrorType = typ })
		assert.Equal(t, OutcomeHardFailure, v.Outcome, "error.type %q", typ)
	}

	// A Python loop's timed-out try is retried: the next try belongs to the same run.
	root := sp(1, 0, "gw", KindServer, 0, 10)
	a1 := sp(2, 1, "gw", KindClient, 0.1, 1)
	a1.Status, a1.ExceptionTypes = StatusError, []string{"openai.APITimeoutError"}
	a2 := sp(3, 1, "gw", KindClient, 2, 3)
	v := decide(t, DefaultConfig(), root, a1, a2)
	assert.Equal(t, OutcomeNone, v[1].Outcome)
	assert.Equal(t, 2, v[2].Attempt)
	assert.Equal(t, OutcomeSuccess, v[2].Outcome)
}
