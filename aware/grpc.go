package aware

import (
	"context"
	"errors"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// MetadataDeadline is the gRPC metadata key of the deadline as data (metadata keys are lower
// case). gRPC already carries the deadline natively as grpc-timeout, relative and re-measured
// at every hop; x-deadline carries the same deadline as an absolute time, so that it also
// survives a hop through HTTP, a queue or a proxy that drops grpc-timeout, and so that spans
// can record it.
const MetadataDeadline = "x-deadline"

// refuse returns the status error of a dispatch refused before it was made, or nil.
func refuse(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return status.Error(codes.DeadlineExceeded, ErrDeadlinePassed.Error())
		}
		return status.FromContextError(err).Err()
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return status.Error(codes.DeadlineExceeded, ErrDeadlinePassed.Error())
	}
	return nil
}

// outgoing adds x-deadline (and the attempt's idempotency-key) to the outgoing metadata. An
// x-deadline the caller set already stays when it is as early; else ours is added next to it
// (the receiver takes the earliest value).
func outgoing(ctx context.Context) context.Context {
	if dl, ok := ctx.Deadline(); ok {
		md, _ := metadata.FromOutgoingContext(ctx)
		earlier := false
		for _, v := range splitValues(md.Get(MetadataDeadline)) {
			if t, err := ParseUnixSeconds(v); err == nil && !t.After(dl) {
				earlier = true
			}
		}
		if !earlier {
			ctx = metadata.AppendToOutgoingContext(ctx, MetadataDeadline, FormatUnixSeconds(dl))
		}
	}
	if a, ok := AttemptFromContext(ctx); ok && a.IdempotencyKey != "" {
		md, _ := metadata.FromOutgoingContext(ctx)
		if len(md.Get("idempotency-key")) == 0 {
			ctx = metadata.AppendToOutgoingContext(ctx, "idempotency-key", a.IdempotencyKey)
		}
	}
	return ctx
}

// UnaryClientInterceptor refuses to dispatch a call whose context is done (status CANCELLED)
// or whose deadline has passed (DEADLINE_EXCEEDED, "deadline already passed before dispatch"),
// and sends the context's deadline as x-deadline metadata (unix seconds) next to gRPC's own
// grpc-timeout. Inside a [Retry] attempt it also sends the idempotency key as
// idempotency-key metadata.
func UnaryClientInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if err := refuse(ctx); err != nil {
			return err
		}
		return invoker(outgoing(ctx), method, req, reply, cc, opts...)
	}
}

// StreamClientInterceptor is [UnaryClientInterceptor] for streams: it refuses to open a stream
// after the deadline and sends x-deadline with the stream's headers.
func StreamClientInterceptor() grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if err := refuse(ctx); err != nil {
			return nil, err
		}
		return streamer(outgoing(ctx), desc, cc, method, opts...)
	}
}

// mdGetter adapts incoming metadata to [HeaderGetter] (metadata keys are lower case).
type mdGetter metadata.MD

func (m mdGetter) Values(key string) []string { return metadata.MD(m).Get(strings.ToLower(key)) }

// incoming applies the deadline of the incoming metadata to ctx: x-deadline, and
// x-envoy-expected-rq-timeout-ms when Envoy forwarded the call (gRPC has already applied
// grpc-timeout to ctx and removed it from the metadata). The earliest wins.
func incoming(ctx context.Context) (context.Context, context.CancelFunc) {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ctx, func() {}
	}
	dl, _, found, _ := DeadlineFromHeader(mdGetter(md), time.Now())
	if !found {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, dl)
}

// UnaryServerInterceptor applies the x-deadline metadata (and Envoy's timeout header) to the call's context (the earlier of
// it and gRPC's own grpc-timeout deadline wins) and answers DEADLINE_EXCEEDED (or CANCELLED)
// without calling the handler when the call arrives after its deadline.
func UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, cancel := incoming(ctx)
		defer cancel()
		if err := refuse(ctx); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// StreamServerInterceptor is [UnaryServerInterceptor] for streams: the handler's stream
// context carries the deadline.
func StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, cancel := incoming(ss.Context())
		defer cancel()
		if err := refuse(ctx); err != nil {
			return err
		}
		return handler(srv, &stream{ServerStream: ss, ctx: ctx})
	}
}

type stream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *stream) Context() context.Context { return s.ctx }

// ClientStatsHandler wraps the stats handler of a gRPC client's instrumentation (otelgrpc's
// client handler makes one CLIENT span per call, in TagRPC) so that, inside a [Retry] attempt,
// that span is the attempt's: it is annotated with http.request.resend_count (and the optional
// attempt attributes, see [AnnotateSpan]), and the loop makes no second span for the attempt.
// Outside a Retry loop it is h itself.
//
//	conn, err := grpc.NewClient(target,
//		grpc.WithStatsHandler(aware.ClientStatsHandler(otelgrpc.NewClientHandler())),
//		grpc.WithChainUnaryInterceptor(aware.UnaryClientInterceptor()), ...)
//
// (gRPC calls stats handlers inside the interceptors, so an interceptor never sees otelgrpc's
// span: the annotation has to happen here.)
func ClientStatsHandler(h stats.Handler) stats.Handler { return statsHandler{h} }

type statsHandler struct{ stats.Handler }

// TagRPC lets the wrapped handler start the call's span, then claims the attempt for it.
func (s statsHandler) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	ctx = s.Handler.TagRPC(ctx, info)
	AnnotateSpan(ctx)
	return ctx
}
