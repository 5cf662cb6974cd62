package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	backoff "github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/orphanwatch/orphanwatch/aware"
	"github.com/orphanwatch/orphanwatch/cmd/fanoutsim/truth"
)

// agent is one sub-agent: its name, its server's URL and its outbound client.
type agent struct {
	name   string
	model  string
	url    string
	client *http.Client
}

// sim holds the running services of one simulation.
type sim struct {
	o    Options
	tel  *telemetry
	book *truth.Book

	gatewayURL string
	toolURL    string
	modelURL   string
	agents     []*agent
	gwClient   *http.Client

	flight flight

	toolMu   sync.Mutex
	toolSeen map[string]int

	queueMu sync.Mutex
	queue   [][]byte // the results queue nobody drains (a bounded ring)
	queued  int
}

func (s *sim) aware() bool { return s.o.Mode == Aware }

// flight counts handlers in progress so the run can wait for them, bounded.
type flight struct {
	mu sync.Mutex
	n  int
}

func (f *flight) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.n++
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.n--
			f.mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}

func (f *flight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// wait returns true when no handler runs any more, false after timeout.
func (f *flight) wait(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if f.count() == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// requestContext is a sub-agent's working context. Blind: detached from the request, no
// deadline (context.WithoutCancel keeps the span, drops the cancellation). Aware: the request's
// own context, which aware.Handler gave the deadline the request carried (X-Deadline).
func (s *sim) requestContext(r *http.Request) context.Context {
	if !s.aware() {
		return context.WithoutCancel(r.Context())
	}
	return r.Context()
}

// awareHandler puts aware.Handler (the deadline read from X-Deadline into the request's
// context) in front of h in aware mode, and keeps the connection's own context (cancelled when
// the caller hangs up, without the deadline) for stopHandler.
func (s *sim) awareHandler(h http.Handler) http.Handler {
	if !s.aware() {
		return h
	}
	inner := aware.Handler(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), connCtxKey{}, r.Context())))
	})
}

type connCtxKey struct{}

// connContext is the context of the caller's connection: done when the caller hangs up.
func connContext(r *http.Request) context.Context {
	if c, ok := r.Context().Value(connCtxKey{}).(context.Context); ok {
		return c
	}
	return r.Context()
}

// stopHandler ends a handler that noticed its caller is gone or its deadline passed: the
// SERVER span records error.type and an Error status; the answer (499 or 504) goes to a caller
// that has left. When the deadline passed, the caller (which shares it) is given a moment to
// hang up first, so that it records the deadline itself rather than reading a 504.
func (s *sim) stopHandler(w http.ResponseWriter, r *http.Request, err error) {
	span := trace.SpanFromContext(r.Context())
	recordStop(span, err)
	s.book.Noticed(span.SpanContext().SpanID())
	status := 499
	conn := connContext(r)
	if errorTypeOf(err) == context.DeadlineExceeded.Error() && conn.Err() == nil {
		status = http.StatusGatewayTimeout
		t := time.NewTimer(max(50*time.Millisecond, s.o.scale(100*time.Millisecond)))
		select {
		case <-conn.Done():
		case <-t.C:
		}
		t.Stop()
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	w.WriteHeader(status)
}

func drain(r *http.Request) []byte {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	return b
}

// ---------------------------------------------------------------- gateway

type askRequest struct {
	Question string `json:"question"`
}

type agentAnswer struct {
	Agent   string `json:"agent"`
	Status  int    `json:"status"`
	Answer  string `json:"answer,omitempty"`
	Sources int    `json:"sources,omitempty"`
}

// gateway takes the user's request and fans out to every sub-agent in parallel.
func (s *sim) gateway(w http.ResponseWriter, r *http.Request) {
	span := trace.SpanFromContext(r.Context())
	drain(r)
	reqID, _ := strconv.Atoi(r.Header.Get(headerRequestID))
	root := truth.Root{RequestID: reqID, TraceID: span.SpanContext().TraceID(), SpanID: span.SpanContext().SpanID(), Service: GatewayService}

	ctx := r.Context()
	var cancel context.CancelFunc
	if s.aware() {
		// The deadline travels as data: aware.Handler put the user's X-Deadline on the
		// context; without one the gateway's own timeout applies, and travels the same way.
		if v := r.Header.Get(headerDeadline); v != "" {
			if d, ok := truth.ParseUnixSeconds(v); ok {
				root.Deadline = d // as a reader of the span's x-deadline attribute reads it
			}
		}
		if _, ok := ctx.Deadline(); !ok {
			ctx, cancel = context.WithTimeout(ctx, s.o.scale(s.o.RequestTimeout))
		} else {
			ctx, cancel = context.WithCancel(ctx)
		}
	} else {
		// Blind: the gateway has its own timeout, which it keeps to itself.
		ctx, cancel = context.WithTimeout(ctx, s.o.scale(s.o.RequestTimeout))
	}
	defer cancel()
	s.book.RootStarted(root)

	if s.aware() {
		if err := aware.Check(ctx); err != nil {
			s.gatewayStop(w, r, span, err)
			return
		}
	}

	answers := make([]agentAnswer, len(s.agents))
	var wg sync.WaitGroup
	for i, a := range s.agents {
		wg.Go(func() { answers[i] = s.callAgent(ctx, reqID, a) })
	}
	wg.Wait()

	if err := ctx.Err(); err != nil {
		s.gatewayStop(w, r, span, err)
		return
	}
	s.book.RootEnded(root.TraceID, http.StatusOK, false)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"answers": answers})
}

