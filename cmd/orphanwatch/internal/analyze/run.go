// Package analyze decides the verdicts of trace dumps in-process through the observe path
// (internal/observe, what the orphanmetrics exporter runs by default), on the files' own clock:
// the same rules, configuration and time model the collector runs, the spans handed over in the
// order they end, as a collector receives them, the waits, sweeps and run timeouts passing as
// the span times do. The verdicts are written onto the spans as the orphan processor writes
// them (annotator) and read into a report. The orphanmetrics exporter's Recorder turns the
// same output into the Prometheus metrics the exporter would serve.
package analyze

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/cmd/orphanwatch/internal/input"
	"github.com/orphanwatch/orphanwatch/internal/observe"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor"
)

// DefaultPrices is the price table used when none is configured: USD per million input and
// output tokens (OpenAI list prices; a model also matches by the longest configured prefix, so
// "gpt-4o-2024-08-06" is priced as "gpt-4o").
func DefaultPrices() map[string]orphanprocessor.PriceConfig {
	return map[string]orphanprocessor.PriceConfig{
		"gpt-4o":      {InputPerMillion: 2.50, OutputPerMillion: 10.00},
		"gpt-4o-mini": {InputPerMillion: 0.15, OutputPerMillion: 0.60},
	}
}

// DefaultConfig is the orphan processor's default configuration (the collector's: decision_wait
// 30s, decision_wait_after_root 2s, run_timeout 5m, ...) with the default price table.
func DefaultConfig() *orphanprocessor.Config {
	cfg := orphanprocessor.NewFactory().CreateDefaultConfig().(*orphanprocessor.Config)
	cfg.Prices = DefaultPrices()
	return cfg
}

// Input is one file that was read.
type Input struct {
	Name   string
	Result *input.Result
}

// Output is what one analysis produced.
type Output struct {
	// Traces are the spans as the processor passed them on, with their verdicts.
	Traces []ptrace.Traces
	// Report is the verdicts read back from Traces.
	Report *Report
}

// Run analyses the inputs together, as one collector receiving all their spans, so that traces
// that refer to each other (an idempotency key, a span link, a trace split over two files)
// find each other. cfg is the processor configuration (nil: DefaultConfig), used as it is:
// limits and waits as on the collector (with decide_each_batch, or its deprecated spelling
// decision_wait: 0, the input is one batch, decided at once with no wait, and the limits are
// raised to hold it). Every span is handed over at its end time (a span without one with the
// latest span of its trace); when all are in, time runs on until nothing
// is held or owed, so every verdict is final. The inputs' traces are consumed.
func Run(ctx context.Context, cfg *orphanprocessor.Config, inputs []Input) (*Output, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	files := make([]FileReport, len(inputs))
	traceFiles := map[pcommon.TraceID][]int{}
	var arrivals []arrival
	for i, in := range inputs {
		files[i] = FileReport{Name: in.Name, Format: in.Result.Format, Spans: in.Result.Spans,
			Malformed: in.Result.Malformed, Warnings: in.Result.Warnings}
		seen := map[pcommon.TraceID]bool{}
		arrivals = appendArrivals(arrivals, in.Result.Traces, func(id pcommon.TraceID) {
			if !seen[id] {
				seen[id] = true
				traceFiles[id] = append(traceFiles[id], i)
			}
		})
		files[i].Traces = len(seen)
	}
	orderArrivals(arrivals)
	if cfg.DecidesEachBatch() && len(arrivals) > 0 {
		// decide_each_batch decides each batch whole as it arrives, which is sound where a batch
		// holds whole traces (behind groupbytrace): the input is handed over as one batch, and
		// nothing waits (no root, chain or abandoned root wait), as the processor decides then.
		last := arrivals[len(arrivals)-1].at
		for i := range arrivals {
			arrivals[i].at = last
		}
		c := *cfg
		var none time.Duration
		c.DecisionWait, c.ChainWait, c.AbandonedRootHold = 0, &none, &none
		n, most := traceSizes(arrivals)
		c.Limits.MaxTraces = max(c.Limits.MaxTraces, n+1)
		c.Limits.MaxSpansPerTrace = max(c.Limits.MaxSpansPerTrace, most+1)
		cfg = &c
	}

	// The observe path (internal/observe), on the file's clock: every span handed over at its
	// end, the waits and sweeps passing as the span times do; the verdicts written onto the
	// spans of the output by the annotator, as the orphan processor would write them.
	clk := &replayClock{}
	ann := newAnnotator()
	obs, err := observe.New(cfg.Config, cfg.Limits.LimitsConfig, ann, observe.Settings{Now: clk.Now})
	if err != nil {
		return nil, fmt.Errorf("processor configuration: %w", err)
	}
	var out []ptrace.Traces
	for i := 0; i < len(arrivals); {
		at := arrivals[i].at
		j := i
		for j < len(arrivals) && arrivals[j].at == at {
			j++
		}
		td := batchOf(arrivals[i:j])
		ann.index(td)
		clk.advance(obs, time.Unix(0, at))
		obs.Consume(td)
		obs.Tick()
		out = append(out, td)
		i = j
	}
	clk.drain(obs, cfg)
	// Ask the same observer for each root's gone time (see goneProbes).
	probeBatch, probeSpans := goneProbes(out)
	var probes []ptrace.Traces
	if probeBatch.SpanCount() > 0 {
		// Only the probes take verdicts now: what deciding them re-decides of their traces
		// is not the input's (the processor sent it to the probes' output, apart).
		ann.spans = map[spanKey]*sameID{}
		ann.index(probeBatch)
		obs.Consume(probeBatch)
		clk.drain(obs, cfg)
		probes = append(probes, probeBatch)
	}
	obs.Shutdown()

	rep := buildReport(out, files, traceFiles, readProbes(probes, probeSpans))
	rep.Summary.Processor = observerCounts(obs.Stats(), probeBatch.SpanCount())
	return &Output{Traces: out, Report: rep}, nil
}

