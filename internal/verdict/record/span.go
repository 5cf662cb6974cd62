// Package record holds what the verdict core reads and writes of a span, and what a span's
// records signal: the [Span] a reader fills, its IDs, kinds and [TargetHash]; the [Verdict] and
// its values (liveness, outcome, end reason, validity); the [Config] and its validation; the
// attribute names the readers read; and the signal readers of the rules ([Rules]: cancellation,
// deadline, retryable and model-call signals, compiled from the Config). It imports nothing of
// the core: the rules (in package verdict) and the time model build on it, never the other way.
//
// Package verdict re-exports every exported name here (type aliases), so that readers and
// components import verdict alone.
package record

import "strconv"

// TraceID is a 16-byte W3C trace ID. The all-zero value is invalid.
type TraceID [16]byte

// SpanID is an 8-byte W3C span ID. The all-zero value means "none" for a parent.
type SpanID [8]byte

// IsZero reports whether the trace ID is all zeroes (invalid by the W3C Trace Context spec).
func (t TraceID) IsZero() bool { return t == TraceID{} }

// IsZero reports whether the span ID is all zeroes.
func (s SpanID) IsZero() bool { return s == SpanID{} }

// Kind is the OpenTelemetry span kind.
type Kind uint8

// Span kinds, as in the OpenTelemetry trace API.
const (
	KindUnspecified Kind = iota
	KindInternal
	KindServer
	KindClient
	KindProducer
	KindConsumer
)

// Status is the OpenTelemetry span status code.
type Status uint8

// Status codes, as in the OpenTelemetry trace API.
const (
	StatusUnset Status = iota
	StatusOK
	StatusError
)

// Link is a span link: the span it points to, possibly in another trace.
type Link struct {
	TraceID TraceID
	SpanID  SpanID
}

// Span holds what the correlator reads of one span. Readers fill it from span attributes
// following the OpenTelemetry semantic conventions (see the field docs for the attribute each
// field comes from by default); absent values use the documented sentinel.
type Span struct {
	TraceID  TraceID
	SpanID   SpanID
	ParentID SpanID // zero when the span has no parent (a root)
	Service  string // resource attribute service.name
	Name     string
	// Start and End are unix nanoseconds. Zero means unknown; End before Start is malformed.
	Start, End int64
	// Status and the one-byte fields after it are kept together: one word in all.
	Status Status
	// recorded caches what the span's error.type, exception types and messages record
	// (recordsType): set by the first rule that asks, as the records never change.
	recorded recordedTypes
	// future is set when the span came to the correlator with a clock (Release, ReleaseLast,
	// DecideAt, ObserveAt) ending beyond that clock plus FutureTolerance (markFuture): decided
	// once, when it came, and kept with its record, so that a later release does not judge it
	// otherwise.
	future bool
	// Kind is the span kind.
	Kind Kind
	// IsHTTP is true when the span follows the stable HTTP conventions (http.request.method
	// present).
	IsHTTP bool
	// HTTPStatusZero is set when an HTTP status code attribute is present with the value 0: a
	// proxy (Envoy) records that for a request whose client left before any response.
	HTTPStatusZero bool
	// ErrorTag is set when the span carries the `error` tag of the Zipkin and OpenTracing
	// conventions (true, or the string "true"), as Envoy writes it.
	ErrorTag bool
	// ToolCall is true for a tool call: a span with gen_ai.tool.name or gen_ai.tool.call.id
	// (GenAI semantic conventions, execute_tool) or the Vercel AI SDK's ai.toolCall.name /
	// ai.toolCall.id.
	ToolCall bool
	// HasCost tells that Cost holds a cost read from the span.
	HasCost bool
	// Links are the span's links.
	Links []Link

	// HTTPStatus is http.response.status_code (or the older http.status_code); 0 when absent.
	HTTPStatus int
	// GRPCStatus is the gRPC status code from rpc.grpc.status_code or rpc.status_code (numeric
	// or its canonical name); -1 when absent.
	GRPCStatus int
	// ErrorType is error.type; empty when absent.
	ErrorType string
	// ExceptionTypes are exception.type values of the span's exception events (and of
	// exception.type attributes), used to recognise cancellation exceptions.
	ExceptionTypes []string
	// Messages are the exception.message values of the span's exception events (and of an
	// exception.message attribute) and its status message. Some languages say a cancellation
	// only there: Go's span.RecordError(ctx.Err()) records type *errors.errorString with
	// message "context canceled"; grpc-java "CANCELLED: ..."; tokio "task 42 was cancelled".
	Messages []string
	// ResendCount is http.request.resend_count, or gRPC's grpc-previous-rpc-attempts (gRFC A6:
	// the number of earlier tries of a retried or hedged call); -1 when absent.
	ResendCount int
	// Attempt is the 1-based attempt number from a configured attempt attribute; 0 when absent.
	Attempt int
	// KeyHash is a 64-bit hash of the idempotency key (never the key itself); 0 when absent.
	KeyHash uint64
	// MessageHash is a 64-bit hash of the identity of the message a CONSUMER span delivers:
	// messaging.message.id, else Kafka's destination, partition and offset; 0 when unknown (a
	// Kafka message key alone is a partitioning key shared by many messages: not an identity).
	// Deliveries of one message are attempts of one run (queue redelivery).
	MessageHash uint64
	// ResponseFlags is Envoy's response_flags ("DC" for a downstream connection termination,
	// "UC,URX" and so on); empty when absent.
	ResponseFlags string
	// Target names what the span calls, as the hash of its text (server.address[:port],
	// rpc.service/rpc.method, messaging.destination.name, or the requested model): built from
	// those parts without joining them (TargetHash); 0 when unknown. Only run grouping reads it
	// (opKey), so the text itself is never needed.
	Target TargetHash
	// Operation is gen_ai.operation.name; empty when absent.
	Operation string
	// Deadline is an absolute deadline carried by the span, unix nanoseconds; 0 when none.
	// Readers convert relative timeouts (grpc-timeout, x-envoy-expected-rq-timeout-ms) by adding
	// them to Start.
	Deadline int64
	// Model is gen_ai.response.model, else gen_ai.request.model, else a configured alias.
	Model string
	// InputTokens and OutputTokens are the token usage; -1 when absent or invalid.
	InputTokens, OutputTokens int64
	// Cost is a cost in USD read from a configured cost attribute, valid when HasCost.
	Cost float64
	// Extra is the reader's own, opaque to the correlator: kept with the span's record when
	// its verdict may be carried later, and returned with it in [Carried] (the processor keeps
	// the attributes that name the span's operation there).
	Extra any
}

