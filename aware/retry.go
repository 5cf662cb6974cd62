package aware

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	backoff "github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Stage tells where a loop was when it noticed that its caller had gone.
type Stage string

// Stages of a [CancelError].
const (
	// BeforeDispatch: the context was done (or its deadline had passed) when the next attempt
	// was due; the attempt was not made. The article's "abandoned after N attempts".
	BeforeDispatch Stage = "before dispatch"
	// DuringBackoff: the context ended while the loop waited between two attempts; the wait was
	// cut short. The article's "abandoned during backoff".
	DuringBackoff Stage = "during backoff"
	// DuringAttempt: the attempt in flight failed because the context ended (the HTTP client
	// or gRPC call gave up on it).
	DuringAttempt Stage = "during attempt"
)

// CancelError is the error of a loop that stopped because its caller went away: the context
// was cancelled or its deadline passed. errors.Is(err, context.Canceled) or
// errors.Is(err, context.DeadlineExceeded) tells which; errors.As gives the details.
type CancelError struct {
	// Attempts is the number of attempts dispatched before the loop stopped (0: none was).
	Attempts int
	// Stage is where the loop was when it stopped.
	Stage Stage
	// Err is the context's error: context.Canceled or context.DeadlineExceeded.
	Err error
	// Cause is context.Cause of the context when it differs from Err (a cause given to
	// context.WithCancelCause), else nil.
	Cause error
	// Last is the error of the last attempt, if one was made and failed.
	Last error
}

// Error reads like the article's Cancelled messages: "abandoned during backoff after 2
// attempts: context canceled".
func (e *CancelError) Error() string {
	s := fmt.Sprintf("abandoned %s after %d attempt%s: %v", e.Stage, e.Attempts, plural(e.Attempts), e.Err)
	if e.Cause != nil {
		s += " (" + e.Cause.Error() + ")"
	}
	return s
}

// Unwrap returns the context's error, the cause and the last attempt's error (those present).
func (e *CancelError) Unwrap() []error {
	out := []error{e.Err}
	if e.Cause != nil {
		out = append(out, e.Cause)
	}
	if e.Last != nil {
		out = append(out, e.Last)
	}
	return out
}

// ErrorType is the error.type this error is recorded with ([ErrorType]): "context canceled" or
// "context deadline exceeded", the values the orphan processor reads as a noticed cancellation.
// go.opentelemetry.io/otel/semconv's ErrorType, which otelhttp uses, reads it too.
func (e *CancelError) ErrorType() string { return ErrorType(e.Err) }

// ExhaustedError is the error of a loop that gave up: the policy said stop
// ([backoff.Stop]) or the maximum number of attempts was reached. It unwraps to the last
// attempt's error.
type ExhaustedError struct {
	Attempts int
	Last     error
}

// Error reads "retries exhausted after 5 attempts: <last error>".
func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("retries exhausted after %d attempt%s: %v", e.Attempts, plural(e.Attempts), e.Last)
}

// Unwrap returns the last attempt's error.
func (e *ExhaustedError) Unwrap() error { return e.Last }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// ErrorType returns the error.type this package records for err: "context canceled" and
// "context deadline exceeded" for context errors anywhere in its chain (deadline first), the
// ErrorType() string of an error that has one, else the Go type of err ("*net.OpError").
func ErrorType(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded.Error()
	case errors.Is(err, context.Canceled):
		return context.Canceled.Error()
	}
	var et interface{ ErrorType() string }
	if errors.As(err, &et) {
		if s := et.ErrorType(); s != "" {
			return s
		}
	}
	return fmt.Sprintf("%T", err)
}

// Retryable reports whether err is worth another attempt under the default classifier: every
// error is, except a nil one, context errors (the caller is gone, or the attempt's own context
// ended), [backoff.Permanent] errors, and errors that say otherwise through a
// Retryable() bool method (such as [*StatusError]).
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var p *backoff.PermanentError
	if errors.As(err, &p) {
		return false
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	return true
}

// RetryableHTTPStatus is the HTTP classification the orphan processor uses: 408, 425, 429 and
// every 5xx but 501 are worth retrying.
func RetryableHTTPStatus(code int) bool {
	return code == 408 || code == 425 || code == 429 || (code >= 500 && code <= 599 && code != 501)
}

