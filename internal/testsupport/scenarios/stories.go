package scenarios

import "strconv"

// The recurring pieces of the scenarios' stories: a gateway root that completed or was
// abandoned, a hop to an agent (answered, or given up on and never heard of), a fan-out agent's
// ordinary work, a chat that went on for nobody, a keyed retry loop. Each builds its spans in the order the scenarios always built them (span IDs
// follow creation order) and writes the verdicts and series that go with the piece, so a
// scenario reads as its story and states only what is particular to it.

// begin starts scenario num (ID "S<num>"): its builder, its first trace and the expectations on
// what it builds, described by the scenario's entry in descriptions.
func begin(num int) (*Builder, *Trace, *Expect) {
	id := "S" + strconv.Itoa(num)
	desc, ok := descriptions[id]
	if !ok {
		panic(id + ": no description")
	}
	b := NewBuilder(num)
	tr := b.NewTrace()
	return b, tr, NewExpect(id, b, desc)
}

// agentCall expects gateway's one call to agent: a run of one attempt with the outcome, the
// attempt with the liveness label.
func agentCall(e *Expect, agent, outcome, liveness string) {
	e.OneRun(Gateway, opAgent(agent), outcome, liveness, 1)
}

// completedAsk adds the gateway's root POST /ask from 0 to end, completed (200): the trace's
// gone time, the root's verdict and its series.
func completedAsk(e *Expect, tr *Trace, end float64) *Span {
	e.Gone(tr, end, Gateway)
	root := tr.HTTPServerRoot(Gateway, "POST", "/ask", 0.00, end, 200)
	e.Span(root, Live().Root(Completed))
	e.Roots(Gateway, Completed, 1)
	return root
}

// liveAgentCall adds gateway's call to agent (subAgentCall, both answered 200) under a live
// root: a live single success and a live server, with the call's series (agentCall). It
// returns the agent's SERVER span.
func liveAgentCall(e *Expect, root *Span, agent string, cs, ce, ss, se float64) *Span {
	call, srv := subAgentCall(root, agent, cs, ce, ss, se, 200, 200)
	e.Span(call, Live().Single(Success, ok))
	e.Span(srv, Live())
	agentCall(e, agent, Success, LLive)
	return srv
}

// subAgentCall adds gateway's CLIENT "POST" to agent and the agent's SERVER "POST /run".
// serverStatus 0 leaves the server without response status code.
func subAgentCall(parent *Span, agent string, cs, ce, ss, se float64, clientStatus, serverStatus int) (call, srv *Span) {
	call = parent.HTTPClient("POST", agent, HTTPPort, "/run", cs, ce, clientStatus)
	srv = call.HTTPServer(agent, "/run", ss, se, serverStatus)
	return call, srv
}

// searchCall adds a CLIENT "GET" from parent to search-tool and search-tool's SERVER
// "GET /search" 10 ms inside it, both with the same status.
func searchCall(parent *Span, start, end float64, status int) (get, tool *Span) {
	get = parent.HTTPClient("GET", SearchTool, HTTPPort, searchPath, start, end, status)
	tool = get.HTTPServer(SearchTool, "/search", start+0.01, end-0.01, status)
	return get, tool
}

// cancelledAsk adds the gateway's root POST /ask from 0 to end, abandoned by its client (499):
// the trace's gone time, the root's verdict with the cancellation's reach and orphaned depth in
// hops, and the root's series.
func cancelledAsk(e *Expect, tr *Trace, end float64, reach, depth int) *Span {
	return cancelledRoot(e, tr, "/ask", end, reach, depth)
}

// cancelledRoot is cancelledAsk for a gateway root POST to another route.
func cancelledRoot(e *Expect, tr *Trace, route string, end float64, reach, depth int) *Span {
	e.Gone(tr, end, Gateway)
	root := tr.HTTPServerRoot(Gateway, "POST", route, 0.00, end, 499)
	e.Span(root, Live().Root(Cancelled).Reach(reach, depth))
	e.Roots(Gateway, Cancelled, 1)
	e.Reach(Gateway, 1, reach, depth)
	return root
}

// askedAgent begins a story in which gateway's completed ask (completedAsk, 0 to end) calls one
// agent, live (liveAgentCall, cs-ce, the agent's SERVER span ss-se). It returns the SERVER span.
func askedAgent(e *Expect, tr *Trace, end float64, agent string, cs, ce, ss, se float64) *Span {
	return liveAgentCall(e, completedAsk(e, tr, end), agent, cs, ce, ss, se)
}

// cancelledAgentCall adds gateway's call to agent (cs-ce) that the gateway gave up on at its
// end (no response, error.type "context canceled": a live cancelled run of one, with its
// series), and the agent's SERVER span ss-se answered serverStatus (0: none). It returns the
// SERVER span, whose verdict depends on the story.
func cancelledAgentCall(e *Expect, root *Span, agent string, cs, ce, ss, se float64, serverStatus int) *Span {
	call, srv := subAgentCall(root, agent, cs, ce, ss, se, 0, serverStatus)
	call.ErrorType("context canceled")
	e.Span(call, Live().Single(Cancelled, bad))
	agentCall(e, agent, Cancelled, LLive)
	return srv
}

// unheardAgentCall is cancelledAgentCall where the agent never heard: its SERVER span, answered
// 200, outlived the gone time by afterGone seconds (orphaned, the edge from gateway named on it).
func unheardAgentCall(e *Expect, root *Span, agent string, cs, ce, ss, se, afterGone float64) *Span {
	srv := cancelledAgentCall(e, root, agent, cs, ce, ss, se, 200)
	e.Span(srv, Orphaned(afterGone, false).Caller(Gateway))
	return srv
}