// arrival is one span of the input with the moment a collector would receive it.
type arrival struct {
	at int64 // unix ns
	rs ptrace.ResourceSpans
	ss ptrace.ScopeSpans
	sp ptrace.Span
}

// appendArrivals lists td's spans with their arrival: their end time (an SDK exports a span
// when it ends). A span without an end time arrives at its start, and without either with the
// last span of its trace, so that it is decided with its trace. seen is called with each span's
// trace ID.
func appendArrivals(dst []arrival, td ptrace.Traces, seen func(pcommon.TraceID)) []arrival {
	first := len(dst)
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			ss := sss.At(j)
			spans := ss.Spans()
			for k := range spans.Len() {
				sp := spans.At(k)
				seen(sp.TraceID())
				at := int64(sp.EndTimestamp())
				if at == 0 {
					at = int64(sp.StartTimestamp())
				}
				dst = append(dst, arrival{at: at, rs: rs, ss: ss, sp: sp})
			}
		}
	}
	var timeless map[pcommon.TraceID]int64
	for i := first; i < len(dst); i++ {
		if dst[i].at != 0 {
			continue
		}
		if timeless == nil {
			timeless = map[pcommon.TraceID]int64{}
			for _, a := range dst[first:] {
				id := a.sp.TraceID()
				timeless[id] = max(timeless[id], a.at)
			}
		}
		dst[i].at = timeless[dst[i].sp.TraceID()]
	}
	return dst
}

// traceSizes returns the number of traces of the arrivals and the spans of the largest.
func traceSizes(a []arrival) (traces, most int) {
	n := map[pcommon.TraceID]int{}
	for _, x := range a {
		n[x.sp.TraceID()]++
	}
	for _, c := range n {
		most = max(most, c)
	}
	return len(n), most
}

// orderArrivals sorts the spans by arrival; spans that arrive together stay in input order.
func orderArrivals(a []arrival) {
	slices.SortStableFunc(a, func(x, y arrival) int { return cmp.Compare(x.at, y.at) })
}

// batchOf moves the spans into one batch, each run of spans of one resource and scope into one
// ScopeSpans with a copy of them.
func batchOf(a []arrival) ptrace.Traces {
	td := ptrace.NewTraces()
	var (
		lastRS ptrace.ResourceSpans
		lastSS ptrace.ScopeSpans
		dst    ptrace.SpanSlice
		has    bool
	)
	for _, x := range a {
		if !has || x.rs != lastRS || x.ss != lastSS {
			drs := td.ResourceSpans().AppendEmpty()
			x.rs.Resource().CopyTo(drs.Resource())
			drs.SetSchemaUrl(x.rs.SchemaUrl())
			dss := drs.ScopeSpans().AppendEmpty()
			x.ss.Scope().CopyTo(dss.Scope())
			dss.SetSchemaUrl(x.ss.SchemaUrl())
			dst, lastRS, lastSS, has = dss.Spans(), x.rs, x.ss, true
		}
		x.sp.MoveTo(dst.AppendEmpty())
	}
	return td
}

