package orphanmetrics

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/recordertest"
)

// TestCardinalityFlood sends 100,000 distinct span names, services and models: the number of
// series stays within the configured limits and every overflowed occurrence is counted.
func TestCardinalityFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("100k spans")
	}
	const n, limit = 100_000, 50
	cfg := NewDefaultSettings()
	cfg.LabelLimits.Default = limit
	rec, err := NewRecorder(cfg)
	require.NoError(t, err)
	resources := make([]recordertest.Resource, n)
	for i := range n {
		resources[i] = recordertest.Resource{Service: "svc-" + strconv.Itoa(i), Spans: []recordertest.Span{{
			Name:    "op-" + strconv.Itoa(i),
			TraceID: pcommon.TraceID{byte(i), byte(i >> 8), byte(i >> 16), 1},
			End:     time.Second,
			Attrs: map[string]any{
				"orphanwatch.liveness": "orphaned", "orphanwatch.started_after_gone": true,
				"orphanwatch.after_gone": 1.0, "orphanwatch.attempt": 1,
				"orphanwatch.run.outcome": "delivered_to_nobody",
				"orphanwatch.spend.model": "model-" + strconv.Itoa(i), "orphanwatch.spend.input_tokens": 10,
				"orphanwatch.caller.service":          "caller-" + strconv.Itoa(i),
				"http.request.header.idempotency-key": []any{"key-" + strconv.Itoa(i)},
			},
		}}}
	}
	rec.Record(recordertest.Build(t, resources...))
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

// TestSeriesLimitFlood is the flood of issue 30: 500 services x 500 operations, every pair
// once, at the default limits. label_limits admit every value (500 each), so only series_limit
// stands between the flood and 250,000 series per counter: each counter keeps at most
// series_limit series plus its overflow series, the scrape stays a few MB, and every count is
// still there, the overflowed ones in the overflow series. (Without the series limit the same
// flood made 495,606 series, a 42.9 MB scrape.) The recorder's per-service caches make a flood
// of new operations cost a map copy per operation: minutes under the race detector, so the
// full size runs without it; TestSeriesLimitFloodSmall runs every metric at a smaller size
// always.
func TestSeriesLimitFlood(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("250k spans: too slow under -race or -short (TestSeriesLimitFloodSmall runs)")
	}
	rec, err := NewRecorder(NewDefaultSettings())
	require.NoError(t, err)
	flood(rec, 500, 500, false)
	text := checkFlood(t, rec, 500, 500, DefaultSeriesLimit, false)
	assert.Less(t, text, 3<<20, "a scrape stays under 3 MB")
}

// TestSeriesLimitFloodSmall is the flood at 60 x 60 with a series limit of 500, every counter
// from span data flooded (models and callers too).
func TestSeriesLimitFloodSmall(t *testing.T) {
	cfg := NewDefaultSettings()
	cfg.SeriesLimit = 500
	rec, err := NewRecorder(cfg)
	require.NoError(t, err)
	flood(rec, 60, 60, true)
	checkFlood(t, rec, 60, 60, 500, true)
}

// flood records one orphaned attempt that closes a delivered_to_nobody run for every pair of
// services x ops (with a model and a caller named after the operation when models is set).
func flood(rec *Recorder, services, ops int, models bool) {
	for s := range services {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "service-"+strconv.Itoa(s))
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		spans.EnsureCapacity(ops)
		for o := range ops {
			sp := spans.AppendEmpty()
			sp.SetTraceID(pcommon.TraceID{byte(s), byte(s >> 8), byte(o), byte(o >> 8), 1})
			sp.SetSpanID(pcommon.SpanID{1})
			sp.SetName("operation-" + strconv.Itoa(o))
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(t0))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Second)))
			a := sp.Attributes()
			a.PutStr("orphanwatch.liveness", "orphaned")
			a.PutDouble("orphanwatch.after_gone", 1)
			a.PutInt("orphanwatch.attempt", 1)
			a.PutStr("orphanwatch.run.outcome", "delivered_to_nobody")
			if models {
				a.PutStr("orphanwatch.spend.model", "model-"+strconv.Itoa(o))
				a.PutInt("orphanwatch.spend.input_tokens", 10)
				a.PutStr("orphanwatch.caller.service", "caller-"+strconv.Itoa(o))
			}
		}
		rec.Record(td)
	}
}

