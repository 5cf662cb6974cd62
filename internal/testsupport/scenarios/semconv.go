package scenarios

import (
	"fmt"
	"strconv"
)

// Attribute names used by the scenarios (OpenTelemetry semantic conventions).
const (
	AttrHTTPMethod      = "http.request.method"
	AttrHTTPStatus      = "http.response.status_code"
	AttrHTTPRoute       = "http.route"
	AttrHTTPResendCount = "http.request.resend_count"
	AttrURLFull         = "url.full"
	AttrURLPath         = "url.path"
	AttrURLScheme       = "url.scheme"
	AttrServerAddress   = "server.address"
	AttrServerPort      = "server.port"
	AttrErrorType       = "error.type"
	// AttrIdempotencyKey is the Idempotency-Key request header as semconv captures headers:
	// a string array.
	AttrIdempotencyKey = "http.request.header.idempotency-key"
	// AttrDeadline is the X-Deadline request header (unix seconds), a string array.
	AttrDeadline = "http.request.header.x-deadline"

	AttrRPCSystem         = "rpc.system"
	AttrRPCService        = "rpc.service"
	AttrRPCMethod         = "rpc.method"
	AttrRPCGRPCStatusCode = "rpc.grpc.status_code"

	AttrGenAIOperation    = "gen_ai.operation.name"
	AttrGenAIProvider     = "gen_ai.provider.name"
	AttrGenAIRequestModel = "gen_ai.request.model"
	AttrGenAIRespModel    = "gen_ai.response.model"
	AttrGenAIInputTokens  = "gen_ai.usage.input_tokens"
	AttrGenAIOutputTokens = "gen_ai.usage.output_tokens"
	AttrGenAIFinish       = "gen_ai.response.finish_reasons"

	AttrMsgSystem      = "messaging.system"
	AttrMsgOpType      = "messaging.operation.type"
	AttrMsgOpName      = "messaging.operation.name"
	AttrMsgDestination = "messaging.destination.name"
)

// Ports used by the scenario services.
const (
	HTTPPort  = 8080
	GRPCPort  = 50051
	ModelHost = "api.openai.com"
)

// HTTPServerRoot adds the root request: a SERVER span "METHOD route" in service.
// status 0 means no response status code was recorded.
func (t *Trace) HTTPServerRoot(service, method, route string, start, end float64, status int) *Span {
	s := t.Span(service, method+" "+route, Server, start, end)
	s.Set(AttrHTTPMethod, method).Set(AttrHTTPRoute, route).Set(AttrURLPath, route).
		Set(AttrURLScheme, "http").Set(AttrServerAddress, service).Set(AttrServerPort, HTTPPort)
	serverStatus(s, status)
	return s
}

func serverStatus(s *Span, status int) {
	if status == 0 {
		return
	}
	s.Set(AttrHTTPStatus, status)
	if status >= 500 { // semconv: SERVER spans are errors only for 5xx
		s.Set(AttrErrorType, strconv.Itoa(status)).Error("")
	}
}

// HTTPClient adds a CLIENT span named after the method, in s's service, calling
// http://host:port/path. status 0 means no response was received (then set ErrorType, or
// leave the status unset for a deliberately cancelled request). Status >= 400 sets
// error.type to the code and the span status to ERROR (semconv for CLIENT spans).
func (s *Span) HTTPClient(method, host string, port int, path string, start, end float64, status int) *Span {
	c := s.Child(s.Service, method, Client, start, end)
	c.Set(AttrHTTPMethod, method).
		Set(AttrURLFull, fmt.Sprintf("http://%s:%d%s", host, port, path)).
		Set(AttrServerAddress, host).Set(AttrServerPort, port)
	if status != 0 {
		c.Set(AttrHTTPStatus, status)
		if status >= 400 {
			c.Set(AttrErrorType, strconv.Itoa(status)).Error("")
		}
	}
	return c
}

// HTTPServer adds the callee's SERVER span "METHOD route" under the CLIENT span c.
func (c *Span) HTTPServer(service, route string, start, end float64, status int) *Span {
	m, _ := c.Get(AttrHTTPMethod)
	method, _ := m.(string)
	s := c.Child(service, method+" "+route, Server, start, end)
	s.Set(AttrHTTPMethod, method).Set(AttrHTTPRoute, route).Set(AttrURLPath, route).
		Set(AttrURLScheme, "http").Set(AttrServerAddress, service).Set(AttrServerPort, HTTPPort)
	serverStatus(s, status)
	return s
}

// ErrorType records an error without response (e.g. "context canceled"): error.type and
// span status ERROR with the same message.
func (s *Span) ErrorType(t string) *Span {
	return s.Set(AttrErrorType, t).Error(t)
}