// Future reports whether the span came to the correlator with a clock it ended beyond, plus
// FutureTolerance (MarkFuture): such a span is invalid (end_in_future) for good.
func (s *Span) Future() bool { return s.future }

// MarkFuture notes that the span came to the correlator with a clock it ended beyond, plus
// FutureTolerance. Only the correlator marks spans; readers leave them unmarked.
func (s *Span) MarkFuture() { s.future = true }

// KeepClassified copies to s what the rules found in the records of from, a copy of the same
// span (the classes of its error.type, exception types and messages, classified once by the
// first rule that asks), so that they are not classified again.
func (s *Span) KeepClassified(from *Span) { s.recorded = from.recorded }

// TargetHash is FNV-1a (hash/fnv's New64a) over a span's target text, fed part by part so that
// "service" + "/" + "method" hashes as the joined string would, without building it:
// NewTargetHash().Add(service).Add("/").Add(method). The zero value means no target.
type TargetHash uint64

// FNV-1a's 64-bit offset basis and prime (hash/fnv's New64a): the one place they are written.
const fnvOffset64, fnvPrime64 = 14695981039346656037, 1099511628211

// NewTargetHash returns the hash of the empty text (FNV-1a's offset basis), to Add parts to.
func NewTargetHash() TargetHash { return fnvOffset64 }

// Add returns h extended by the bytes of part.
func (h TargetHash) Add(part string) TargetHash {
	for i := 0; i < len(part); i++ {
		h = h.AddByte(part[i])
	}
	return h
}

// AddByte returns h extended by b: one FNV-1a step.
func (h TargetHash) AddByte(b byte) TargetHash { return (h ^ TargetHash(b)) * fnvPrime64 }

// AddInt returns h extended by the decimal digits of n, as strconv.FormatInt(n, 10) would
// write them.
func (h TargetHash) AddInt(n int64) TargetHash {
	var buf [20]byte
	for _, b := range strconv.AppendInt(buf[:0], n, 10) {
		h = h.AddByte(b)
	}
	return h
}