// gatewayStop answers a request the gateway gave up on: 499 when the user left (recorded
// explicitly on the root span), 504 when the deadline or the gateway's timeout passed.
func (s *sim) gatewayStop(w http.ResponseWriter, r *http.Request, span trace.Span, err error) {
	status := http.StatusGatewayTimeout
	if connContext(r).Err() != nil {
		status, err = 499, context.Canceled
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(status), keyErrorType.String(errorTypeOf(err)))
	if status >= 500 {
		span.SetStatus(codes.Error, errorTypeOf(err))
	}
	s.book.Noticed(span.SpanContext().SpanID())
	s.book.RootEnded(span.SpanContext().TraceID(), status, true)
	w.WriteHeader(status)
}

// wireKey is the idempotency key sent for the seeded key k: k and this run's instance tag
// ("<k>.<tag>"). Keys are unique per request in real fleets; without the tag two simulator runs
// with the same seed against one collector (blind, then aware) would send the same keys, and
// the processor would rightly join the second run's attempts to the first run's open runs.
func (s *sim) wireKey(k string) string { return k + "." + s.tel.runID[:8] }

// seededKey is the seeded key of an idempotency key sent by wireKey: what the services derive
// their behaviour from (plans, tool failures), the same in every run with the same seed.
func seededKey(wire string) string {
	k, _, _ := strings.Cut(wire, ".")
	return k
}

// callAgent is the gateway's one attempt at a sub-agent. In aware mode the client's
// aware.Transport writes the context's deadline as X-Deadline.
func (s *sim) callAgent(ctx context.Context, reqID int, a *agent) agentAnswer {
	key := keyFor(s.o.Seed, "agent", reqID, a.name)
	c := &call{name: "POST /agent", template: "/agent", attempt: 1}
	body, _ := json.Marshal(map[string]any{"task": "answer part of request " + strconv.Itoa(reqID), "agent": a.name})
	req, _ := http.NewRequestWithContext(withCall(ctx, c), http.MethodPost, a.url+"/agent", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(headerIdempotencyKey, s.wireKey(key))
	res, status, out := s.do(s.gwClient, req)
	s.book.Attempted(truth.Attempt{
		TraceID: c.traceID, SpanID: c.spanID, RunID: "gateway/" + key, Number: 1,
		Service: GatewayService, Operation: c.name, Kind: truth.KindCall, Result: res, Status: status,
	})
	ans := agentAnswer{Agent: a.name, Status: status}
	if res == truth.ResultOK {
		_ = json.Unmarshal(out, &ans)
	}
	return ans
}

// do sends one attempt and classifies it as the retry loops do.
func (s *sim) do(client *http.Client, req *http.Request) (truth.Result, int, []byte) {
	resp, err := client.Do(req)
	if err != nil {
		if isCtxErr(err) {
			return truth.ResultCancelled, 0, nil
		}
		return truth.ResultHard, 0, nil
	}
	body, _ := io.ReadAll(resp.Body) // in memory already (annotate)
	resp.Body.Close()
	return truth.ResultOfHTTPStatus(resp.StatusCode), resp.StatusCode, body
}

// ---------------------------------------------------------------- sub-agent

// plan is what a sub-agent does for one request, drawn from the seed and its idempotency key.
type plan struct {
	inputTokens  int
	outputTokens int
}

func (s *sim) planFor(key string) plan {
	r := rngFor(s.o.Seed, "plan", key)
	in := minInputTokens + r.IntN(maxInputTokens-minInputTokens+1)
	out := minOutputTokens + r.IntN(maxOutputTokens-minOutputTokens+1)
	return plan{
		inputTokens:  max(1, int(float64(in)*s.o.TokenScale)),
		outputTokens: max(1, int(float64(out)*s.o.TokenScale)),
	}
}

// agentHandler is one sub-agent: a search-tool call with retries, a model call, a publish.
func (s *sim) agentHandler(a *agent) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		drain(r)
		key := seededKey(r.Header.Get(headerIdempotencyKey))
		ctx := s.requestContext(r)
		p := s.planFor(key)

		search := s.searchBlind
		if s.aware() {
			search = s.searchAware
		}
		sources, err := search(ctx, a, key)
		if err != nil {
			s.stopHandler(w, r, err)
			return
		}
		if s.stoppedAware(ctx, w, r) {
			return
		}
		answer, err := s.chat(ctx, a, key, p)
		if err != nil && s.aware() && isCtxErr(err) {
			s.stopHandler(w, r, err)
			return
		}
		if s.stoppedAware(ctx, w, r) {
			return
		}
		s.publish(ctx, a, key, answer)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(agentAnswer{Agent: a.name, Status: 200, Answer: answer, Sources: sources})
	}
}

