package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/orphanwatch/orphanwatch/aware"
)

// Attribute keys written by the simulator beyond what otelhttp writes. The gen_ai.* keys follow
// the OpenTelemetry semantic conventions for generative AI client spans.
const (
	keyGenAIOperation     = attribute.Key("gen_ai.operation.name")
	keyGenAIProvider      = attribute.Key("gen_ai.provider.name")
	keyGenAIRequestModel  = attribute.Key("gen_ai.request.model")
	keyGenAIMaxTokens     = attribute.Key("gen_ai.request.max_tokens")
	keyGenAIResponseModel = attribute.Key("gen_ai.response.model")
	keyGenAIResponseID    = attribute.Key("gen_ai.response.id")
	keyGenAIFinish        = attribute.Key("gen_ai.response.finish_reasons")
	keyGenAIInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	keyGenAIOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	keyErrorType          = semconv.ErrorTypeKey

	headerIdempotencyKey = "Idempotency-Key"
	headerDeadline       = "X-Deadline"
	headerRequestID      = "X-Request-Id"

	providerName = "openai"
)

// capturedHeaders are the request headers recorded on client and server spans as
// http.request.header.<lower-case name> (a string array), as the HTTP semantic conventions
// describe for opt-in header capture.
var capturedHeaders = []string{headerIdempotencyKey, headerDeadline}

func headerAttributes(h http.Header) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, name := range capturedHeaders {
		if v := h.Values(name); len(v) > 0 {
			out = append(out, attribute.StringSlice("http.request.header."+strings.ToLower(name), v))
		}
	}
	return out
}

// call describes one outbound HTTP attempt; the transport fills in the span and the usage.
type call struct {
	name      string // span name
	template  string // url.template
	attempt   int    // 1-based
	model     string // model calls only
	maxTokens int

	traceID trace.TraceID
	spanID  trace.SpanID
	usage   *chatResponse
}

type callCtxKey struct{}

func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, callCtxKey{}, c)
}

func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callCtxKey{}).(*call)
	return c
}

// ctxError is the error of an attempt stopped by its context. Its ErrorType (read by
// semconv.ErrorType, which otelhttp uses for error.type) is the context error's text,
// "context canceled" or "context deadline exceeded".
type ctxError struct {
	ctxErr error
	cause  error
}

func (e *ctxError) Error() string     { return e.ctxErr.Error() + ": " + e.cause.Error() }
func (e *ctxError) Unwrap() []error   { return []error{e.ctxErr, e.cause} }
func (e *ctxError) ErrorType() string { return e.ctxErr.Error() }

// errorTypeOf is the error.type the simulator records for a context error.
func errorTypeOf(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded.Error()
	case errors.Is(err, context.Canceled):
		return context.Canceled.Error()
	}
	return "_OTHER"
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// annotate sits between otelhttp's client span and the network: it sees the attempt's span in
// the request context, writes what otelhttp does not (resend count, captured headers, url
// template, gen_ai request and usage attributes), reads the whole response body while the span
// is open (so a cancellation while reading is recorded as such), and names context errors.
type annotate struct{ base http.RoundTripper }

func (a annotate) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	span := trace.SpanFromContext(ctx)
	c := callFrom(ctx)
	attrs := headerAttributes(r.Header)
	if c != nil {
		c.traceID, c.spanID = span.SpanContext().TraceID(), span.SpanContext().SpanID()
		if c.template != "" {
			attrs = append(attrs, semconv.URLTemplate(c.template))
		}
		if _, inLoop := aware.AttemptFromContext(ctx); !inLoop && c.attempt > 1 {
			// Blind loops count their own attempts; in an aware.Retry loop the
			// aware.Transport writes the resend count.
			attrs = append(attrs, semconv.HTTPRequestResendCount(c.attempt-1))
		}
		if c.model != "" {
			attrs = append(attrs,
				keyGenAIOperation.String("chat"),
				keyGenAIProvider.String(providerName),
				keyGenAIRequestModel.String(c.model),
				keyGenAIMaxTokens.Int(c.maxTokens),
			)
		}
	}
	span.SetAttributes(attrs...)

	resp, err := a.base.RoundTrip(r)
	if err != nil {
		return nil, named(ctx, err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	if err != nil {
		return nil, named(ctx, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	if c != nil && c.model != "" && resp.StatusCode == http.StatusOK {
		var cr chatResponse
		if json.Unmarshal(body, &cr) == nil {
			c.usage = &cr
			finish := make([]string, 0, len(cr.Choices))
			for _, ch := range cr.Choices {
				finish = append(finish, ch.FinishReason)
			}
			span.SetAttributes(
				keyGenAIResponseModel.String(cr.Model),
				keyGenAIResponseID.String(cr.ID),
				keyGenAIFinish.StringSlice(finish),
				keyGenAIInputTokens.Int64(cr.Usage.PromptTokens),
				keyGenAIOutputTokens.Int64(cr.Usage.CompletionTokens),
			)
		}
	}
	return resp, nil
}

// named turns an error caused by the request's context into a ctxError.
func named(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return &ctxError{ctxErr: cerr, cause: err}
	}
	return err
}

// newClient returns an HTTP client whose every request is one otelhttp CLIENT span of svc.
// With deadlines (aware mode), aware.Transport sits under annotate (which so sees every
// attempt, refused or not): it refuses to send after the deadline, writes X-Deadline from the
// request's context and records it as http.request.header.x-deadline, and annotates the
// attempts of aware.Retry loops with http.request.resend_count.
func newClient(tp *sdktrace.TracerProvider, deadlines bool) *http.Client {
	base := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 0,
		DisableCompression:    true,
	}
	var rt http.RoundTripper = base
	if deadlines {
		rt = &aware.Transport{Base: base, RecordDeadline: true}
	}
	return &http.Client{Transport: otelhttp.NewTransport(annotate{base: rt},
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if c := callFrom(r.Context()); c != nil && c.name != "" {
				return c.name
			}
			return r.Method
		}),
	)}
}

// serve wraps a handler in an otelhttp SERVER span named name, recording the captured request
// headers and the route on it.
func serve(tp *sdktrace.TracerProvider, method, route string, h http.Handler) http.Handler {
	name := method + " " + route
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method || r.URL.Path != route {
			http.NotFound(w, r)
			return
		}
		span := trace.SpanFromContext(r.Context())
		span.SetAttributes(append(headerAttributes(r.Header), semconv.HTTPRoute(route))...)
		h.ServeHTTP(w, r)
	})
	return otelhttp.NewHandler(inner, name,
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithSpanNameFormatter(func(string, *http.Request) string { return name }),
	)
}

// recordStop marks a span as stopped by its context: error.type and an Error status.
func recordStop(span trace.Span, err error) {
	span.SetAttributes(keyErrorType.String(errorTypeOf(err)))
	span.SetStatus(codes.Error, errorTypeOf(err))
}