// StatusError is an HTTP answer that is not a success, for attempt functions to return
// ([CheckResponse] returns one for a retryable status). It is retryable when
// [RetryableHTTPStatus] says so. With HasRetryAfter, the loop waits RetryAfter before the next
// attempt instead of asking its backoff policy (and resets the policy), as for a
// [backoff.RetryAfterError].
type StatusError struct {
	// Code is the HTTP status code.
	Code int
	// RetryAfter is the wait the server asked for (Retry-After), when HasRetryAfter.
	RetryAfter time.Duration
	// HasRetryAfter tells that RetryAfter is set (a Retry-After of 0 means "retry now").
	HasRetryAfter bool
}

// Error reads "HTTP status 503".
func (e *StatusError) Error() string { return fmt.Sprintf("HTTP status %d", e.Code) }

// Retryable reports whether the status is worth another attempt.
func (e *StatusError) Retryable() bool { return RetryableHTTPStatus(e.Code) }

// ErrorType is the status code, as the HTTP semantic conventions write error.type for one.
func (e *StatusError) ErrorType() string { return fmt.Sprint(e.Code) }

// Option configures [Retry] and [Do]. Options are applied in order; a later one wins.
type Option func(*config)

type config struct {
	policy      backoff.BackOff
	maxAttempts int
	retryable   func(error) bool
	tp          trace.TracerProvider
	name        string
	attemptName string
	attemptKind trace.SpanKind
	loopSpan    bool
	spans       spanMode
	attemptAttr attribute.Key
	key         string
	noKey       bool
	recordKey   bool
	onRetry     func(attempt int, err error, wait time.Duration)
	now         func() time.Time
}

// WithBackOff sets the backoff policy (default [NewExponentialBackOff]). The loop calls Reset
// before the first attempt and NextBackOff after each retryable failure; [backoff.Stop] ends
// the loop with an [*ExhaustedError]. A policy is stateful: do not share one between loops
// that run at the same time. An attempt error wrapping [*backoff.RetryAfterError] waits that
// long instead (and resets the policy), as backoff.Retry does.
func WithBackOff(b backoff.BackOff) Option { return func(c *config) { c.policy = b } }

// DefaultMaxAttempts is the attempt bound of [Retry] and [Do] without [WithMaxAttempts]: 5, the
// first try included (the article's max_attempts, and go-retryablehttp's default of 4 retries).
const DefaultMaxAttempts = 5

// WithMaxAttempts bounds the attempts, the first try included (default [DefaultMaxAttempts], 5;
// 0 or less: only the policy bounds them).
func WithMaxAttempts(n int) Option { return func(c *config) { c.maxAttempts = n } }

// WithRetryable sets the classifier of attempt errors (default [Retryable]). Whatever it says,
// an error caused by the caller's context ending stops the loop with a [*CancelError].
func WithRetryable(f func(error) bool) Option { return func(c *config) { c.retryable = f } }

// WithTracerProvider sets the provider of the spans the loop makes: its own span and the
// attempt spans it makes. Without it the loop takes, like otelhttp's transport, the provider
// of the span in the caller's context when that span is recording (a server span of
// otelhttp.NewHandler, a span the caller started), else the global one
// (otel.GetTracerProvider()). Give it when the caller's context may carry no recording span
// and the global provider is not the one your client's instrumentation uses (otelhttp or
// otelgrpc given WithTracerProvider, no otel.SetTracerProvider): the loop would record
// nothing, and says so once per loop name through the OTel error handler (otel.Handle, which
// logs by default) when the client's instrumentation records an attempt it claimed.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithName names the loop's span (default "retry"); attempt spans take the same name unless
// [WithAttemptName] says otherwise.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithAttemptName names the attempt spans the loop makes (default: the loop's name). Name them
// as the operation (for an HTTP call, "POST /search"): the orphan processor's operation label
// is the span name.
func WithAttemptName(name string) Option { return func(c *config) { c.attemptName = name } }

// WithAttemptSpanKind sets the kind of the attempt spans the loop makes (default CLIENT: the
// processor takes CLIENT and PRODUCER spans, and spans with a resend count or attempt
// attribute, as attempts; an INTERNAL first try without [WithAttemptAttribute] is not one).
func WithAttemptSpanKind(k trace.SpanKind) Option { return func(c *config) { c.attemptKind = k } }

// WithoutLoopSpan makes the loop start no span of its own: attempts become children of the
// caller's span, and the cancellation is recorded on that span instead (when it is recording).
func WithoutLoopSpan() Option { return func(c *config) { c.loopSpan = false } }