// stoppedAware reports whether, in aware mode, the request's caller is gone (aware.Check on ctx),
// and then answers the request as stopped (stopHandler). Blind mode never stops here.
func (s *sim) stoppedAware(ctx context.Context, w http.ResponseWriter, r *http.Request) bool {
	if !s.aware() {
		return false
	}
	if err := aware.Check(ctx); err != nil {
		s.stopHandler(w, r, err)
		return true
	}
	return false
}

// searchBlind is the seed's first listing: it calls the search tool until it succeeds, fails
// hard or runs out of attempts, under one INTERNAL span standing for the retry loop, backs off
// with time.Sleep and never checks whether anyone still waits. It never returns an error.
func (s *sim) searchBlind(ctx context.Context, a *agent, agentKey string) (int, error) {
	ctx, loop := s.tel.tracer(a.name).Start(ctx, "retry search", trace.WithSpanKind(trace.SpanKindInternal))
	defer loop.End()
	key := keyFor(s.o.Seed, "search", agentKey)
	for n := 1; n <= s.o.MaxAttempts; n++ {
		res, sources := s.searchAttempt(ctx, a, key, n)
		switch res {
		case truth.ResultOK:
			return sources, nil
		case truth.ResultCancelled: // only when the run is cut off: the context never ends
			recordStop(loop, ctx.Err())
			s.book.Noticed(loop.SpanContext().SpanID())
			return 0, ctx.Err()
		case truth.ResultHard:
			return 0, nil
		}
		if n == s.o.MaxAttempts {
			break
		}
		time.Sleep(s.o.scale(Backoff(n, s.o.BackoffBase, s.o.BackoffMax, s.o.Jitter, unitFor(s.o.Seed, "backoff", key, n)))) // nobody can interrupt this
	}
	return 0, nil // retries exhausted: answer without sources
}

// searchAware is the seed's fix, on package aware: aware.Retry checks the caller before every
// attempt, waits its backoff in a select on the context, and stops with an error that unwraps
// to the context's. The loop's span is the simulator's "retry search" (so that the book knows
// its ID); aware.Retry records error.type and an Error status on it when it stops. Each attempt
// is one otelhttp CLIENT span (WithInstrumentedClient), which the client's aware.Transport
// annotates with http.request.resend_count and stamps with X-Deadline. It returns an error only
// when the loop stopped for the caller.
func (s *sim) searchAware(ctx context.Context, a *agent, agentKey string) (int, error) {
	ctx, loop := s.tel.tracer(a.name).Start(ctx, "retry search", trace.WithSpanKind(trace.SpanKindInternal))
	defer loop.End()
	key := keyFor(s.o.Seed, "search", agentKey)
	sources, err := aware.Retry(ctx, func(ctx context.Context) (int, error) {
		at, _ := aware.AttemptFromContext(ctx)
		switch res, sources := s.searchAttempt(ctx, a, key, at.Number); res {
		case truth.ResultOK:
			return sources, nil
		case truth.ResultRetryable:
			return 0, errRetryable
		case truth.ResultCancelled:
			if err := context.Cause(ctx); err != nil {
				return 0, err
			}
			return 0, context.DeadlineExceeded // aware.Transport refused: the deadline passed
		default:
			return 0, backoff.Permanent(errHard)
		}
	},
		aware.WithoutLoopSpan(),
		aware.WithInstrumentedClient(),
		aware.WithTracerProvider(s.tel.tp(a.name)),
		aware.WithIdempotencyKey(s.wireKey(key)),
		aware.WithMaxAttempts(s.o.MaxAttempts),
		aware.WithBackOff(&seededBackOff{o: s.o, key: key}),
	)
	var stopped *aware.CancelError
	switch {
	case err == nil:
		return sources, nil
	case errors.As(err, &stopped):
		s.book.Noticed(loop.SpanContext().SpanID())
		return 0, err
	}
	return 0, nil // a hard failure, or retries exhausted: answer without sources
}

