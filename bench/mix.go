package bench

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
)

// Kinds of traces in the mix, with the share of traces each gets (MixShares).
const (
	KindHappy     = "happy"         // every agent finishes, the root completes
	KindCancelled = "caller_leaves" // the caller leaves (499); agents keep working: orphans
	KindDeadline  = "deadline"      // an X-Deadline passes (504); agents keep working: orphans
	KindError     = "agent_error"   // one agent fails hard; the root answers 502
	KindNoRoot    = "root_missing"  // the root span never arrives (a lost batch): unknown_root
)

// MixShares is the share of each kind of trace, in percent. About one trace in five leaves
// work behind (orphaned spans, runs delivered to nobody), the rate the agent fan-out
// simulator (cmd/fanoutsim) sees with realistic patience.
var MixShares = []struct {
	Kind    string
	Percent int
}{
	{KindHappy, 72},
	{KindCancelled, 14},
	{KindDeadline, 6},
	{KindError, 5},
	{KindNoRoot, 3},
}

// Mix is a set of pre-built span batches of agent fan-out traces. Every component of the
// benchmark suite is fed the same batches.
type Mix struct {
	Batches []ptrace.Traces
	Traces  int
	Spans   int
	// ByKind counts traces by kind.
	ByKind map[string]int
	// Retries counts attempt spans that repeat an earlier attempt (resend_count >= 1);
	// ModelCalls counts chat spans.
	Retries, ModelCalls int
}

var agents = []string{scenarios.Planner, scenarios.Researcher, scenarios.Coder, scenarios.Critic}

// BuildMix builds traces agent fan-out traces of about 40 spans each and packs them into
// batches of tracesPerBatch whole traces, one ResourceSpans per service and batch (as a
// gateway collector behind a trace-ID load balancer receives them). The result depends only
// on the arguments.
func BuildMix(traces, tracesPerBatch int, seed uint64) *Mix {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	m := &Mix{ByKind: map[string]int{}}
	var pending []*scenarios.Span
	flush := func() {
		if len(pending) == 0 {
			return
		}
		td := scenarios.SpansToTraces(pending)
		decorateResources(td)
		m.Batches = append(m.Batches, td)
		pending = pending[:0]
	}
	for t := range traces {
		kind := pickKind(r)
		m.ByKind[kind]++
		spans := buildTrace(r, m, t, kind)
		pending = append(pending, spans...)
		m.Spans += len(spans)
		m.Traces++
		if (t+1)%tracesPerBatch == 0 {
			flush()
		}
	}
	flush()
	return m
}

func pickKind(r *rand.Rand) string {
	n := r.IntN(100)
	for _, s := range MixShares {
		if n < s.Percent {
			return s.Kind
		}
		n -= s.Percent
	}
	return KindHappy
}

// TraceID returns the ID of trace t of the mix, stamped with round (benchmarks give every
// round fresh trace IDs, so the processor meets new traces as it would in production).
func TraceID(t int, round uint32) pcommon.TraceID {
	var id [16]byte
	id[0] = 0xbe
	binary.BigEndian.PutUint32(id[4:], round)
	binary.BigEndian.PutUint64(id[8:], uint64(t)+1)
	return pcommon.TraceID(id)
}

// Restamp gives every span of the batches the trace ID of round, keeping the trace number.
func Restamp(batches []ptrace.Traces, round uint32) {
	for _, td := range batches {
		tdwalk.Spans(td, func(sp ptrace.Span) {
			id := sp.TraceID()
			binary.BigEndian.PutUint32(id[4:], round)
			sp.SetTraceID(id)
		})
	}
}

// Clone deep-copies batches.
func Clone(batches []ptrace.Traces) []ptrace.Traces {
	out := make([]ptrace.Traces, len(batches))
	for i, td := range batches {
		out[i] = ptrace.NewTraces()
		td.CopyTo(out[i])
	}
	return out
}

// decorateResources adds the resource attributes an SDK and the k8sattributes processor
// typically put on every batch, so that copying resources costs what it costs in production.
func decorateResources(td ptrace.Traces) {
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		a := rss.At(i).Resource().Attributes()
		svc, _ := a.Get("service.name")
		name := svc.Str()
		a.PutStr("service.version", "1.14.2")
		a.PutStr("service.instance.id", name+"-7d9f8b6c5-x2k4q")
		a.PutStr("deployment.environment.name", "production")
		a.PutStr("telemetry.sdk.name", "opentelemetry")
		a.PutStr("telemetry.sdk.language", "go")
		a.PutStr("telemetry.sdk.version", "1.38.0")
		a.PutStr("host.name", "node-"+name)
		a.PutStr("k8s.namespace.name", "agents")
		a.PutStr("k8s.pod.name", name+"-7d9f8b6c5-x2k4q")
	}
}