// spanMode is who makes the one span per attempt.
type spanMode int

const (
	// spansAuto (the default): the client's instrumentation when this package sees it (an
	// attempt claimed by [AnnotateSpan]), else the loop, once the attempt has returned.
	spansAuto spanMode = iota
	// spansClient: always the client's instrumentation; the loop makes none.
	spansClient
	// spansLoop: always the loop, started before the attempt.
	spansLoop
)

// WithInstrumentedClient says "my client is already instrumented": every attempt makes its own
// span (an otelhttp or otelgrpc client makes a CLIENT span per call, and so does any other
// instrumentation), so the loop never makes one, even for an attempt that nothing claimed. Use
// it when the client's instrumentation is one this package cannot see (for example otelhttp
// given its own WithTracerProvider, without [Transport] inside it): by default the loop makes a
// span for every attempt that nothing claimed, that is neither [Transport] (inside
// otelhttp.NewTransport), [ClientStatsHandler] (around otelgrpc.NewClientHandler), a call to
// [AnnotateSpan], nor a CLIENT span started with the tracer provider of the attempt context's
// span. The loop's span is kept (it records the cancellation) unless [WithoutLoopSpan] is
// given too.
func WithInstrumentedClient() Option { return func(c *config) { c.spans = spansClient } }

// WithUninstrumentedClient says "my client makes no spans, and my attempt function starts spans
// or propagates trace context itself": the loop starts each attempt's span before calling the
// attempt function, so that what the attempt does nests under it. By default (no mode option)
// the loop makes the span of an attempt that nothing claimed only once the attempt has
// returned, with the attempt's start and end times, as a child of the loop's span; spans the
// attempt function starts meanwhile are then the loop span's children, not the attempt's.
// Do not combine it with an instrumented client: each attempt would have two spans.
func WithUninstrumentedClient() Option { return func(c *config) { c.spans = spansLoop } }

// WithExistingAttemptSpans is the old name of [WithInstrumentedClient].
//
// Deprecated: use [WithInstrumentedClient], or nothing: by default an otelhttp client with
// [Transport] inside it, or an otelgrpc client with [ClientStatsHandler], already gets one span
// per attempt.
func WithExistingAttemptSpans() Option { return WithInstrumentedClient() }

// WithAttemptAttribute also writes the 1-based attempt number, on every attempt including the
// first, as an int attribute key (configure the same key as the processor's attempt
// attribute). http.request.resend_count is written in any case.
func WithAttemptAttribute(key string) Option {
	return func(c *config) { c.attemptAttr = attribute.Key(key) }
}

// WithIdempotencyKey sets the key shared by every attempt (default: a random UUID v4 per loop;
// "" sends none). [Transport] sends it as the Idempotency-Key header unless the request has
// one, and the gRPC client interceptors as idempotency-key metadata; it is in
// [Attempt].IdempotencyKey for other transports. One key per logical operation lets the server
// deduplicate, and lets the orphan processor group the attempts into one run.
func WithIdempotencyKey(key string) Option {
	return func(c *config) { c.key, c.noKey = key, key == "" }
}

// WithRecordedIdempotencyKey records the key on attempt spans as
// http.request.header.idempotency-key (a string array, as captured headers are), which lets the
// orphan processor join attempts across traces. Off by default: a key may be sensitive (the
// processor hashes it on arrival and never exports it, but other backends may keep it).
func WithRecordedIdempotencyKey() Option { return func(c *config) { c.recordKey = true } }

// WithOnRetry calls f after each failed attempt that will be retried, with the wait before the
// next one (for logs or metrics).
func WithOnRetry(f func(attempt int, err error, wait time.Duration)) Option {
	return func(c *config) { c.onRetry = f }
}

// NewIdempotencyKey returns a random UUID version 4.
func NewIdempotencyKey() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Attempt is what the loop tells an attempt through its context.
type Attempt struct {
	// Number is the 1-based attempt number.
	Number int
	// IdempotencyKey is the loop's key, the same on every attempt ("" when disabled).
	IdempotencyKey string
	// Loop is the span context of the loop's span (or the caller's with [WithoutLoopSpan]).
	Loop trace.SpanContext

	annotate    bool         // the client's instrumentation may make the attempt's span
	claimed     *atomic.Bool // set by AnnotateSpan: the client's instrumentation made it
	recorded    *atomic.Bool // set by AnnotateSpan when the span it claimed for is recording
	recordKey   bool
	attemptAttr attribute.Key
}

