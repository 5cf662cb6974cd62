package bench

import (
	"cmp"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Spread re-packs the mix's traces the way a collector receives them from SDKs that export
// spans as they end: each trace's spans in the order they end (its root last), cut into parts
// contiguous parts, and part i of every trace of the mix's batch b in batch b+i. So every
// batch carries parts of the traces of parts consecutive mix batches, and a trace's spans
// arrive over parts batches, its root in the last. Spans keep their resource and scope (one
// ResourceSpans per span's resource and batch). The result depends only on the arguments.
func Spread(m *Mix, parts int) []ptrace.Traces { return spread(m, parts, false) }

// SpreadReleases re-packs the mix's traces so that each is released k times by a processor
// whose decision_wait_after_root is shorter than the time between two batches: each trace's
// spans, its root first and then in the order they end, cut into k contiguous parts, and part i
// of every trace of the mix's batch b in batch b*k+i. Every part after the first meets the
// trace's earlier spans in the processor's memory (the time model's trace memo).
func SpreadReleases(m *Mix, k int) []ptrace.Traces { return spread(m, k, true) }

func spread(m *Mix, parts int, rootFirst bool) []ptrace.Traces {
	type flat struct {
		rs ptrace.ResourceSpans
		ss ptrace.ScopeSpans
		sp ptrace.Span
	}
	n := len(m.Batches) + parts - 1
	if rootFirst {
		n = len(m.Batches) * parts
	}
	out := make([]ptrace.Traces, n)
	for i := range out {
		out[i] = ptrace.NewTraces()
	}
	for b, td := range m.Batches {
		var order []pcommon.TraceID
		byTrace := map[pcommon.TraceID][]flat{}
		rss := td.ResourceSpans()
		for i := range rss.Len() {
			rs := rss.At(i)
			for j := range rs.ScopeSpans().Len() {
				ss := rs.ScopeSpans().At(j)
				for k := range ss.Spans().Len() {
					sp := ss.Spans().At(k)
					id := sp.TraceID()
					if _, ok := byTrace[id]; !ok {
						order = append(order, id)
					}
					byTrace[id] = append(byTrace[id], flat{rs, ss, sp})
				}
			}
		}
		for _, id := range order {
			spans := byTrace[id]
			slices.SortStableFunc(spans, func(x, y flat) int {
				xr, yr := x.sp.ParentSpanID().IsEmpty(), y.sp.ParentSpanID().IsEmpty()
				switch {
				case xr != yr && xr != rootFirst:
					return 1 // the root last (first when rootFirst)
				case xr != yr:
					return -1
				}
				return cmp.Compare(x.sp.EndTimestamp(), y.sp.EndTimestamp())
			})
			for i, f := range spans {
				part := i * parts / len(spans)
				dst := out[b+part]
				if rootFirst {
					dst = out[b*parts+part]
				}
				drs := dst.ResourceSpans().AppendEmpty()
				f.rs.Resource().CopyTo(drs.Resource())
				dss := drs.ScopeSpans().AppendEmpty()
				f.ss.Scope().CopyTo(dss.Scope())
				f.sp.CopyTo(dss.Spans().AppendEmpty())
			}
		}
	}
	for _, td := range out {
		mergeResources(td)
	}
	return out
}

// mergeResources gathers a batch's ResourceSpans of equal service.name into one (the spans of
// one service and batch under one resource and its scopes, as an SDK exports them).
func mergeResources(td ptrace.Traces) {
	byService := map[string]ptrace.ScopeSpansSlice{}
	td.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		svc, _ := rs.Resource().Attributes().Get("service.name")
		name := svc.AsString()
		if dst, ok := byService[name]; ok {
			for j := range rs.ScopeSpans().Len() {
				ss := rs.ScopeSpans().At(j)
				into := -1
				for q := range dst.Len() {
					if dst.At(q).Scope().Name() == ss.Scope().Name() {
						into = q
						break
					}
				}
				if into < 0 {
					ss.MoveTo(dst.AppendEmpty())
				} else {
					ss.Spans().MoveAndAppendTo(dst.At(into).Spans())
				}
			}
			return true
		}
		byService[name] = rs.ScopeSpans()
		return false
	})
}
