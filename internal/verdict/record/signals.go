package record

import "strings"

// Result is how one attempt ended.
type Result uint8

// Attempt results: a success, a retryable failure, a hard failure, a cancellation.
const (
	ResultOK Result = iota
	ResultRetryable
	ResultHard
	ResultCancelled
)

// Signals reads what a span's attributes and records signal to the rules (a cancellation, a
// deadline, a retryable failure, an attempt, a model call), with the Config's lists compiled for
// lookups (CompileSignals). Its methods change nothing of a span but its classified records
// (Span.KeepClassified).
type Signals struct {
	cancel, deadline, retryable typeSet
	retryHTTP                   map[int]struct{}
	retryGRPC                   map[int]struct{}
	modelOps                    map[string]struct{}
}

// typeSet is a list of error.type / exception.type names compiled for matching (see match).
type typeSet struct {
	exact map[string]struct{} // lower-cased names
	// suffixes are the names that are exception or error class names ("...Exception",
	// "...Error"): a class whose name ends in one is taken as a subclass named by the usual
	// convention (kotlinx.coroutines.JobCancellationException is a CancellationException).
	suffixes []string
	// patterns are names with one '*' standing for any text ("task * was cancelled", the
	// message tokio's JoinError displays): prefix and suffix around it.
	patterns [][2]string
}

func compileTypes(vs []string) typeSet {
	t := typeSet{exact: make(map[string]struct{}, len(vs))}
	for _, v := range vs {
		v = strings.ToLower(strings.TrimSpace(v))
		if i := strings.IndexByte(v, '*'); i >= 0 {
			t.patterns = append(t.patterns, [2]string{v[:i], v[i+1:]})
			continue
		}
		t.exact[v] = struct{}{}
		if !strings.ContainsAny(v, " .:") && (strings.HasSuffix(v, "exception") || strings.HasSuffix(v, "error")) {
			t.suffixes = append(t.suffixes, v)
		}
	}
	return t
}

// CompileSignals compiles the lists of c that the signal readers look names up in.
func CompileSignals(c Config) Signals {
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
	return Signals{
		cancel:    compileTypes(c.CancelErrorTypes),
		deadline:  compileTypes(c.DeadlineErrorTypes),
		retryable: compileTypes(c.RetryableErrorTypes),
		retryHTTP: ints(c.RetryableHTTPStatus),
		retryGRPC: ints(c.RetryableGRPCStatus),
		modelOps:  set(c.ModelOperations),
	}
}

// matchExact reports whether an error or exception type is one of the set's names: as written,
// as its last dot-, colon- or '::'-separated segment ("asyncio.CancelledError" matches
// "CancelledError", "JoinError::Cancelled" matches "cancelled"), ignoring a trailing colon
// message ("context canceled: while reading body"), or by one of the set's '*' patterns.
func (t *typeSet) matchExact(v string) bool {
	if v == "" {
		return false
	}
	v = strings.ToLower(strings.TrimSpace(v))
	if _, ok := t.exact[v]; ok {
		return true
	}
	if seg := lastSegment(v); seg != v {
		if _, ok := t.exact[seg]; ok {
			return true
		}
	}
	if i := strings.IndexByte(v, ':'); i > 0 {
		if _, ok := t.exact[strings.TrimSpace(v[:i])]; ok {
			return true
		}
	}
	for _, p := range t.patterns {
		if len(v) >= len(p[0])+len(p[1]) && strings.HasPrefix(v, p[0]) && strings.HasSuffix(v, p[1]) {
			return true
		}
	}
	return false
}

// matchSubclass reports whether the last segment of v is a class name ending in one of the
// set's class names (JobCancellationException ends in CancellationException).
func (t *typeSet) matchSubclass(v string) bool {
	if len(t.suffixes) == 0 || v == "" {
		return false
	}
	seg := lastSegment(strings.ToLower(strings.TrimSpace(v)))
	for _, suf := range t.suffixes {
		if strings.HasSuffix(seg, suf) {
			return true
		}
	}
	return false
}

// lastSegment returns the text after the last '.' or ':' of v (v itself when there is none or
// nothing follows it).
func lastSegment(v string) string {
	if i := strings.LastIndexAny(v, ".:"); i >= 0 && i+1 < len(v) {
		return strings.TrimSpace(v[i+1:])
	}
	return v
}

// typeClass is what an error or exception type says about how the work ended.
type typeClass uint8

const (
	typeOther typeClass = iota
	typeCancel
	typeDeadline
)