// Claimed reports whether the client's instrumentation made (and [AnnotateSpan] annotated) a
// span for this attempt.
func (a Attempt) Claimed() bool { return a.claimed != nil && a.claimed.Load() }

type attemptKey struct{}

// ContextWithAttempt returns ctx carrying a. Retry does this for every attempt; a hand-written
// loop may do it so that [Transport] and the gRPC client interceptors send a.IdempotencyKey.
// (Span annotation by [AnnotateSpan] is reserved to the attempts of Retry loops.)
func ContextWithAttempt(ctx context.Context, a Attempt) context.Context {
	return context.WithValue(ctx, attemptKey{}, a)
}

// AttemptFromContext returns the attempt a [Retry] loop is making, if ctx is an attempt's.
func AttemptFromContext(ctx context.Context) (Attempt, bool) {
	a, ok := ctx.Value(attemptKey{}).(Attempt)
	return a, ok
}

// Attributes returns the span attributes of the attempt: http.request.resend_count when it is a
// retry, the attempt attribute when configured, and the idempotency key when recording was
// asked for.
func (a Attempt) Attributes() []attribute.KeyValue {
	var out []attribute.KeyValue
	if a.Number > 1 {
		out = append(out, attribute.Int(AttrResendCount, a.Number-1))
	}
	if a.attemptAttr != "" {
		out = append(out, a.attemptAttr.Int(a.Number))
	}
	if a.recordKey && a.IdempotencyKey != "" {
		out = append(out, attribute.StringSlice(AttrIdempotencyKey, []string{a.IdempotencyKey}))
	}
	return out
}

// AnnotateSpan claims the attempt in ctx for the span in ctx and writes the attempt's
// attributes on it, when that span is another than the loop's own: the per-attempt span of
// the client's instrumentation (otelhttp's, otelgrpc's). A claimed attempt gets no span from
// the loop, so that each attempt is traced once. It does nothing for loops with
// [WithUninstrumentedClient] (their attempt span is the loop's) and reports whether it claimed.
// [Transport] and [ClientStatsHandler] call it; call it from instrumentation of other
// protocols, where the per-attempt span is in the context.
func AnnotateSpan(ctx context.Context) bool {
	a, ok := AttemptFromContext(ctx)
	if !ok || !a.annotate {
		return false
	}
	span := trace.SpanFromContext(ctx)
	sc := span.SpanContext()
	if !sc.IsValid() || sc.SpanID() == a.Loop.SpanID() {
		return false
	}
	if a.claimed != nil {
		a.claimed.Store(true)
	}
	if span.IsRecording() {
		if a.recorded != nil {
			a.recorded.Store(true)
		}
		span.SetAttributes(a.Attributes()...)
	}
	return true
}

const tracerName = "github.com/orphanwatch/orphanwatch/aware"

