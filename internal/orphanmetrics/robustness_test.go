package orphanmetrics

import (
	"io"
	"math"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"pgregory.net/rapid"
)

var (
	fuzzKeys  = attrNames[:]
	eventKeys = []string{attrEventTraceID, attrEventSpanID, attrEventSpanName, attrEventSpanKind, attrEventStart, attrEventService}
)

// anyValue draws an attribute value of any type, biased towards the values
// the contract uses so that the interesting paths are reached.
func anyValue(t *rapid.T, v pcommon.Value) {
	switch rapid.IntRange(0, 7).Draw(t, "type") {
	case 0:
		v.SetStr(rapid.SampledFrom([]string{
			"live", "orphaned", "unknown", "success", "delivered_to_nobody", "cancelled", "completed",
			"gpt-4o", "", "12", "-3", "NaN", "+Inf", "1e400", "\xff\xfe", "other",
			"server", "client", traceA.String(), "c000000000000001", "0000000000000000",
		}).Draw(t, "str"))
	case 1:
		v.SetInt(rapid.Int64().Draw(t, "int"))
	case 2:
		v.SetDouble(rapid.SampledFrom([]float64{0, 0.5, -1, 3, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64}).Draw(t, "double"))
	case 3:
		v.SetBool(rapid.Bool().Draw(t, "bool"))
	case 4:
		v.SetEmptySlice().AppendEmpty().SetStr("x")
	case 5:
		v.SetEmptyMap().PutStr("k", "v")
	case 6:
		v.SetEmptyBytes().FromRaw([]byte{1, 2})
	default:
		// leave empty
	}
}

// Whatever the attributes, Record never panics and the registry stays
// gatherable and encodable (valid UTF-8, consistent label sets).
func TestRecordArbitraryAttributes(t *testing.T) {
	r := newTestRecorder(t, func(c *Settings) { c.LabelLimits.Default = 3 })
	rapid.Check(t, func(t *rapid.T) {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		if rapid.Bool().Draw(t, "has_service") {
			anyValue(t, rs.Resource().Attributes().PutEmpty("service.name"))
		}
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		n := rapid.IntRange(1, 5).Draw(t, "spans")
		for range n {
			span := spans.AppendEmpty()
			span.SetName(rapid.SampledFrom([]string{"a", "b", "", "\xff", "c"}).Draw(t, "name"))
			if rapid.Bool().Draw(t, "has_trace") {
				span.SetTraceID(traceA)
			}
			span.SetStartTimestamp(pcommon.Timestamp(rapid.Uint64Range(0, 1e12).Draw(t, "start")))
			span.SetEndTimestamp(pcommon.Timestamp(rapid.Uint64Range(0, 1e12).Draw(t, "end")))
			for _, key := range fuzzKeys {
				if rapid.IntRange(0, 2).Draw(t, "present_"+key) > 0 {
					anyValue(t, span.Attributes().PutEmpty(key))
				}
			}
			// Carried verdicts, with any identity.
			for range rapid.IntRange(0, 2).Draw(t, "events") {
				e := span.Events().AppendEmpty()
				e.SetName(rapid.SampledFrom([]string{"orphanwatch.verdict", "exception"}).Draw(t, "event"))
				e.SetTimestamp(pcommon.Timestamp(rapid.Uint64Range(0, 1e12).Draw(t, "time")))
				for _, key := range append(fuzzKeys, eventKeys...) {
					if rapid.IntRange(0, 2).Draw(t, "event_"+key) > 0 {
						anyValue(t, e.Attributes().PutEmpty(key))
					}
				}
			}
		}
		r.Record(td)
		if _, err := r.Gatherer().Gather(); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteOpenMetrics(io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}

func TestKeyIndex(t *testing.T) {
	for i, name := range attrNames {
		if got := keyIndex(name); got != i {
			t.Errorf("keyIndex(%q) = %d, want %d", name, got, i)
		}
		if len(name) < minKeyLen {
			t.Errorf("%q is shorter than minKeyLen", name)
		}
	}
	for _, other := range []string{"service.name", "", "x", "orphanwatch.liveness2", "http.response.status_code", "rpc.methox"} {
		if keyIndex(other) != -1 {
			t.Errorf("keyIndex(%q) found a name the exporter does not read", other)
		}
	}
}
