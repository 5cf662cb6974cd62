package rules

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/orphanwatch/orphanwatch/internal/verdict/record"
)

// decideSpend marks model calls and their spend. A model call is a span naming a model with
// token usage or a model operation (gen_ai.operation.name chat, ...) none of whose descendants
// is a model call: spans that repeat their children's usage (an agent or workflow span, the
// Vercel AI SDK's ai.generateText around ai.generateText.doGenerate) are not counted twice.
func (c *Rules) decideSpend(sc *scratch, spans []record.Span, nodes []Node, out []record.Verdict, st *record.Stats) {
	sc.isCall = Grown(sc.isCall, len(spans))
	isCall := sc.isCall
	for i := range spans {
		if nodes[i].Valid && c.Signals.IsModelCall(&spans[i]) {
			isCall[i] = true
		}
	}
	// Mark ancestors of model calls.
	for i := range spans {
		if !isCall[i] {
			continue
		}
		for p := nodes[i].Parent; p >= 0 && !nodes[p].modelDesc; p = nodes[p].Parent {
			nodes[p].modelDesc = true
		}
	}
	for i := range spans {
		if nodes[i].Valid && nodes[i].modelDesc && (spans[i].InputTokens >= 0 || spans[i].OutputTokens >= 0) {
			// It repeats the usage of model calls below it: said, so that the exporter's
			// fallback for spans the processor never saw does not count it either.
			out[i].SpendRepeated = true
		}
		if !isCall[i] || nodes[i].modelDesc {
			continue
		}
		s, v := &spans[i], &out[i]
		v.Model = s.Model
		v.InputTokens, v.OutputTokens = s.InputTokens, s.OutputTokens
		switch {
		case s.HasCost:
			v.Cost, v.HasCost = s.Cost, true
		default:
			if p, ok := c.PriceOf(s.Model); ok && (s.InputTokens >= 0 || s.OutputTokens >= 0) {
				in, outT := max(s.InputTokens, 0), max(s.OutputTokens, 0)
				v.Cost = (float64(in)*p.InputPerMillion + float64(outT)*p.OutputPerMillion) / 1e6
				v.HasCost = true
			}
		}
	}
}

// PriceOf looks a model up in the price table: exactly, else by the longest configured name
// that prefixes it ("gpt-4o-2024-08-06" uses "gpt-4o"; "gpt-4o-mini-2024-07-18" uses
// "gpt-4o-mini"). A model priced by a prefix is told to Config.PrefixPriced once.
func (c *Rules) PriceOf(model string) (record.Price, bool) {
	if p, ok := c.cfg.Prices[model]; ok {
		return p, true
	}
	best, bestName := record.Price{}, ""
	for name, p := range c.cfg.Prices {
		if len(name) > len(bestName) && strings.HasPrefix(model, name) {
			best, bestName = p, name
		}
	}
	if bestName == "" {
		return record.Price{}, false
	}
	if c.cfg.PrefixPriced != nil {
		c.prefixPriced.tell(model, bestName, c.cfg.PrefixPriced)
	}
	return best, true
}

// MaxPrefixPricedReported bounds the model names told to Config.PrefixPriced: model names come
// from span data, and a sender that writes a new name into every span must not grow the set
// (or the log) without end.
const MaxPrefixPricedReported = 1000

// prefixPricedSet remembers the model names told to Config.PrefixPriced, up to
// MaxPrefixPricedReported. Safe for concurrent use; a name already told costs one map read.
type prefixPricedSet struct {
	told sync.Map // model name -> struct{}
	n    atomic.Int64
}

// tell calls f(model, entry) unless model was told before or the set is full.
func (s *prefixPricedSet) tell(model, entry string, f func(model, entry string)) {
	if _, ok := s.told.Load(model); ok || s.n.Load() >= MaxPrefixPricedReported {
		return
	}
	if _, loaded := s.told.LoadOrStore(model, struct{}{}); loaded {
		return
	}
	if s.n.Add(1) > MaxPrefixPricedReported {
		return
	}
	f(model, entry)
}

// decideNested marks the attempts that run inside another attempt of their own service (an
// SDK's chat call around its HTTP retries, a tool call around its request): their seconds are
// part of the enclosing attempt's spend seconds, which counts them once. Attempts in another
// service (the callee of a call) are not nested: their service spends its own seconds.
func decideNested(sc *scratch, spans []record.Span, nodes []Node, out []record.Verdict) {
	for _, i := range sc.order { // parents before children
		n := &nodes[i]
		if p := n.Parent; p >= 0 && spans[p].Service == spans[i].Service {
			n.attemptAbove = nodes[p].attemptAbove || out[p].Attempt > 0
		}
		if n.attemptAbove && out[i].Attempt > 0 {
			out[i].SpendNested = true
		}
	}
}