func newConfig(opts []Option) config {
	c := config{maxAttempts: DefaultMaxAttempts, name: "retry", attemptKind: trace.SpanKindClient, loopSpan: true}
	for _, o := range opts {
		o(&c)
	}
	if c.policy == nil {
		c.policy = NewExponentialBackOff()
	}
	if c.retryable == nil {
		c.retryable = Retryable
	}
	if c.attemptName == "" {
		c.attemptName = c.name
	}
	if c.key == "" && !c.noKey {
		c.key = NewIdempotencyKey()
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// Do runs op until it succeeds, fails with an error that is not retryable, or the policy or
// the attempt bound says stop, like [Retry] without a value.
func Do(ctx context.Context, op func(ctx context.Context) error, opts ...Option) error {
	_, err := Retry(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, op(ctx) }, opts...)
	return err
}

// Retry runs op until it succeeds, fails with an error the classifier says is not retryable
// (that error is returned as is), or the policy or the attempt bound says stop (an
// [*ExhaustedError]); the bound is [DefaultMaxAttempts] (5 attempts, the first included) unless
// [WithMaxAttempts] sets another. Before every attempt it checks ctx and refuses to dispatch
// when ctx is done or its deadline has passed; it waits each backoff in a select on
// ctx.Done(); when the caller has gone it returns a [*CancelError] (Attempts made, Stage) and
// records error.type "context canceled" or "context deadline exceeded" with status Error on the
// loop's span (an INTERNAL span named [WithName]).
//
// Every attempt is traced by exactly one span, with http.request.resend_count on retries:
//   - an HTTP client with otelhttp.NewTransport(aware.NewTransport(...)), or a gRPC client
//     with [ClientStatsHandler](otelgrpc.NewClientHandler()): the client's span, which this
//     package annotates and which keeps the loop from making one. No option is needed. The
//     same holds for any instrumentation that takes its tracer from the span in the context
//     (otelhttp given no WithTracerProvider does, even without [Transport] inside it) and
//     starts a CLIENT or PRODUCER span for the attempt.
//   - any other attempt: a CLIENT span the loop makes once the attempt has returned (named
//     [WithAttemptName], kind [WithAttemptSpanKind]), with the attempt's start time and its
//     error (error.type, status Error).
//
// [WithInstrumentedClient] ("my client is already instrumented", by instrumentation this package
// does not see) and [WithUninstrumentedClient] ("my attempt function starts spans of its own")
// change that; see them.
//
// The loop's spans go to the provider of [WithTracerProvider], else to that of the recording
// span in ctx, else to the global one; see [WithTracerProvider].
//
// op gets a context derived from ctx carrying the [Attempt] (and, with
// [WithUninstrumentedClient], the attempt's span).
func Retry[T any](ctx context.Context, op func(ctx context.Context) (T, error), opts ...Option) (T, error) {
	c := newConfig(opts)
	tracer := tracerProvider(ctx, c.tp).Tracer(tracerName)
	var zero T

	loopCtx := ctx
	loop := trace.SpanFromContext(ctx)
	if c.loopSpan {
		loopCtx, loop = tracer.Start(ctx, c.name, trace.WithSpanKind(trace.SpanKindInternal))
		defer loop.End()
	}
	stop := func(attempts int, stage Stage, last error) (T, error) {
		e := &CancelError{Attempts: attempts, Stage: stage, Err: ctx.Err(), Last: last}
		if e.Err == nil { // the deadline passed but the context's timer has not fired yet
			e.Err = context.DeadlineExceeded
		}
		if cause := context.Cause(ctx); cause != nil && cause != e.Err {
			e.Cause = cause
		}
		if loop.IsRecording() {
			loop.SetAttributes(attribute.String(AttrErrorType, e.ErrorType()))
			loop.SetStatus(codes.Error, e.Error())
		}
		return zero, e
	}

	c.policy.Reset()
	var last error
	for n := 1; ; n++ {
		if gone(ctx, c.now) {
			return stop(n-1, BeforeDispatch, last)
		}
		a := Attempt{Number: n, IdempotencyKey: c.key, Loop: loop.SpanContext(),
			annotate: c.spans != spansLoop, claimed: new(atomic.Bool), recorded: new(atomic.Bool),
			recordKey: c.recordKey, attemptAttr: c.attemptAttr}
		actx := ContextWithAttempt(loopCtx, a)
		var span trace.Span
		switch c.spans {
		case spansLoop:
			actx, span = tracer.Start(actx, c.attemptName, trace.WithSpanKind(c.attemptKind),
				trace.WithAttributes(a.Attributes()...))
		case spansAuto:
			if loop.SpanContext().IsValid() {
				actx = trace.ContextWithSpan(actx, probe{Span: loop})
			}
		}
		started := time.Now()
		v, err := op(actx)
		if c.loopSpan && !loop.IsRecording() && a.recorded.Load() {
			reportNoLoopSpan(c.name)
		}
		if c.spans == spansAuto && !a.Claimed() {
			// Nothing made a span for this attempt: the loop records it now, with the
			// attempt's own start time.
			_, span = tracer.Start(loopCtx, c.attemptName, trace.WithSpanKind(c.attemptKind),
				trace.WithAttributes(a.Attributes()...), trace.WithTimestamp(started))
		}
		if span != nil {
			if err != nil && span.IsRecording() {
				span.SetAttributes(attribute.String(AttrErrorType, ErrorType(err)))
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}
		if err == nil {
			return v, nil
		}
		last = err
		if gone(ctx, c.now) {
			return stop(n, DuringAttempt, err)
		}
		if !c.retryable(err) {
			if loop.IsRecording() && c.loopSpan {
				loop.SetAttributes(attribute.String(AttrErrorType, ErrorType(err)))
				loop.SetStatus(codes.Error, err.Error())
			}
			return zero, err
		}
		wait := backoff.Stop
		if c.maxAttempts <= 0 || n < c.maxAttempts {
			wait = c.policy.NextBackOff()
			var ra *backoff.RetryAfterError
			var se *StatusError
			if errors.As(err, &ra) {
				wait = ra.Duration
				c.policy.Reset()
			} else if errors.As(err, &se) && se.HasRetryAfter {
				wait = se.RetryAfter
				c.policy.Reset()
			}
		}
		if wait == backoff.Stop || wait < 0 {
			ex := &ExhaustedError{Attempts: n, Last: err}
			if loop.IsRecording() && c.loopSpan {
				loop.SetAttributes(attribute.String(AttrErrorType, ErrorType(err)))
				loop.SetStatus(codes.Error, ex.Error())
			}
			return zero, ex
		}
		if c.onRetry != nil {
			c.onRetry(n, err, wait)
		}
		if !sleep(ctx, wait) {
			return stop(n, DuringBackoff, last)
		}
	}
}

// tracerProvider is the provider of the loop's spans: the one given by [WithTracerProvider];
// else that of the span in ctx when it is recording (the rule of otelhttp's transport, so that
// a loop under an otelhttp server span records wherever that span does); else the global one.
// A span that does not record (a remote parent, a sampled-out span) says nothing of where
// spans go: its provider may be a no-op one even when the global provider records.
func tracerProvider(ctx context.Context, given trace.TracerProvider) trace.TracerProvider {
	if given != nil {
		return given
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		return span.TracerProvider()
	}
	return otel.GetTracerProvider()
}

// noLoopSpanReported holds the loop names [reportNoLoopSpan] has reported.
var noLoopSpanReported sync.Map

// reportNoLoopSpan says, once per loop name and through the OTel error handler, that a loop
// records no span of its own while its client's instrumentation records the attempts: the
// loop's tracer provider (see [tracerProvider]) is not the client's. The attempts are then
// traced without the span that records a cancellation (the processor cannot tell a loop that
// noticed the caller leave from one that did not).
func reportNoLoopSpan(name string) {
	if _, done := noLoopSpanReported.LoadOrStore(name, true); done {
		return
	}
	otel.Handle(fmt.Errorf("aware: retry loop %q records no span while its client's instrumentation records the attempts: "+
		"the loop's tracer provider (the caller's recording span's, else otel.GetTracerProvider()) does not record; "+
		"pass the client's provider with aware.WithTracerProvider(tp), or register it with otel.SetTracerProvider", name))
}

// Check is the check the loop makes before every attempt, for code between attempts (before a
// model call, before publishing a result): nil while the caller is there, else the context's
// error, or context.DeadlineExceeded when the deadline has passed on the clock before the
// context's timer fired.
func Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// gone reports whether the caller has gone: ctx is done, or its deadline has passed (checked
// against the clock too, so that a deadline that passed a moment ago refuses the dispatch even
// before the context's timer fires).
func gone(ctx context.Context, now func() time.Time) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !now().Before(dl)
}

// sleep waits d or until ctx is done, whichever comes first; it reports whether the full wait
// elapsed with the caller still there.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// probe is the span an attempt's context carries by default: the loop's span itself (the same
// span context and recording; it delegates every method) except for TracerProvider, which
// returns a provider whose tracers claim the attempt for the CLIENT or PRODUCER span they start
// in it ([AnnotateSpan]). Instrumentation that takes its tracer from the span in the context,
// as otelhttp's transport does when it was given no WithTracerProvider, is thereby seen even
// without [Transport] inside it, or with Transport outside it.
type probe struct{ trace.Span }

// TracerProvider returns the loop span's provider, watching the spans started through it.
func (p probe) TracerProvider() trace.TracerProvider {
	return probeProvider{TracerProvider: p.Span.TracerProvider()}
}

type probeProvider struct{ trace.TracerProvider }

func (p probeProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return probeTracer{Tracer: p.TracerProvider.Tracer(name, opts...)}
}

type probeTracer struct{ trace.Tracer }

// Start starts the span and, for a CLIENT or PRODUCER span in an attempt's context, claims the
// attempt for it.
func (t probeTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, span := t.Tracer.Start(ctx, name, opts...)
	cfg := trace.NewSpanStartConfig(opts...)
	switch cfg.SpanKind() {
	case trace.SpanKindClient, trace.SpanKindProducer:
		AnnotateSpan(ctx)
	}
	return ctx, span
}