var (
	errRetryable = errors.New("search tool: retryable failure")
	errHard      = errors.New("search tool: hard failure")
)

// seededBackOff is the simulator's backoff as a cenkalti/backoff policy: Backoff(n, ...) with
// the jitter drawn from the seed, the key and the attempt number, so that both modes wait the
// same.
type seededBackOff struct {
	o   Options
	key string
	n   int
}

func (b *seededBackOff) Reset() { b.n = 0 }

func (b *seededBackOff) NextBackOff() time.Duration {
	b.n++
	return b.o.scale(Backoff(b.n, b.o.BackoffBase, b.o.BackoffMax, b.o.Jitter, unitFor(b.o.Seed, "backoff", b.key, b.n)))
}

// searchAttempt makes attempt n of a search-tool call: one otelhttp CLIENT span "POST /search"
// with the call's idempotency key, recorded in the book.
func (s *sim) searchAttempt(ctx context.Context, a *agent, key string, n int) (truth.Result, int) {
	c := &call{name: "POST /search", template: "/search", attempt: n}
	body, _ := json.Marshal(map[string]any{"query": "sources for " + a.name, "k": 5})
	req, _ := http.NewRequestWithContext(withCall(ctx, c), http.MethodPost, s.toolURL+"/search", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(headerIdempotencyKey, s.wireKey(key))
	res, status, out := s.do(a.client, req)
	s.book.Attempted(truth.Attempt{
		TraceID: c.traceID, SpanID: c.spanID, RunID: a.name + "/search/" + key, Number: n,
		Service: a.name, Operation: c.name, Kind: truth.KindCall, Result: res, Status: status,
	})
	if res != truth.ResultOK {
		return res, 0
	}
	var sr searchResponse
	_ = json.Unmarshal(out, &sr)
	return res, len(sr.Results)
}

// chat is the sub-agent's model call: one CLIENT span "chat <model>".
func (s *sim) chat(ctx context.Context, a *agent, key string, p plan) (string, error) {
	c := &call{name: "chat " + a.model, template: "/v1/chat/completions", attempt: 1, model: a.model, maxTokens: p.outputTokens}
	body, _ := json.Marshal(chatRequest{
		Model:     a.model,
		MaxTokens: p.outputTokens,
		Messages:  []chatMessage{{Role: "user", Content: strings.Repeat("word", p.inputTokens)}},
	})
	req, _ := http.NewRequestWithContext(withCall(ctx, c), http.MethodPost, s.modelURL+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	res, status := truth.ResultHard, 0
	answer := ""
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status = resp.StatusCode
		res = truth.ResultOfHTTPStatus(status)
	} else if isCtxErr(err) {
		res = truth.ResultCancelled
	}
	at := truth.Attempt{
		TraceID: c.traceID, SpanID: c.spanID, RunID: a.name + "/chat/" + key, Number: 1,
		Service: a.name, Operation: c.name, Kind: truth.KindModel, Result: res, Status: status, Model: a.model,
	}
	if c.usage != nil {
		at.InputTokens, at.OutputTokens = c.usage.Usage.PromptTokens, c.usage.Usage.CompletionTokens
		if c.usage.Model != "" {
			at.Model = c.usage.Model
		}
		if len(c.usage.Choices) > 0 {
			answer = c.usage.Choices[0].Message.Content
		}
	}
	s.book.Attempted(at)
	if err != nil {
		return "", err
	}
	if res != truth.ResultOK {
		return "", fmt.Errorf("model answered %d", status)
	}
	return answer, nil
}

// publish hands the result to a queue nobody drains: one PRODUCER span.
func (s *sim) publish(ctx context.Context, a *agent, key, answer string) {
	start := time.Now()
	_, span := s.tel.tracer(a.name).Start(ctx, "send agent-results",
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithTimestamp(start),
		trace.WithAttributes(
			semconv.MessagingSystemKey.String("fanoutsim"),
			semconv.MessagingOperationTypeSend,
			semconv.MessagingOperationName("send"),
			semconv.MessagingDestinationName("agent-results"),
		))
	payload, _ := json.Marshal(map[string]string{"agent": a.name, "key": key, "answer": answer})
	s.queueMu.Lock()
	if len(s.queue) < 1024 {
		s.queue = append(s.queue, payload)
	} else {
		s.queue[s.queued%len(s.queue)] = payload
	}
	s.queued++
	s.queueMu.Unlock()
	span.SetAttributes(semconv.MessagingMessageBodySize(len(payload)))
	end := time.Now()
	if !end.After(start) {
		end = start.Add(time.Microsecond) // a span with no duration cannot be judged
	}
	span.End(trace.WithTimestamp(end))
	s.book.Attempted(truth.Attempt{
		TraceID: span.SpanContext().TraceID(), SpanID: span.SpanContext().SpanID(), RunID: a.name + "/publish/" + key, Number: 1,
		Service: a.name, Operation: "send agent-results", Kind: truth.KindPublish, Result: truth.ResultOK,
	})
}

// ---------------------------------------------------------------- search tool

type searchResponse struct {
	Results []string `json:"results"`
}

// tool is the flaky search tool: each attempt fails with 503 at the configured rate, decided by
// the seed, the idempotency key and how many attempts with that key it has seen.
func (s *sim) tool(w http.ResponseWriter, r *http.Request) {
	drain(r)
	key := seededKey(r.Header.Get(headerIdempotencyKey))
	s.toolMu.Lock()
	if len(s.toolSeen) > 1_000_000 {
		s.toolSeen = map[string]int{}
	}
	s.toolSeen[key]++
	n := s.toolSeen[key]
	s.toolMu.Unlock()

	ctx := r.Context() // a Go server notices a closed connection; aware: with the X-Deadline
	lat := time.Duration(float64(s.o.scale(s.o.ToolLatency)) * (0.5 + unitFor(s.o.Seed, "tool-latency", key, n)))
	if err := sleepCtx(ctx, lat); err != nil {
		s.stopHandler(w, r, err)
		return
	}
	if unitFor(s.o.Seed, "tool-fail", key, n) < s.o.ToolFailureRate {
		http.Error(w, "search backend overloaded", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(searchResponse{Results: []string{"doc-1", "doc-2", "doc-3"}})
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ---------------------------------------------------------------- model provider

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model     string        `json:"model"`
	MaxTokens int           `json:"max_tokens"`
	Messages  []chatMessage `json:"messages"`
}

type chatResponse struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int         `json:"index"`
		Message      chatMessage `json:"message"`
		FinishReason string      `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		TotalTokens      int64 `json:"total_tokens"`
	} `json:"usage"`
}

// model is the fake model provider: prompt tokens are a quarter of the prompt's characters,
// the completion uses max_tokens, and the latency is first token + tokens x per token.
func (s *sim) model(w http.ResponseWriter, r *http.Request) {
	raw := drain(r)
	var req chatRequest
	if err := json.Unmarshal(raw, &req); err != nil || req.Model == "" || req.MaxTokens <= 0 {
		http.Error(w, `{"error":{"message":"invalid request"}}`, http.StatusBadRequest)
		return
	}
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content)
	}
	in, out := int64((chars+3)/4), int64(req.MaxTokens)
	ctx := r.Context()
	lat := s.o.scale(s.o.ModelFirstToken + time.Duration(out)*s.o.ModelPerToken)
	if err := sleepCtx(ctx, lat); err != nil {
		s.stopHandler(w, r, err)
		return
	}
	var resp chatResponse
	resp.ID = "chatcmpl-" + keyFor(s.o.Seed, "completion", raw)[:13]
	resp.Object = "chat.completion"
	resp.Model = req.Model
	resp.Choices = append(resp.Choices, struct {
		Index        int         `json:"index"`
		Message      chatMessage `json:"message"`
		FinishReason string      `json:"finish_reason"`
	}{Message: chatMessage{Role: "assistant", Content: "an answer of " + strconv.FormatInt(out, 10) + " tokens"}, FinishReason: "stop"})
	resp.Usage.PromptTokens, resp.Usage.CompletionTokens, resp.Usage.TotalTokens = in, out, in+out
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// agentAttrs are extra attributes on a sub-agent's SERVER span.
func agentAttrs(a *agent) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("gen_ai.agent.name", a.name)}
}