// IdempotencyKey records the Idempotency-Key request header.
func (s *Span) IdempotencyKey(k string) *Span { return s.Set(AttrIdempotencyKey, []string{k}) }

// ResendCount records http.request.resend_count (attempt n+1).
func (s *Span) ResendCount(n int) *Span { return s.Set(AttrHTTPResendCount, n) }

// Deadline records the X-Deadline request header as unix seconds of T0 + sec.
func (s *Span) Deadline(sec float64) *Span {
	return s.Set(AttrDeadline, []string{strconv.FormatInt(T0Unix+int64(sec), 10)})
}

// Chat adds a GenAI chat CLIENT span "chat <model>" to the OpenAI API under s. Add the
// outcome with Usage (success) or HTTPError.
func (s *Span) Chat(model string, start, end float64) *Span {
	c := s.Child(s.Service, "chat "+model, Client, start, end)
	c.Set(AttrGenAIOperation, "chat").Set(AttrGenAIProvider, "openai").
		Set(AttrGenAIRequestModel, model).
		Set(AttrServerAddress, ModelHost).Set(AttrServerPort, 443)
	return c
}

// Usage completes a successful chat span: response model and token usage.
func (c *Span) Usage(in, out int) *Span {
	m, _ := c.Get(AttrGenAIRequestModel)
	return c.Set(AttrGenAIRespModel, m).Set(AttrGenAIInputTokens, in).
		Set(AttrGenAIOutputTokens, out).Set(AttrGenAIFinish, []string{"stop"})
}

// HTTPError completes a failed chat span with the provider's HTTP status: error.type is the
// code (GenAI semconv) and http.response.status_code is recorded too.
func (c *Span) HTTPError(status int) *Span {
	return c.Set(AttrErrorType, strconv.Itoa(status)).Set(AttrHTTPStatus, status).Error("")
}

// gRPC status codes used by the scenarios.
const (
	GRPCOK              = 0
	GRPCCancelled       = 1
	GRPCInvalidArgument = 3
	GRPCUnavailable     = 14
)

var grpcCodeNames = map[int]string{0: "OK", 1: "CANCELLED", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 14: "UNAVAILABLE"}

// GRPCClient adds a gRPC CLIENT span "<service>/<method>" under s.
func (s *Span) GRPCClient(host, rpcService, rpcMethod string, start, end float64, code int) *Span {
	c := s.Child(s.Service, rpcService+"/"+rpcMethod, Client, start, end)
	c.Set(AttrRPCSystem, "grpc").Set(AttrRPCService, rpcService).Set(AttrRPCMethod, rpcMethod).
		Set(AttrServerAddress, host).Set(AttrServerPort, GRPCPort).Set(AttrRPCGRPCStatusCode, code)
	if code != GRPCOK { // semconv: every non-OK code is an error on the client
		c.Error(grpcCodeNames[code])
	}
	return c
}

// GRPCServer adds the callee's SERVER span under the gRPC CLIENT span c.
func (c *Span) GRPCServer(service string, start, end float64, code int) *Span {
	svc, _ := c.Get(AttrRPCService)
	meth, _ := c.Get(AttrRPCMethod)
	s := c.Child(service, c.Name, Server, start, end)
	s.Set(AttrRPCSystem, "grpc").Set(AttrRPCService, svc).Set(AttrRPCMethod, meth).
		Set(AttrServerPort, GRPCPort).Set(AttrRPCGRPCStatusCode, code)
	switch code { // semconv: server-side errors are UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS
	case 2, 4, 12, 13, 14, 15:
		s.Error(grpcCodeNames[code])
	}
	return s
}

// Produce adds a messaging PRODUCER span "send <destination>" under s.
func (s *Span) Produce(system, destination string, start, end float64) *Span {
	p := s.Child(s.Service, "send "+destination, Producer, start, end)
	p.Set(AttrMsgSystem, system).Set(AttrMsgOpType, "send").Set(AttrMsgOpName, "send").
		Set(AttrMsgDestination, destination)
	return p
}

// ConsumerRoot adds a messaging CONSUMER span "process <destination>" as the root of t,
// linked to the producer span.
func (t *Trace) ConsumerRoot(service string, producer *Span, start, end float64) *Span {
	sys, _ := producer.Get(AttrMsgSystem)
	dest, _ := producer.Get(AttrMsgDestination)
	c := t.Span(service, "process "+dest.(string), Consumer, start, end)
	c.Set(AttrMsgSystem, sys).Set(AttrMsgOpType, "process").Set(AttrMsgOpName, "process").
		Set(AttrMsgDestination, dest).Link(producer)
	return c
}