// classify names what an error or exception type means. A name listed exactly (or by its last
// segment or a pattern) wins over a subclass match, so kotlinx.coroutines'
// TimeoutCancellationException, listed among the deadline types, is a deadline although its
// name ends in CancellationException.
func (r *Signals) classify(v string) typeClass {
	switch {
	case v == "":
		return typeOther
	case r.deadline.matchExact(v):
		return typeDeadline
	case r.cancel.matchExact(v):
		return typeCancel
	case r.deadline.matchSubclass(v):
		return typeDeadline
	case r.cancel.matchSubclass(v):
		return typeCancel
	}
	return typeOther
}

// recordsType reports whether the span's error.type, one of its exception types or one of its
// exception or status messages is of class. A message counts when it is, as a whole, by its
// text before the first colon, by its text after the last colon, or by a '*' pattern, one of
// the listed names: "context canceled", `Get "http://x/": context canceled` (Go's url.Error),
// "CANCELLED: io.grpc.Context was cancelled" (grpc-java), "task 42 was cancelled" (tokio).
//
// The span's records are classified once, by the first rule that asks (several rules ask of
// every attempt), and the classes found kept on the span (Span.recorded).
func (r *Signals) recordsType(s *Span, class typeClass) bool {
	if s.recorded&recordedKnown == 0 {
		s.recorded = recordedKnown | r.recordedClasses(s)
	}
	return s.recorded&recordedClass(class) != 0
}

// recordedTypes is the set of type classes a span's records show (Span.recorded).
type recordedTypes uint8

const (
	// recordedKnown: the span's records were classified.
	recordedKnown recordedTypes = 1 << iota
	recordedCancel
	recordedDeadline
)

// recordedClass is the bit of class in a recordedTypes (none for typeOther).
func recordedClass(class typeClass) recordedTypes {
	switch class {
	case typeCancel:
		return recordedCancel
	case typeDeadline:
		return recordedDeadline
	}
	return 0
}

// recordedClasses classifies each of the span's error.type, exception types and messages.
func (r *Signals) recordedClasses(s *Span) recordedTypes {
	got := recordedClass(r.classify(s.ErrorType))
	for _, t := range s.ExceptionTypes {
		got |= recordedClass(r.classify(t))
	}
	for _, m := range s.Messages {
		got |= recordedClass(r.classify(m))
	}
	return got
}

// gRPC status codes (grpc/doc/statuscodes.md).
const (
	GRPCStatusOK         = 0
	grpcCancelled        = 1
	grpcDeadlineExceeded = 4
)

// CancelSignal reports whether the span recorded that its caller went away: HTTP 499 (client
// closed request, nginx), gRPC CANCELLED, a cancellation error.type or exception (in any of the
// common languages: Go, Python, Java and Kotlin, C#, JavaScript, Swift, Rust), or an HTTP
// CLIENT span with unset status and no response status code (HTTP semantic conventions leave a
// deliberately cancelled client call that way).
func (r *Signals) CancelSignal(s *Span) bool {
	if s.HTTPStatus == 499 || s.GRPCStatus == grpcCancelled || r.recordsType(s, typeCancel) {
		return true
	}
	return SilentlyCancelledCall(s) || proxySawClientLeave(s)
}

// SilentlyCancelledCall reports whether s is an HTTP CLIENT span with unset status, no response
// status code and no error.type: recent HTTP conventions leave a deliberately cancelled client
// call that way (DESIGN.md "Words": end reason).
func SilentlyCancelledCall(s *Span) bool {
	return s.Kind == KindClient && s.IsHTTP && s.HTTPStatus == 0 && s.Status == StatusUnset && s.ErrorType == ""
}

// proxySawClientLeave reports whether a proxy recorded that its client disconnected (DESIGN.md
// "Words": end reason): Envoy's response_flags containing DC (downstream connection
// termination), or an HTTP status code of 0 recorded with an error (Envoy's span for a request
// whose client left before any response, and the proxy's upstream request reset with it).
// nginx's 499 is cancelSignal's HTTP 499.
func proxySawClientLeave(s *Span) bool {
	if hasFlag(s.ResponseFlags, "DC") {
		return true
	}
	return s.HTTPStatusZero && (s.Status == StatusError || s.ErrorTag || s.ErrorType != "")
}

// hasFlag reports whether Envoy's comma-separated response flags include flag.
func hasFlag(flags, flag string) bool {
	for flags != "" {
		f := flags
		if i := strings.IndexByte(flags, ','); i >= 0 {
			f, flags = flags[:i], flags[i+1:]
		} else {
			flags = ""
		}
		if strings.TrimSpace(f) == flag {
			return true
		}
	}
	return false
}

// DeadlineSignal reports whether the span recorded a passed deadline: gRPC DEADLINE_EXCEEDED
// or a deadline error.type or exception.
func (r *Signals) DeadlineSignal(s *Span) bool {
	return s.GRPCStatus == grpcDeadlineExceeded || r.recordsType(s, typeDeadline)
}

