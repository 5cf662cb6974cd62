package orphanmetricsexporter

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestCardinalityFlood sends 100,000 distinct span names, services and models: the number of
// series stays within the configured limits and every overflowed occurrence is counted.
func TestCardinalityFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("100k spans")
	}
	const n, limit = 100_000, 50
	cfg := NewDefaultConfig()
	cfg.LabelLimits.Default = limit
	rec, err := NewRecorder(cfg)
	require.NoError(t, err)
	td := ptrace.NewTraces()
	for i := range n {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "svc-"+strconv.Itoa(i))
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{byte(i), byte(i >> 8), byte(i >> 16), 1})
		sp.SetSpanID(pcommon.SpanID{1})
		sp.SetName("op-" + strconv.Itoa(i))
		sp.SetStartTimestamp(1e18)
		sp.SetEndTimestamp(1e18 + 1e9)
		a := sp.Attributes()
		a.PutStr("orphanwatch.liveness", "orphaned")
		a.PutBool("orphanwatch.started_after_gone", true)
		a.PutDouble("orphanwatch.after_gone", 1)
		a.PutInt("orphanwatch.attempt", 1)
		a.PutStr("orphanwatch.run.outcome", "delivered_to_nobody")
		a.PutStr("orphanwatch.spend.model", "model-"+strconv.Itoa(i))
		a.PutInt("orphanwatch.spend.input_tokens", 10)
		a.PutStr("orphanwatch.caller.service", "caller-"+strconv.Itoa(i))
		a.PutEmptySlice("http.request.header.idempotency-key").AppendEmpty().SetStr("key-" + strconv.Itoa(i))
	}
	rec.Record(td)
	fams, err := rec.Gatherer().Gather()
	require.NoError(t, err)
	series := 0
	for _, f := range fams {
		series += len(f.GetMetric())
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				assert.NotContains(t, l.GetValue(), "key-", "idempotency keys never become label values")
			}
		}
	}
	// Each family: at most (limit+1)^k series for its k limited labels, times its fixed labels;
	// with one value per fixed label here, (limit+1) values per limited label. runs_total has
	// service_name and operation limited: ≤ 51*51. The whole set must stay far below n.
	assert.Less(t, series, 8*(limit+1)*(limit+1))
	got := samples(t, rec.Gatherer(), "orphanwatch_label_overflow_total")
	assert.Equal(t, float64(n-limit), got[`{label="operation"}`])
	assert.Equal(t, float64(n-limit), got[`{label="model"}`])
	assert.Equal(t, float64(n-limit), got[`{label="caller_service"}`])
	assert.Positive(t, got[`{label="service_name"}`])
	runs := samples(t, rec.Gatherer(), "orphanwatch_runs_total")
	assert.LessOrEqual(t, len(runs), (limit+1)*(limit+1))
	total := 0.0
	for _, v := range runs {
		total += v
	}
	assert.Equal(t, float64(n), total, "overflow folds values into other, it loses no count")
}