// checkFlood checks the counters after flood: at most limit series each plus the overflow
// series, the counts summing to what was recorded, every use of an overflow series counted.
// It returns the size of a text scrape.
func checkFlood(t *testing.T, rec *Recorder, services, ops, limit int, models bool) int {
	t.Helper()
	n := services * ops
	fams, err := rec.Gatherer().Gather()
	require.NoError(t, err)
	series := 0
	for _, f := range fams {
		series += len(f.GetMetric())
	}
	var text, om bytes.Buffer
	require.NoError(t, rec.WriteText(&text))
	require.NoError(t, rec.WriteOpenMetrics(&om))
	t.Logf("%d spans: %d series, scrape %d bytes (text), %d bytes (OpenMetrics, exemplars)", n, series, text.Len(), om.Len())

	overflow := samples(t, rec.Gatherer(), "orphanwatch_series_overflow_total")
	type metric struct {
		name     string
		overflow string // the overflow series' labels
		perSpan  float64
	}
	ms := []metric{
		{"runs_total", `{operation="other",outcome="delivered_to_nobody",service_name="other"}`, 1},
		{"attempts_total", `{liveness="outlived_root",operation="other",service_name="other"}`, 1},
	}
	if models {
		ms = append(ms,
			metric{"model_calls_total", `{liveness="orphaned",model="other",service_name="other"}`, 1},
			metric{"spend_tokens_total", `{direction="input",liveness="orphaned",model="other",service_name="other"}`, 10},
			metric{"unpropagated_total", `{callee_service="other",caller_service="other"}`, 1})
	}
	for _, m := range ms {
		got := samples(t, rec.Gatherer(), "orphanwatch_"+m.name)
		admitted, ok := rec.Series(m.name)
		require.True(t, ok)
		assert.Equal(t, limit, admitted, m.name)
		assert.Len(t, got, limit+1, "%s: the limit, and one overflow series", m.name)
		total := 0.0
		for _, v := range got {
			total += v
		}
		assert.Equal(t, float64(n)*m.perSpan, total, "%s: overflow folds series into one, it loses no count", m.name)
		over := float64(n - limit)
		assert.Equal(t, over*m.perSpan, got[m.overflow], m.name)
		assert.Equal(t, over, overflow[`{metric="`+m.name+`"}`], "%s: every use of the overflow series counted", m.name)
	}
	// spend_seconds_total (service x liveness: one series a service, all of it orphaned here)
	if services <= limit {
		assert.Zero(t, overflow[`{metric="spend_seconds_total"}`])
		assert.Len(t, samples(t, rec.Gatherer(), "orphanwatch_spend_seconds_total"), services)
	}
	return text.Len()
}

// TestSeriesLimitKeepsAdmittedSeries: a series admitted before the limit was reached keeps
// counting on its own; the overflow series of a metric keeps its fixed labels apart; the
// limit is per metric.
func TestSeriesLimitKeepsAdmittedSeries(t *testing.T) {
	cfg := NewDefaultSettings()
	cfg.SeriesLimit = 2
	rec, err := NewRecorder(cfg)
	require.NoError(t, err)
	run := func(svc, op, outcome string) ptrace.Traces {
		return recordertest.Build(t, testResource{Service: svc, Spans: []testSpan{{
			Name: op, TraceID: traceA, End: time.Second,
			Attrs: map[string]any{"orphanwatch.run.outcome": outcome},
		}}})
	}
	rec.Record(run("a", "x", "success"))
	rec.Record(run("a", "y", "success"))
	rec.Record(run("b", "x", "success"))             // third tuple: overflow
	rec.Record(run("b", "x", "delivered_to_nobody")) // overflow, its outcome kept
	rec.Record(run("a", "x", "success"))             // admitted: still its own series
	got := samples(t, rec.Gatherer(), "orphanwatch_runs_total")
	assert.Equal(t, map[string]float64{
		`{operation="x",outcome="success",service_name="a"}`:                     2,
		`{operation="y",outcome="success",service_name="a"}`:                     1,
		`{operation="other",outcome="success",service_name="other"}`:             1,
		`{operation="other",outcome="delivered_to_nobody",service_name="other"}`: 1,
	}, got)
	assert.Equal(t, 2.0, samples(t, rec.Gatherer(), "orphanwatch_series_overflow_total")[`{metric="runs_total"}`])
	// roots_total has a limit of its own: untouched.
	assert.Zero(t, samples(t, rec.Gatherer(), "orphanwatch_series_overflow_total")[`{metric="roots_total"}`])
}
