package orphanmetrics

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

var (
	t0      = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	traceA  = pcommon.TraceID([16]byte{0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0})
	traceB  = pcommon.TraceID([16]byte{0xb1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	spanSeq byte
)

// testSpan describes one span of a test trace. Zero start/end offsets are
// kept as offsets from t0 unless zeroTimes is set.
type testSpan struct {
	name      string
	traceID   pcommon.TraceID
	start     time.Duration // offset from t0
	end       time.Duration // offset from t0
	zeroStart bool
	kind      ptrace.SpanKind
	attrs     map[string]any
}

type testResource struct {
	service any // string, or another type to test malformed service.name; nil: absent
	spans   []testSpan
}

func buildTraces(t testing.TB, resources ...testResource) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	for _, r := range resources {
		rs := td.ResourceSpans().AppendEmpty()
		if r.service != nil {
			require.NoError(t, rs.Resource().Attributes().FromRaw(map[string]any{"service.name": r.service}))
		}
		ss := rs.ScopeSpans().AppendEmpty()
		for _, s := range r.spans {
			span := ss.Spans().AppendEmpty()
			span.SetName(s.name)
			span.SetKind(s.kind)
			span.SetTraceID(s.traceID)
			spanSeq++
			span.SetSpanID(pcommon.SpanID([8]byte{0xc0, 0, 0, 0, 0, 0, 0, spanSeq}))
			if !s.zeroStart {
				span.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(s.start)))
			}
			span.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(s.end)))
			require.NoError(t, span.Attributes().FromRaw(s.attrs))
		}
	}
	return td
}

// samples gathers g and returns every sample of the named metric family as
// `{label="value",...}` (labels sorted, constant labels included) -> value.
// Histograms give `_count`, `_sum` and `_bucket{...,le="x"}` entries.
func samples(t testing.TB, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := labelString(m.GetLabel())
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[labels] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out["_count"+labels] = float64(h.GetSampleCount())
				out["_sum"+labels] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					bl := append(slices.Clone(m.GetLabel()), &dto.LabelPair{Name: new("le"), Value: new(fmt.Sprint(b.GetUpperBound()))})
					out["_bucket"+labelString(bl)] = float64(b.GetCumulativeCount())
				}
			default:
				t.Fatalf("unexpected type %v of %s", mf.GetType(), name)
			}
		}
	}
	return out
}

func labelString(pairs []*dto.LabelPair) string {
	parts := make([]string, 0, len(pairs))
	for _, p := range pairs {
		parts = append(parts, fmt.Sprintf("%s=%q", p.GetName(), p.GetValue()))
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// exemplars returns, per series of the named counter family, the labels of
// its exemplar (nil when the series has none). For histograms the exemplars
// of all buckets are merged.
func exemplars(t testing.TB, g prometheus.Gatherer, name string) map[string]map[string]string {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	out := map[string]map[string]string{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var exs []*dto.Exemplar
			if c := m.GetCounter(); c != nil && c.GetExemplar() != nil {
				exs = append(exs, c.GetExemplar())
			}
			if h := m.GetHistogram(); h != nil {
				for _, b := range h.GetBucket() {
					if b.GetExemplar() != nil {
						exs = append(exs, b.GetExemplar())
					}
				}
			}
			var labels map[string]string
			for _, ex := range exs {
				if labels == nil {
					labels = map[string]string{}
				}
				for _, l := range ex.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
			}
			out[labelString(m.GetLabel())] = labels
		}
	}
	return out
}

// gatherText returns the named families of g in the Prometheus text format,
// in the registry's (sorted) order.
func gatherText(t testing.TB, g prometheus.Gatherer, names ...string) string {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if slices.Contains(names, mf.GetName()) {
			require.NoError(t, enc.Encode(mf))
		}
	}
	return buf.String()
}

// freeEndpoint returns a loopback host:port that was free a moment ago.
func freeEndpoint(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
