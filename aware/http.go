package aware

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// ErrDeadlinePassed is the error of a dispatch refused because the deadline had already
// passed: the article's "deadline already passed before dispatch". It wraps
// context.DeadlineExceeded, and its error.type is "context deadline exceeded".
var ErrDeadlinePassed error = deadlinePassed{}

type deadlinePassed struct{}

var errNotDispatched = errors.New("caller gone before dispatch")

func (deadlinePassed) Error() string     { return "deadline already passed before dispatch" }
func (deadlinePassed) Unwrap() error     { return context.DeadlineExceeded }
func (deadlinePassed) ErrorType() string { return context.DeadlineExceeded.Error() }

// Timeout makes net.Error-style checks treat the refusal as a timeout.
func (deadlinePassed) Timeout() bool { return true }

// HandlerOption configures [Handler].
type HandlerOption func(*handlerConfig)

type handlerConfig struct {
	record   bool
	reject   bool
	readBody int64
	now      func() time.Time
}

// WithDeadlineAttribute makes [Handler] record the deadline it applied on the request's span
// (the SERVER span, when the handler sits inside otelhttp.NewHandler) as
// http.request.header.x-deadline in unix seconds, whichever header it came from: the
// attribute the orphan processor reads deadlines from by default.
func WithDeadlineAttribute() HandlerOption { return func(c *handlerConfig) { c.record = true } }

// WithRejectPassed makes [Handler] answer 504 Gateway Timeout itself, without calling the
// next handler, when the request arrives with a deadline that has already passed. By default
// the next handler runs with a context that is already done, so that its own code (and its
// span) records the stop.
func WithRejectPassed() HandlerOption { return func(c *handlerConfig) { c.reject = true } }

// WithReadBody makes [Handler] read the request body (at most maxBytes of it, and one byte
// more to see whether that is all) into memory
// before calling the next handler, which reads it from there: with the body read to EOF, Go's
// HTTP/1.x server watches the connection from the start, and r.Context() is cancelled as soon
// as the client disconnects (see Handler's body-read rule). A body longer than maxBytes is not
// read beyond it (the next handler reads the rest from the connection, and the rule applies as
// without this option). An error reading the body is returned by the next handler's reads.
func WithReadBody(maxBytes int64) HandlerOption {
	return func(c *handlerConfig) { c.readBody = maxBytes }
}