// NoticeSignal reports whether the span recorded the cancellation or a passed deadline.
func (r *Signals) NoticeSignal(s *Span) bool { return r.CancelSignal(s) || r.DeadlineSignal(s) }

// GaveUpWithoutResponse reports whether a CLIENT span ended without a response (DESIGN.md
// "Words": a caller that gave up): it recorded a cancellation or a passed deadline
// (noticeSignal: HTTP 499, gRPC CANCELLED or DEADLINE_EXCEEDED, a cancellation or deadline
// type, an HTTP client span with unset status and no response status code), a timeout error
// (timeoutError), or a gateway timeout, HTTP 504 or 408. Any other response is one: a caller
// that got it did not give up. A protocol that records no code (a span that is not HTTP) gives
// up only by an error.
func (r *Signals) GaveUpWithoutResponse(s *Span) bool {
	return s.HTTPStatus == 504 || s.HTTPStatus == 408 || r.NoticeSignal(s) || timeoutError(s)
}

// timeoutError reports whether the span's error.type or one of its exception types names a
// timeout: its last segment contains "timeout" or "timedout", without case (Python's
// ReadTimeout, ConnectTimeout and TimeoutError, openai.APITimeoutError, Java's
// SocketTimeoutException, .NET's TimeoutException, Go's "i/o timeout", Node's ETIMEDOUT, the
// semantic conventions' "timeout").
func timeoutError(s *Span) bool {
	if namesTimeout(s.ErrorType) {
		return true
	}
	for _, t := range s.ExceptionTypes {
		if namesTimeout(t) {
			return true
		}
	}
	return false
}

func namesTimeout(v string) bool {
	if v == "" {
		return false
	}
	seg := lastSegment(strings.ToLower(strings.TrimSpace(v)))
	return strings.Contains(seg, "timeout") || strings.Contains(seg, "timedout")
}

// Failed reports whether the span records an error of any kind.
func Failed(s *Span) bool {
	return s.Status == StatusError || s.HTTPStatus >= 400 || s.GRPCStatus > GRPCStatusOK || s.ErrorType != "" || s.ErrorTag
}

// AttemptResult classifies how one attempt ended.
func (r *Signals) AttemptResult(s *Span) Result {
	if r.NoticeSignal(s) {
		return ResultCancelled
	}
	if !Failed(s) {
		return ResultOK
	}
	if s.HTTPStatus >= 400 {
		if _, ok := r.retryHTTP[s.HTTPStatus]; ok {
			return ResultRetryable
		}
		return ResultHard
	}
	if s.GRPCStatus > GRPCStatusOK {
		if _, ok := r.retryGRPC[s.GRPCStatus]; ok {
			return ResultRetryable
		}
		return ResultHard
	}
	if r.retryable.matchExact(s.ErrorType) {
		return ResultRetryable
	}
	for _, t := range s.ExceptionTypes { // litellm.RateLimitError recorded as an exception
		if r.retryable.matchExact(t) {
			return ResultRetryable
		}
	}
	return ResultHard
}

// IsModelCall reports whether the span itself is a model call candidate: it names a model and
// carries token usage or a model operation name.
func (r *Signals) IsModelCall(s *Span) bool {
	if s.Model == "" {
		return false
	}
	if s.InputTokens >= 0 || s.OutputTokens >= 0 {
		return true
	}
	_, ok := r.modelOps[strings.ToLower(s.Operation)]
	return ok
}

// IsAttempt reports whether a span is one try of an operation (docs/verdicts.md "Which spans
// are attempts"): CLIENT and PRODUCER spans, deliveries of a known message (isDelivery), model
// calls and other GenAI operations, tool calls (an agent framework's INTERNAL tool-call span
// is work like any call), and spans that carry an attempt number. A SERVER span is never an
// attempt, whatever it carries (gen_ai.tool.name on a tool server's span included): it is the
// callee's side of one (DESIGN.md "Words": attempt).
func (r *Signals) IsAttempt(s *Span) bool {
	switch s.Kind {
	case KindServer:
		return false
	case KindClient, KindProducer:
		return true
	case KindConsumer:
		return IsDelivery(s)
	}
	return s.Operation != "" || s.ToolCall || s.ResendCount >= 0 || s.Attempt > 0 || r.IsModelCall(s)
}

// IsDelivery reports whether s delivers a known message to a CONSUMER: its message identity
// (MessageHash) or a configured idempotency key names it, so that a redelivery of the same
// message (its ack or commit lost) is another attempt of the same run (DESIGN.md "Words": run).
func IsDelivery(s *Span) bool {
	return s.Kind == KindConsumer && (s.MessageHash != 0 || s.KeyHash != 0)
}
