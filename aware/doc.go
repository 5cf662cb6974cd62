// Package aware is the cure of the article "the blind retry loop" one import away: a retry loop
// that treats "does anyone still want this" as an input checked on every iteration, and the
// plumbing that carries the answer across process boundaries as data.
//
//   - [Retry] and [Do] check the caller's context before every attempt and refuse to dispatch
//     once it is done or its deadline has passed; they wait each backoff in a select on the
//     context; and they stop with a [*CancelError] that says how far they got and unwraps to
//     context.Canceled or context.DeadlineExceeded. The backoff policy is a
//     github.com/cenkalti/backoff/v5 [backoff.BackOff]; which errors are worth retrying is
//     decided by a classifier ([WithRetryable]).
//   - Each attempt is traced as the orphanwatch processor reads it: one span per attempt with
//     http.request.resend_count (attempt-1, absent on the first try), the idempotency key on the
//     request (Idempotency-Key header; on the span only if asked), and error.type
//     "context canceled" or "context deadline exceeded" with status Error on the loop's span
//     when it stops. With an otelhttp client around [Transport], or an otelgrpc client with
//     [ClientStatsHandler], the client's span is the attempt's (annotated, and the loop makes
//     none); any other attempt gets a span from the loop. No option is needed for either;
//     [WithInstrumentedClient] and [WithUninstrumentedClient] cover the other cases.
//   - [CheckResponse] ([HTTPPolicy]) turns an *http.Response into the attempt's result:
//     retryable statuses (408, 425, 429, 5xx but 501), Retry-After in both forms, capped.
//   - The deadline travels as data: [Handler] reads X-Deadline, grpc-timeout and
//     x-envoy-expected-rq-timeout-ms into the request's context; [Transport] writes the
//     context's deadline as X-Deadline on every outgoing request and refuses to send once it
//     has passed; the gRPC interceptors ([UnaryClientInterceptor], [StreamClientInterceptor],
//     [UnaryServerInterceptor], [StreamServerInterceptor]) do the same over gRPC metadata.
//
// The package has no collector types: it is for the services that orphanwatch watches.
package aware

import backoff "github.com/cenkalti/backoff/v5"

// NewExponentialBackOff returns the default policy of [Retry]: cenkalti/backoff's exponential
// backoff (initial 500 ms, multiplier 1.5, randomization 0.5, at most 60 s per wait). It is
// stateful: use one per loop.
func NewExponentialBackOff() backoff.BackOff { return backoff.NewExponentialBackOff() }