// Handler reads the deadline a request carries as data into its context: X-Deadline (unix
// seconds), grpc-timeout (gRPC spec format, relative to arrival) and
// x-envoy-expected-rq-timeout-ms (Envoy, relative to arrival); see [DeadlineFromHeader]. The
// earliest wins, and so does a deadline the request's context already had. A deadline that
// has already passed gives a context that is done at once. Header values that do not parse are
// ignored. Requests without any of the headers pass through unchanged.
//
// The body-read rule. The context only tells a handler that the caller has gone if the server
// notices it, and Go's net/http server (HTTP/1.x) notices a client disconnect, and cancels
// r.Context(), only once the handler has read the request body to EOF: until then the server
// does not read from the connection (the bytes there belong to the body), so a handler that
// starts long work without reading the body waits on r.Context() in vain while the client is
// gone. Requests without a body (a GET) are watched from the start. EnableFullDuplex of
// [http.ResponseController] does not change this. What does:
//
//   - read (or decode) the body to EOF before the long work, then drain what is left:
//     io.Copy(io.Discard, r.Body) after json.NewDecoder(r.Body).Decode(&v); or
//     [WithReadBody], which does it for the handler;
//   - or, for a handler that streams its answer, write and flush progress
//     (http.NewResponseController(w).Flush()): a write that fails because the client is gone
//     cancels r.Context() too.
//
// HTTP/2 servers cancel the context when the client resets the stream, body read or not.
// (Measured on loopback servers in TestHandlerBodyReadRule and
// TestHandlerHTTP2NoticesWithoutBodyRead; see ExampleHandler_bodyReadRule.)
func Handler(next http.Handler, opts ...HandlerOption) http.Handler {
	c := handlerConfig{now: time.Now}
	for _, o := range opts {
		o(&c)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.readBody > 0 && r.Body != nil && r.Body != http.NoBody {
			r = readBody(r, c.readBody)
		}
		now := c.now()
		dl, _, ok, _ := DeadlineFromHeader(r.Header, now)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if c.record {
			trace.SpanFromContext(r.Context()).SetAttributes(
				attribute.StringSlice(AttrDeadline, []string{FormatUnixSeconds(dl)}))
		}
		if c.reject && !now.Before(dl) {
			http.Error(w, ErrDeadlinePassed.Error(), http.StatusGatewayTimeout)
			return
		}
		ctx, cancel := context.WithDeadline(r.Context(), dl)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Transport is an http.RoundTripper that carries the deadline as data: on every request whose
// context has a deadline it writes X-Deadline (unix seconds; the earlier of the context's
// deadline and an X-Deadline the request already has), and it refuses to send a request
// whose context is done ([context.Canceled]) or whose deadline has passed
// ([ErrDeadlinePassed]). When the request's context carries an [Attempt] it sets the
// Idempotency-Key header (unless present) and claims the attempt for the span in the
// request's context, otelhttp's, which it annotates ([AnnotateSpan]): the loop then makes no
// span of its own for the attempt. A transport error caused by
// the context ending unwraps to the context's error and has it as its error.type, so that
// otelhttp records "context canceled" or "context deadline exceeded" on its span.
//
// Place it inside otelhttp's transport, so that the span it annotates is otelhttp's CLIENT
// span for this request and the refusal is recorded there:
//
//	client := &http.Client{Transport: otelhttp.NewTransport(&aware.Transport{})}
type Transport struct {
	// Base sends the requests (nil: http.DefaultTransport).
	Base http.RoundTripper
	// RecordDeadline records the X-Deadline sent as http.request.header.x-deadline on the span
	// in the request's context.
	RecordDeadline bool
	// GRPCTimeout also writes the remaining time as grpc-timeout (for gRPC-aware proxies and
	// servers); it is measured when the request is sent.
	GRPCTimeout bool

	now func() time.Time
}

// NewTransport returns a Transport sending through base that records the deadline on spans.
func NewTransport(base http.RoundTripper) *Transport {
	return &Transport{Base: base, RecordDeadline: true}
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	now := time.Now
	if t.now != nil {
		now = t.now
	}
	closeBody := func() {
		if r.Body != nil {
			_ = r.Body.Close()
		}
	}
	if err := ctx.Err(); err != nil {
		closeBody()
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, ErrDeadlinePassed
		}
		return nil, &stoppedError{ctxErr: err, err: errNotDispatched}
	}
	dl, hasDL := ctx.Deadline()
	if hasDL {
		if v := r.Header.Get(HeaderDeadline); v != "" {
			if h, err := ParseUnixSeconds(v); err == nil && h.Before(dl) {
				dl = h
			}
		}
		if !now().Before(dl) {
			closeBody()
			return nil, ErrDeadlinePassed
		}
	}
	a, isAttempt := AttemptFromContext(ctx)
	needKey := isAttempt && a.IdempotencyKey != "" && r.Header.Get(HeaderIdempotencyKey) == ""
	if hasDL || needKey {
		r = r.Clone(ctx) // RoundTrippers must not modify the caller's request
		if hasDL {
			v := FormatUnixSeconds(dl)
			r.Header.Set(HeaderDeadline, v)
			if t.GRPCTimeout {
				r.Header.Set(HeaderGRPCTimeout, FormatGRPCTimeout(dl.Sub(now())))
			}
			if t.RecordDeadline {
				trace.SpanFromContext(ctx).SetAttributes(attribute.StringSlice(AttrDeadline, []string{v}))
			}
		}
		if needKey {
			r.Header.Set(HeaderIdempotencyKey, a.IdempotencyKey)
		}
	}
	if isAttempt {
		AnnotateSpan(ctx)
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			err = &stoppedError{ctxErr: cerr, err: err}
		}
		return nil, err
	}
	return resp, nil
}

// stoppedError is a transport error caused by the request's context ending. It unwraps to the
// context's error, and names it as its error.type: otelhttp records the ErrorType of the error
// a transport returns, else its Go type, which for context.Canceled is *errors.errorString.
type stoppedError struct {
	ctxErr error
	err    error
}

func (e *stoppedError) Error() string     { return e.ctxErr.Error() + ": " + e.err.Error() }
func (e *stoppedError) Unwrap() []error   { return []error{e.ctxErr, e.err} }
func (e *stoppedError) ErrorType() string { return e.ctxErr.Error() }

// readBody reads at most limit bytes of r's body into memory and returns r with a body that
// reads them back (then the rest, if any, or the read error).
func readBody(r *http.Request, limit int64) *http.Request {
	var buf bytes.Buffer
	_, err := io.Copy(&buf, io.LimitReader(r.Body, limit+1)) // one more byte: is that the end?
	var rest io.Reader
	switch {
	case err != nil:
		rest = errReader{err}
	case int64(buf.Len()) > limit:
		rest = r.Body // maybe more: read on from the connection
	default:
		rest = strings.NewReader("") // EOF reached: the server now watches the connection
	}
	r2 := r.Clone(r.Context())
	r2.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(&buf, rest), r.Body}
	return r2
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