// buildTrace builds trace t of the given kind: the gateway fans out to the four sub-agents;
// each makes a vector-store gRPC call, one or two search-tool calls and one or two model calls,
// each inside a retry loop; a few publish a result to a queue.
func buildTrace(r *rand.Rand, m *Mix, t int, kind string) []*scenarios.Span {
	b := scenarios.NewBuilder(1 + t%250)
	tr := b.NewTraceWithID(TraceID(t, 0))
	// The natural length of the work; a cancelled or timed-out root ends earlier.
	natural := 4 + 4*r.Float64()
	rootEnd, rootStatus := natural+0.05, 200
	switch kind {
	case KindCancelled:
		rootEnd, rootStatus = natural*(0.2+0.5*r.Float64()), 499
	case KindDeadline:
		rootEnd, rootStatus = float64(int(natural*0.6)+1), 504
	case KindError:
		rootStatus = 502
	}
	root := tr.HTTPServerRoot(scenarios.Gateway, "POST", "/ask", 0, rootEnd, rootStatus)
	if kind == KindDeadline {
		root.Deadline(rootEnd)
	}
	failing := -1
	if kind == KindError {
		failing = r.IntN(len(agents))
	}
	for ai, agent := range agents {
		cs := 0.01 + 0.005*float64(ai)
		ce := natural - 0.01*float64(ai)
		ss, se := cs+0.01, ce-0.01
		callEnd, callStatus := ce, 200
		if rootStatus == 499 || rootStatus == 504 {
			callEnd, callStatus = min(ce, rootEnd), 0
		}
		if ai == failing {
			callStatus = 500
		}
		call := root.HTTPClient("POST", agent, scenarios.HTTPPort, "/run", cs, callEnd, callStatus)
		switch {
		case callStatus == 0 && rootStatus == 504:
			call.ErrorType("context deadline exceeded")
		case callStatus == 0:
			call.ErrorType("context canceled")
		}
		if kind == KindDeadline {
			call.Deadline(rootEnd)
		}
		srvStatus := 200
		if ai == failing {
			srvStatus = 500
		}
		srv := call.HTTPServer(agent, "/run", ss, se, srvStatus)
		cur := ss + 0.02
		step := srv.Child(agent, "agent.plan", scenarios.Internal, cur, cur+0.05)
		step.Set("gen_ai.agent.name", agent)
		cur += 0.06
		// Vector store lookup over gRPC, retried once when UNAVAILABLE.
		cur = retried(r, m, 0.1, func(attempt int, start float64, fail bool) float64 {
			code := scenarios.GRPCOK
			if fail {
				code = scenarios.GRPCUnavailable
			}
			end := start + 0.03 + 0.05*r.Float64()
			c := srv.GRPCClient("vector-store", "vectors.Search", "Query", start, end, code)
			c.GRPCServer("vector-store", start+0.005, end-0.005, code)
			return end
		}, cur)
		for range 1 + r.IntN(2) {
			key := fmt.Sprintf("k-%d-%s-%d", t, agent, r.Uint32())
			cur = retried(r, m, 0.15, func(attempt int, start float64, fail bool) float64 {
				status := 200
				if fail {
					status = 503
				}
				end := start + 0.1 + 0.3*r.Float64()
				get := srv.HTTPClient("GET", scenarios.SearchTool, scenarios.HTTPPort, "/search?q=agents", start, end, status)
				get.IdempotencyKey(key)
				if attempt > 1 {
					get.ResendCount(attempt - 1)
				}
				get.HTTPServer(scenarios.SearchTool, "/search", start+0.01, end-0.01, status)
				return end
			}, cur)
		}
		for range 1 + r.IntN(2) {
			model := scenarios.GPT4oMini
			if r.IntN(3) == 0 {
				model = scenarios.GPT4o
			}
			cur = retried(r, m, 0.1, func(attempt int, start float64, fail bool) float64 {
				end := start + 0.4 + 1.2*r.Float64()
				c := srv.Chat(model, start, end)
				if fail {
					c.HTTPError(429)
				} else {
					c.Usage(500+r.IntN(2500), 100+r.IntN(700))
				}
				m.ModelCalls++
				return end
			}, cur)
		}
		if r.IntN(8) == 0 {
			srv.Produce("kafka", "agent-results", cur, cur+0.02)
		}
	}
	spans := b.Spans()
	if kind == KindNoRoot {
		spans = spans[1:]
	}
	return spans
}

// retried runs one operation in a retry loop: each attempt fails with probability p (at most
// twice), attempts are 50-150 ms apart. It returns when the last attempt ended.
func retried(r *rand.Rand, m *Mix, p float64, attempt func(n int, start float64, fail bool) float64, start float64) float64 {
	for n := 1; ; n++ {
		fail := n < 3 && r.Float64() < p
		if n > 1 {
			m.Retries++
		}
		end := attempt(n, start, fail)
		if !fail {
			return end + 0.01
		}
		start = end + 0.05 + 0.1*r.Float64()
	}
}
