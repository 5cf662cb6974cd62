package verdict

import "strings"

// result is how one attempt ended.
type result uint8

const (
	resultOK result = iota
	resultRetryable
	resultHard
	resultCancelled
)

// rules are the Config's lists compiled for lookups.
type rules struct {
	cancel, deadline, retryable map[string]struct{}
	retryHTTP                   map[int]struct{}
	retryGRPC                   map[int]struct{}
	modelOps                    map[string]struct{}
}

func compileRules(c Config) rules {
	set := func(vs []string) map[string]struct{} {
		m := make(map[string]struct{}, len(vs))
		for _, v := range vs {
			m[strings.ToLower(strings.TrimSpace(v))] = struct{}{}
		}
		return m
	}
	ints := func(vs []int) map[int]struct{} {
		m := make(map[int]struct{}, len(vs))
		for _, v := range vs {
			m[v] = struct{}{}
		}
		return m
	}
	return rules{
		cancel:    set(c.CancelErrorTypes),
		deadline:  set(c.DeadlineErrorTypes),
		retryable: set(c.RetryableErrorTypes),
		retryHTTP: ints(c.RetryableHTTPStatus),
		retryGRPC: ints(c.RetryableGRPCStatus),
		modelOps:  set(c.ModelOperations),
	}
}

// matchType reports whether an error or exception type is in set, also as the last
// dot-separated segment ("asyncio.CancelledError" matches "CancelledError") and ignoring a
// trailing colon message ("context canceled: while reading body").
func matchType(set map[string]struct{}, v string) bool {
	if v == "" {
		return false
	}
	v = strings.ToLower(strings.TrimSpace(v))
	if _, ok := set[v]; ok {
		return true
	}
	if i := strings.LastIndexAny(v, ".:"); i >= 0 && i+1 < len(v) {
		if _, ok := set[strings.TrimSpace(v[i+1:])]; ok {
			return true
		}
	}
	if i := strings.IndexByte(v, ':'); i > 0 {
		if _, ok := set[strings.TrimSpace(v[:i])]; ok {
			return true
		}
	}
	return false
}

// gRPC status codes (grpc/doc/statuscodes.md).
const (
	grpcOK               = 0
	grpcCancelled        = 1
	grpcDeadlineExceeded = 4
)

// cancelSignal reports whether the span recorded that its caller went away: HTTP 499 (client
// closed request, nginx), gRPC CANCELLED, a cancellation error.type or exception, or an HTTP
// CLIENT span with unset status and no response status code (HTTP semantic conventions leave a
// deliberately cancelled client call that way).
func (r *rules) cancelSignal(s *Span) bool {
	if s.HTTPStatus == 499 || s.GRPCStatus == grpcCancelled || matchType(r.cancel, s.ErrorType) {
		return true
	}
	for _, t := range s.ExceptionTypes {
		if matchType(r.cancel, t) {
			return true
		}
	}
	return s.Kind == KindClient && s.IsHTTP && s.HTTPStatus == 0 && s.Status == StatusUnset && s.ErrorType == ""
}

// deadlineSignal reports whether the span recorded a passed deadline: gRPC DEADLINE_EXCEEDED
// or a deadline error.type or exception.
func (r *rules) deadlineSignal(s *Span) bool {
	if s.GRPCStatus == grpcDeadlineExceeded || matchType(r.deadline, s.ErrorType) {
		return true
	}
	for _, t := range s.ExceptionTypes {
		if matchType(r.deadline, t) {
			return true
		}
	}
	return false
}

// failed reports whether the span records an error of any kind.
func failed(s *Span) bool {
	return s.Status == StatusError || s.HTTPStatus >= 400 || s.GRPCStatus > grpcOK || s.ErrorType != ""
}

// attemptResult classifies how one attempt ended.
func (r *rules) attemptResult(s *Span) result {
	if r.cancelSignal(s) || r.deadlineSignal(s) {
		return resultCancelled
	}
	if !failed(s) {
		return resultOK
	}
	if s.HTTPStatus >= 400 {
		if _, ok := r.retryHTTP[s.HTTPStatus]; ok {
			return resultRetryable
		}
		return resultHard
	}
	if s.GRPCStatus > grpcOK {
		if _, ok := r.retryGRPC[s.GRPCStatus]; ok {
			return resultRetryable
		}
		return resultHard
	}
	if matchType(r.retryable, s.ErrorType) {
		return resultRetryable
	}
	return resultHard
}

// isModelCall reports whether the span itself is a model call candidate: it names a model and
// carries token usage or a model operation name.
func (r *rules) isModelCall(s *Span) bool {
	if s.Model == "" {
		return false
	}
	if s.InputTokens >= 0 || s.OutputTokens >= 0 {
		return true
	}
	_, ok := r.modelOps[strings.ToLower(s.Operation)]
	return ok
}

// isAttempt reports whether a span is one try of an operation (docs/verdicts.md).
func (r *rules) isAttempt(s *Span) bool {
	switch s.Kind {
	case KindClient, KindProducer:
		return true
	}
	return s.Operation != "" || s.ResendCount >= 0 || s.Attempt > 0 || r.isModelCall(s)
}