// probe is a synthetic span sent to learn a root's gone time.
type probe struct {
	end int64 // unix ns
}

// goneKey names one root: its trace and span ID (a trace may hold several roots).
type goneKey struct {
	trace pcommon.TraceID
	root  pcommon.SpanID
}

// probeID is the span ID of the probe of a root: the root's ID with every bit flipped.
func probeID(root pcommon.SpanID) pcommon.SpanID {
	for i := range root {
		root[i] ^= 0xff
	}
	return root
}

// goneProbes builds, for every decided root, one late child span of the root, in its service,
// that ends two seconds after the root. The processor judges a late span against the root its
// parent had (gone time = the earliest of the root's end and its deadline, by the processor's
// own deadline rules), within one service without clock-skew tolerance, so the probe comes back
// orphaned with after_gone = probe end - gone time, from which the gone time is exact. The
// probes are not part of any output or metric.
func goneProbes(out []ptrace.Traces) (ptrace.Traces, map[goneKey]probe) {
	td := ptrace.NewTraces()
	probes := map[goneKey]probe{}
	for _, t := range out {
		forEachSpan(t, func(res pcommon.Resource, sp ptrace.Span) {
			if r, ok := sp.Attributes().Get(verdict.AttrRootEndReason); !ok || r.Str() == verdict.EndReasonDetached.String() {
				return // no root, or the root of detached work: no gone time of its own
			}
			k := goneKey{sp.TraceID(), sp.SpanID()}
			if _, dup := probes[k]; dup || sp.EndTimestamp() == 0 {
				return
			}
			rs := td.ResourceSpans().AppendEmpty()
			if v, ok := res.Attributes().Get("service.name"); ok {
				v.CopyTo(rs.Resource().Attributes().PutEmpty("service.name"))
			}
			p := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			p.SetTraceID(sp.TraceID())
			p.SetSpanID(probeID(sp.SpanID()))
			p.SetParentSpanID(sp.SpanID())
			p.SetName("orphanwatch.gone_probe")
			p.SetKind(ptrace.SpanKindInternal)
			end := int64(sp.EndTimestamp()) + 2e9
			p.SetStartTimestamp(pcommon.Timestamp(end - 1e9))
			p.SetEndTimestamp(pcommon.Timestamp(end))
			probes[k] = probe{end: end}
		})
	}
	return td, probes
}

// readProbes returns the gone time (unix ns) of each root whose probe came back orphaned.
func readProbes(out []ptrace.Traces, probes map[goneKey]probe) map[goneKey]int64 {
	gone := map[goneKey]int64{}
	for _, t := range out {
		forEachSpan(t, func(_ pcommon.Resource, sp ptrace.Span) {
			k := goneKey{sp.TraceID(), sp.ParentSpanID()}
			p, ok := probes[k]
			if !ok || sp.SpanID() != probeID(k.root) {
				return
			}
			a := sp.Attributes()
			if l, ok := a.Get(verdict.AttrLiveness); !ok || l.Str() != "orphaned" {
				return
			}
			if v, ok := a.Get(verdict.AttrAfterGone); ok && v.Type() == pcommon.ValueTypeDouble {
				gone[k] = p.end - int64(math.Round(v.Double()*1e9))
			}
		})
	}
	return gone
}

// observerCounts are the observer's own counts of spans it could not judge and of verdicts
// it deferred, less the probes.
func observerCounts(st observe.Stats, probes int) ProcessorCounts {
	return ProcessorCounts{
		SpansProcessed:    st.Spans - int64(probes),
		WithoutVerdict:    st.WithoutVerdict,
		AttributesIgnored: st.AttributesIgnored,
		TracesRootMissing: st.RootMissing,
		RunsUnknownRoot:   st.UnknownRootRuns,
		SpansDeferred:     st.Deferred,
	}
}

func forEachSpan(td ptrace.Traces, f func(pcommon.Resource, ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				f(rs.Resource(), spans.At(k))
			}
		}
	}
}

// Metrics records the analysed spans with the orphanmetrics exporter's Recorder (cfg nil: the
// exporter's defaults) and returns it; WriteText on it gives what the exporter would serve.
func Metrics(out *Output, cfg *orphanmetrics.Settings) (*orphanmetrics.Recorder, error) {
	rec, err := orphanmetrics.NewRecorder(cfg)
	if err != nil {
		return nil, err
	}
	for _, td := range out.Traces {
		rec.Record(td)
	}
	return rec, nil
}