// fanout is a sub-agent's ordinary work in a fan-out: gateway's call to it, its SERVER span, one
// search-tool call with search-tool's SERVER span, and one gpt-4o-mini chat (1200/300).
type fanout struct{ call, srv, get, tool, chat *Span }

// fanoutAgent adds agent's ordinary work under root, everything answered 200: gateway's call
// 0.01 to end, the agent's SERVER span 0.02 to 10 ms before end, its search 0.10-0.30 and its
// chat 0.40 to 100 ms before end.
func fanoutAgent(root *Span, agent string, end float64) fanout {
	var f fanout
	f.call, f.srv = subAgentCall(root, agent, 0.01, end, 0.02, end-0.01, 200, 200)
	f.get, f.tool = searchCall(f.srv, 0.10, 0.30, 200)
	f.chat = f.srv.Chat(GPT4oMini, 0.40, end-0.10).Usage(1200, 300)
	return f
}

// expect sets the verdicts of the agent's work: base (Live or Unknown) on every span, each call
// a run of one with the outcome and result ok, the chat's spend
// (1200 * 0.15e-6 + 300 * 0.60e-6 = 0.00018 + 0.00018).
func (f fanout) expect(e *Expect, base func() V, outcome string) {
	e.Span(f.call, base().Single(outcome, ok))
	e.Span(f.srv, base())
	e.Span(f.get, base().Single(outcome, ok))
	e.Span(f.tool, base())
	e.Span(f.chat, base().Single(outcome, ok).Spend(GPT4oMini, 1200, 300, 0.00036))
}

// fanoutSeries expects the series of a fan-out agent's work: gateway's call to it (agentCall),
// its search and its chat, each a run of one with the outcome and an attempt with the liveness,
// secs spend seconds (the search's and the chat's), and the chat's model call.
func fanoutSeries(e *Expect, agent, outcome, liveness string, secs float64) {
	agentCall(e, agent, outcome, liveness)
	e.OneRun(agent, opSearch, outcome, liveness, 1)
	e.OneRun(agent, "chat gpt-4o-mini", outcome, liveness, 1)
	e.SpendSeconds(agent, liveness, secs)
	e.ModelCall(agent, GPT4oMini, liveness, 1200, 300, 0.00036)
}

// unheardChat expects the series of an agent that never heard of the cancellation: its chat of
// model (in and out tokens, costing usd) went on after the gone time, a run of one delivered to
// nobody whose attempt has the liveness; its orphaned model call; its SERVER span and its chat
// outliving the gone time by outlived seconds in all; and the unpropagated edge from caller.
func unheardChat(e *Expect, caller, agent, model, liveness string, in, out int, usd, outlived float64) {
	e.OneRun(agent, "chat "+model, DeliveredToNobody, liveness, 1)
	e.ModelCall(agent, model, LOrphaned, in, out, usd)
	e.Outlive(agent, 2, outlived)
	e.Unpropagated(caller, agent, 1)
}

// chatForNobody adds a chat of model under parent, start to end, answered with in and out tokens
// costing usd, that nobody waited for any more: the liveness verdict v (Orphaned) with a run of
// one delivered to nobody (result ok) and the chat's spend.
func chatForNobody(e *Expect, parent *Span, model string, start, end float64, in, out int, usd float64, v V) {
	chat := parent.Chat(model, start, end).Usage(in, out)
	e.Span(chat, v.Single(DeliveredToNobody, ok).Spend(model, in, out, usd))
}

// retry marks s as attempt i+1 of a keyed retry loop: the idempotency key and, from the second
// attempt on, http.request.resend_count i.
func (s *Span) retry(key string, i int) *Span {
	s.IdempotencyKey(key)
	if i > 0 {
		s.ResendCount(i)
	}
	return s
}

// searchRetries adds a keyed retry loop of search-tool calls under parent, one attempt per
// {start, end} (a searchCall marked with retry): every attempt answered 503, but the last,
// answered last. It returns the attempts and search-tool's SERVER spans under them.
func searchRetries(parent *Span, key string, last int, times ...[2]float64) (gets, tools []*Span) {
	for i, tm := range times {
		status := 503
		if i == len(times)-1 {
			status = last
		}
		get, tool := searchCall(parent, tm[0], tm[1], status)
		gets = append(gets, get.retry(key, i))
		tools = append(tools, tool)
	}
	return gets, tools
}

// liveRetryRun expects a retry loop that ended in time (searchRetries): every attempt and its
// search-tool span live, the last attempt closing the run with the outcome and result.
func liveRetryRun(e *Expect, gets, tools []*Span, outcome, result string) {
	for i, get := range gets {
		v := Live().Attempt(i + 1)
		if i == len(gets)-1 {
			v.Run(outcome, len(gets), result)
		}
		e.Span(get, v)
		e.Span(tools[i], Live())
	}
}

// searchTry is one try of a loop that calls search-tool without a server span to show for it,
// with the try's expected verdict.
type searchTry struct {
	start, end float64
	status     int
	v          V
}

// searchTries adds the tries as CLIENT calls to search-tool under parent and expects their
// verdicts.
func searchTries(e *Expect, parent *Span, tries ...searchTry) {
	for _, t := range tries {
		e.Span(parent.HTTPClient("GET", SearchTool, HTTPPort, searchPath, t.start, t.end, t.status), t.v)
	}
}
