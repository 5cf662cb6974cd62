package truth

import (
	"sort"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Cancellation reach: how many service hops down the fan-out the news that the caller had gone
// travelled before something noticed, against how deep orphaned work went (DESIGN.md's
// "cancellation reach", the seed's closing question). Computed here from the simulator's own
// records, independently of internal/verdict, with these definitions:
//
//   - A hop is entering another service: a SERVER or CONSUMER span whose parent span is in
//     another service. The hop depth of a span is the number of such entries on the path from
//     the root to it; the root's service is hop 0.
//   - For every root whose end reason is cancelled or deadline_exceeded (an abandoned request):
//     reach is the deepest hop at which work noticed the cancellation: a span at that hop that
//     recorded a cancellation or deadline error and ended within Grace of the gone time, or a
//     run at that hop whose outcome is cancelled (0 when only the root's own service knew);
//     orphaned depth is the deepest hop of an orphaned span (ended after the gone time, beyond
//     the tolerance across services, exactly within the root's service, and not a span that
//     itself recorded the cancellation and ended within Grace of the gone time); 0 when nothing
//     was orphaned or only the root service's own spans were.

// DefaultGrace is the orphan processor's default cancellation.grace: a recorded cancellation
// counts as noticing only when its span ended within this long of the gone time.
const DefaultGrace = time.Second

// Keys of the attributes from which the Book reads that a span recorded a stop.
const (
	keyHTTPStatus    = "http.response.status_code"
	keyErrorType     = "error.type"
	keyGRPCStatus    = "rpc.grpc.status_code"
	keyRPCStatus     = "rpc.status_code"
	errTypeCanceled  = "context canceled"
	errTypeDeadline  = "context deadline exceeded"
	grpcCanceled     = 1
	grpcDeadline     = 4
	httpClientClosed = 499
	grpcNameCanceled = "CANCELLED"
	grpcNameDeadline = "DEADLINE_EXCEEDED"
)

// recordedStop reports whether a span's attributes say it stopped for a cancellation or a
// deadline: HTTP 499, error.type "context canceled" or "context deadline exceeded", gRPC
// status CANCELLED (1) or DEADLINE_EXCEEDED (4).
func recordedStop(attrs []attribute.KeyValue) bool {
	for _, kv := range attrs {
		switch string(kv.Key) {
		case keyHTTPStatus:
			if kv.Value.Type() == attribute.INT64 && kv.Value.AsInt64() == httpClientClosed {
				return true
			}
		case keyErrorType:
			if v := kv.Value.AsString(); v == errTypeCanceled || v == errTypeDeadline {
				return true
			}
		case keyGRPCStatus, keyRPCStatus:
			switch kv.Value.Type() {
			case attribute.INT64:
				if c := kv.Value.AsInt64(); c == grpcCanceled || c == grpcDeadline {
					return true
				}
			case attribute.STRING:
				if c := kv.Value.AsString(); c == grpcNameCanceled || c == grpcNameDeadline {
					return true
				}
			}
		}
	}
	return false
}

// RequestReach is the cancellation reach of one abandoned request.
type RequestReach struct {
	RequestID   int    `json:"request_id"`
	TraceID     string `json:"trace_id"`
	RootService string `json:"root_service"`
	EndReason   string `json:"end_reason"` // cancelled or deadline_exceeded
	// DepthHops is the deepest hop any span of the request reached.
	DepthHops int `json:"depth_hops"`
	// ReachHops is the deepest hop at which work noticed the cancellation (0: only the root's
	// service).
	ReachHops int `json:"reach_hops"`
	// OrphanedDepthHops is the deepest hop of an orphaned span (0: none beyond the root's
	// service).
	OrphanedDepthHops int `json:"orphaned_depth_hops"`
}

// ReachSummary aggregates the reach of the abandoned requests of one root service, in the
// shape of the exporter's histograms orphanwatch_cancel_reach_hops and
// orphanwatch_orphaned_depth_hops: Count is their _count, ReachSum and OrphanedDepthSum their
// _sum, and the per-value counts give every bucket ([ReachSummary.ReachBucket]).
type ReachSummary struct {
	Count            int `json:"count"`
	ReachSum         int `json:"reach_sum"`
	OrphanedDepthSum int `json:"orphaned_depth_sum"`
	// Reach and OrphanedDepth count requests per value in hops ("0", "1", ...).
	Reach         map[string]int `json:"reach_hops"`
	OrphanedDepth map[string]int `json:"orphaned_depth_hops"`
}

// ReachBuckets are the bucket bounds (le) of the exporter's two hop histograms.
var ReachBuckets = []float64{0, 1, 2, 3, 4, 5, 6, 8, 10}

// ReachBucket is the cumulative count of requests whose reach is at most le (a histogram's
// _bucket{le} sample).
func (s ReachSummary) ReachBucket(le float64) int { return cumulative(s.Reach, le) }

// OrphanedDepthBucket is the cumulative count of requests whose orphaned depth is at most le.
func (s ReachSummary) OrphanedDepthBucket(le float64) int { return cumulative(s.OrphanedDepth, le) }

func cumulative(m map[string]int, le float64) int {
	n := 0
	for k, c := range m {
		if v, err := strconv.Atoi(k); err == nil && float64(v) <= le {
			n += c
		}
	}
	return n
}

// hopDepths returns the hop depth of every span of the book whose path to a root is complete
// (spans below a span that never ended are left out).
func (b *Book) hopDepths() map[trace.SpanID]int {
	depth := make(map[trace.SpanID]int, len(b.spans))
	var path []trace.SpanID
	for id := range b.spans {
		if _, done := depth[id]; done {
			continue
		}
		// Walk up to a span of known depth or a root, then assign on the way down.
		path = path[:0]
		cur := id
		base, known := 0, false
		for steps := 0; steps <= len(b.spans); steps++ {
			if d, ok := depth[cur]; ok {
				base, known = d, true
				break
			}
			s, ok := b.spans[cur]
			if !ok {
				break // the parent never ended: unknown
			}
			path = append(path, cur)
			if !s.parent.IsValid() {
				base, known = 0, true
				path = path[:len(path)-1]
				depth[cur] = 0
				break
			}
			cur = s.parent
		}
		if !known {
			continue
		}
		for i := len(path) - 1; i >= 0; i-- {
			s := b.spans[path[i]]
			d := base
			if p, ok := b.spans[s.parent]; ok && (s.kind == trace.SpanKindServer || s.kind == trace.SpanKindConsumer) && p.service != s.service {
				d++
			}
			depth[path[i]] = d
			base = d
		}
	}
	return depth
}

// reach computes the reach of every abandoned request. gones are the roots' gone times and
// end reasons; cancelledRuns the final attempt spans of runs whose outcome is cancelled.
func (b *Book) reach(gone map[trace.TraceID]goneAt, reasons map[trace.TraceID]string, cancelledRuns []trace.SpanID, tol, grace int64) ([]RequestReach, map[string]*ReachSummary) {
	depth := b.hopDepths()
	type acc struct {
		depth, reach, orphaned int
	}
	per := map[trace.TraceID]*acc{}
	for id, r := range reasons {
		if r == "cancelled" || r == "deadline_exceeded" {
			per[id] = &acc{}
		}
	}
	// A span recorded a stop when its attributes say so, or when the simulator told the book
	// it noticed (both happen together in fanoutsim).
	noticedAtGone := func(id trace.SpanID, s spanRec, g int64) bool {
		return (s.stopped || b.noticed[id]) && abs(s.end-g) <= grace
	}
	for id, s := range b.spans {
		a, ok := per[s.traceID]
		if !ok {
			continue
		}
		d, ok := depth[id]
		if !ok {
			continue
		}
		g := b.hopGone(id, gone[s.traceID], tol)
		a.depth = max(a.depth, d)
		if noticedAtGone(id, s, g.at) {
			a.reach = max(a.reach, d)
			continue
		}
		t := int64(0)
		if s.service != g.service {
			t = tol
		}
		if s.end > g.at+t && s.end != s.start {
			a.orphaned = max(a.orphaned, d)
		}
	}
	for _, id := range cancelledRuns {
		s, ok := b.spans[id]
		if !ok {
			continue
		}
		if a, ok := per[s.traceID]; ok {
			if d, ok := depth[id]; ok {
				a.reach = max(a.reach, d)
			}
		}
	}

	list := make([]RequestReach, 0, len(per))
	by := map[string]*ReachSummary{}
	for id, a := range per {
		r := b.roots[id]
		rr := RequestReach{
			RequestID: r.RequestID, TraceID: id.String(), RootService: r.Service, EndReason: reasons[id],
			DepthHops: a.depth, ReachHops: a.reach, OrphanedDepthHops: a.orphaned,
		}
		list = append(list, rr)
		sum := by[r.Service]
		if sum == nil {
			sum = &ReachSummary{Reach: map[string]int{}, OrphanedDepth: map[string]int{}}
			by[r.Service] = sum
		}
		sum.Count++
		sum.ReachSum += a.reach
		sum.OrphanedDepthSum += a.orphaned
		sum.Reach[strconv.Itoa(a.reach)]++
		sum.OrphanedDepth[strconv.Itoa(a.orphaned)]++
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].RequestID != list[j].RequestID {
			return list[i].RequestID < list[j].RequestID
		}
		return list[i].TraceID < list[j].TraceID
	})
	return list, by
}

// goneAt is a root's gone time (unix ns) and service.
type goneAt struct {
	at      int64
	service string
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
