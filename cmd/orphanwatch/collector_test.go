package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/orphanwatch/orphanwatch/cmd/orphanwatch/internal/analyze"
	"github.com/orphanwatch/orphanwatch/cmd/orphanwatch/internal/input"
	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/internal/verdictattrs"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor"
)

// TestAnalyzeEqualsCollector sends every scenario, a file of re-sends that share one
// idempotency key across three traces, and the real files of ../shared/testdata-real that last
// 30 s at most through `orphanwatch analyze` (its --spans --format json
// report and its --metrics) and through a collector: the orphan processor made by its factory,
// with its default configuration, its release loop and the wall clock, passing to the
// orphanmetrics exporter made by its factory and scraped over HTTP. The collector receives each
// span when it ends, in real time (the file's times are moved to now first, and the same moved
// file is analysed); when the waits after the roots have passed it is shut down, so that what
// it still holds or owes is decided and carried. Every span's final verdict (written, or
// carried as an orphanwatch.verdict event) and every series must be equal.
func TestAnalyzeEqualsCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("replays each file in real time")
	}
	type tc struct {
		name string
		td   ptrace.Traces
	}
	var cases []tc
	dirs, err := filepath.Glob(filepath.Join(scenarioDir, "s*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(d, "trace.json"))
		require.NoError(t, err)
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
		require.NoError(t, err, d)
		cases = append(cases, tc{filepath.Base(d), td})
	}
	cases = append(cases, tc{"keyed_resends_three_traces", keyedResends()})
	// The real files (read as analyze reads them, then sent as OTLP to both) whose spans last
	// 30 s at most: each case takes as long as its spans do. ORPHANWATCH_COMPARE_LONG=1 takes
	// them all (the Jaeger file lasts 44 s, the smartthings Zipkin file 100 s).
	if dir := e2e.RealTestdata(); dir != "" {
		paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
		require.NoError(t, err)
		for _, p := range paths {
			raw, err := os.ReadFile(p)
			require.NoError(t, err)
			res, err := input.Parse(raw)
			require.NoError(t, err, p)
			if lasts(res.Traces) > 30*time.Second && os.Getenv("ORPHANWATCH_COMPARE_LONG") == "" {
				continue
			}
			cases = append(cases, tc{strings.TrimSuffix(filepath.Base(p), ".json"), res.Traces})
		}
	}

	// The collectors run at once (each in real time), then each is compared with analyze.
	files := make([]string, len(cases))
	runs := make([]collectorRun, len(cases))
	errs := make([]error, len(cases))
	var wg sync.WaitGroup
	start := time.Now().Add(500 * time.Millisecond)
	for i, c := range cases {
		// The same bytes for both: the times moved so the first span ends at start.
		shiftToNow(c.td, start)
		data, err := (&ptrace.JSONMarshaler{}).MarshalTraces(c.td)
		require.NoError(t, err)
		files[i] = filepath.Join(t.TempDir(), c.name+".json")
		require.NoError(t, os.WriteFile(files[i], data, 0o600))
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i], errs[i] = runCollector(data)
		}()
	}
	wg.Wait()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, errs[i])
			col := runs[i]
			rep := analyzeJSON(t, files[i])
			r := runCLI(t, "", "analyze", "--metrics", files[i])
			require.Equal(t, 0, r.code, r.stderr)

			cliSpans := map[string][]string{}
			n := 0
			for _, tr := range rep.Traces {
				for _, s := range tr.SpanVerdicts {
					k := tr.TraceID + "/" + s.SpanID + "/" + strings.ToLower(s.Kind)
					cliSpans[k] = append(cliSpans[k], encodeAttrs(s.Verdict))
					sort.Strings(cliSpans[k])
					n++
				}
			}
			colSeries := seriesOf(t, col.metrics)
			assert.Equal(t, col.spans, n, "spans judged")
			assert.Equal(t, col.verdicts, cliSpans, "every span's final verdict")
			assert.Equal(t, colSeries, seriesOf(t, r.stdout), "every series")
			if c.name == "keyed_resends_three_traces" {
				checkKeyedResends(t, rep, colSeries)
			}
		})
	}
}

// checkKeyedResends states what both must give for the re-sends: one run of three attempts,
// numbered 1, 2, 3 across the traces, closed by the last one, which succeeded 2 s after its
// trace's root was cancelled: delivered_to_nobody. (Deciding each file whole gave three runs.)
func checkKeyedResends(t *testing.T, rep *analyze.Report, colSeries map[string]float64) {
	runs := map[string]int{}
	var attempts []float64
	for _, tr := range rep.Traces {
		for o, n := range tr.Runs {
			runs[o] += n
		}
		for _, s := range tr.SpanVerdicts {
			if s.Name == "POST" {
				a, _ := s.Verdict[verdict.AttrAttempt].(float64)
				attempts = append(attempts, a)
			}
		}
	}
	sort.Float64s(attempts)
	assert.Equal(t, map[string]int{"delivered_to_nobody": 1}, nonZero(runs), "runs of the re-sends")
	assert.Equal(t, []float64{1, 2, 3}, attempts)
	assert.Equal(t, 1.0, colSeries[`orphanwatch_runs_total{operation="POST payments",outcome="delivered_to_nobody",service_name="shop"}`], "the collector's series")
}

// keyedResends is a shop calling payments with Idempotency-Key order-42 in three requests, 10 s
// apart, each its own trace: the first try ends 504, the re-send 503, and the last re-send
// succeeds at 23.0 s, 2 s after the user cancelled that request (HTTP 499 at 21.0 s).
func keyedResends() ptrace.Traces {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := func(s float64) pcommon.Timestamp {
		return pcommon.NewTimestampFromTime(t0.Add(time.Duration(s * float64(time.Second))))
	}
	td := ptrace.NewTraces()
	for i, try := range []struct {
		rootEnd, callEnd    float64
		rootStatus, callSts int64
	}{{2, 1.9, 504, 504}, {12, 11.9, 503, 503}, {21, 23, 499, 200}} {
		start := float64(i) * 10
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "shop")
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		tid := pcommon.TraceID{0x6b, 0xe7, byte(i + 1)}
		root := spans.AppendEmpty()
		root.SetTraceID(tid)
		root.SetSpanID(pcommon.SpanID{0x6b, byte(i + 1), 1})
		root.SetName("POST /checkout")
		root.SetKind(ptrace.SpanKindServer)
		root.SetStartTimestamp(ts(start))
		root.SetEndTimestamp(ts(try.rootEnd))
		root.Attributes().PutStr("http.request.method", "POST")
		root.Attributes().PutInt("http.response.status_code", try.rootStatus)
		call := spans.AppendEmpty()
		call.SetTraceID(tid)
		call.SetSpanID(pcommon.SpanID{0x6b, byte(i + 1), 2})
		call.SetParentSpanID(root.SpanID())
		call.SetName("POST")
		call.SetKind(ptrace.SpanKindClient)
		call.SetStartTimestamp(ts(start + 0.1))
		call.SetEndTimestamp(ts(try.callEnd))
		call.Attributes().PutStr("http.request.method", "POST")
		call.Attributes().PutStr("server.address", "payments")
		call.Attributes().PutStr("http.request.header.idempotency-key", "order-42")
		call.Attributes().PutInt("http.response.status_code", try.callSts)
	}
	return td
}

// collectorRun is what the collector gave: every span's final verdict by
// "trace/span/kind" (encoded, sorted: duplicates compare as a multiset), the number of spans
// (carrier spans and spans without a trace ID left out, as the report leaves them out), and
// the text of its /metrics.
type collectorRun struct {
	verdicts map[string][]string
	spans    int
	metrics  string
}

// runCollector runs data (OTLP JSON) through the orphan processor and the orphanmetrics
// exporter, each made by its factory with its defaults (and analyze's default price table),
// the processor on the wall clock; every span is handed over when it ends. It runs in a
// goroutine of its own: errors are returned.
func runCollector(data []byte) (res collectorRun, err error) {
	ctx := context.Background()
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(data)
	if err != nil {
		return res, err
	}
	ef := orphanmetricsexporter.NewFactory()
	ecfg := ef.CreateDefaultConfig().(*orphanmetricsexporter.Config)
	ecfg.Mode = orphanmetrics.ModeAnnotate // the collector here annotates: analyze observes
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	ecfg.NetAddr.Endpoint = lis.Addr().String()
	_ = lis.Close()
	exp, err := ef.CreateTraces(ctx, exportertest.NewNopSettings(ef.Type()), ecfg)
	if err != nil {
		return res, err
	}
	if err := exp.Start(ctx, componenttest.NewNopHost()); err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, exp.Shutdown(ctx)) }()

	var (
		mu  sync.Mutex
		out []ptrace.Traces
	)
	next, err := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
		cp := ptrace.NewTraces()
		td.CopyTo(cp)
		mu.Lock()
		out = append(out, cp)
		mu.Unlock()
		return exp.ConsumeTraces(ctx, td)
	})
	if err != nil {
		return res, err
	}
	pf := orphanprocessor.NewFactory()
	pcfg := pf.CreateDefaultConfig().(*orphanprocessor.Config)
	pcfg.Prices = analyze.DefaultPrices()
	tel := componenttest.NewTelemetry()
	defer func() { _ = tel.Shutdown(ctx) }()
	set := processortest.NewNopSettings(pf.Type())
	set.TelemetrySettings = tel.NewTelemetrySettings()
	proc, err := pf.CreateTraces(ctx, set, pcfg, next)
	if err != nil {
		return res, err
	}
	if err := proc.Start(ctx, componenttest.NewNopHost()); err != nil {
		return res, err
	}

	// Spans without an end time first (they end nowhere), then each span when it ends.
	rooted := map[pcommon.TraceID]bool{}
	traces := map[pcommon.TraceID]bool{}
	for _, s := range tdwalk.Flatten(td) {
		if id := s.Span.TraceID(); !id.IsEmpty() {
			traces[id] = true
			if s.Span.ParentSpanID().IsEmpty() {
				rooted[id] = true
			}
		}
	}
	for _, e := range tdwalk.ByEnd(td) {
		if e.End != 0 {
			time.Sleep(time.Until(e.End.AsTime()))
		}
		if err := proc.ConsumeTraces(ctx, e.Traces()); err != nil {
			return res, err
		}
	}
	// A trace whose root came is released decision_wait_after_root (2 s) after it came; then
	// only the traces without a root are held (until decision_wait).
	rootless := int64(len(traces) - len(rooted))
	held := func() int64 {
		m, err := tel.GetMetric("otelcol_processor_orphan_traces_held")
		if err != nil {
			return -1
		}
		var n int64
		if s, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, dp := range s.DataPoints {
				n += dp.Value
			}
		}
		return n
	}
	for deadline := time.Now().Add(30 * time.Second); held() > rootless; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return res, fmt.Errorf("traces held: %d, without a root: %d", held(), rootless)
		}
	}
	if err := proc.Shutdown(ctx); err != nil {
		return res, err
	}

	res.verdicts = finalVerdicts(out)
	for _, td := range out {
		for _, s := range tdwalk.Flatten(td) {
			if !verdictattrs.IsCarrier(s.Span) && !s.Span.TraceID().IsEmpty() {
				res.spans++
			}
		}
	}
	resp, err := http.Get("http://" + ecfg.NetAddr.Endpoint + ecfg.Path)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	res.metrics = string(body)
	return res, err
}

// finalVerdicts reads the collector's output as final verdicts, the way docs/verdicts.md
// says carried verdicts are to be read: a deferred span takes the whole verdict an
// orphanwatch.verdict event carries for it (trace, span ID and kind), a part (a run's outcome,
// an edge) is added to the span it names; carrier spans and spans without a trace ID are left
// out.
func finalVerdicts(out []ptrace.Traces) map[string][]string {
	carried := verdictattrs.CollectCarried(out)
	res := map[string][]string{}
	for _, td := range out {
		for _, s := range tdwalk.Flatten(td) {
			if verdictattrs.IsCarrier(s.Span) || s.Span.TraceID().IsEmpty() {
				continue
			}
			k := s.Span.TraceID().String() + "/" + s.Span.SpanID().String() + "/" + verdictattrs.KindNames[s.Span.Kind()]
			v := map[string]any{}
			carried.Final(s.Span).Attrs.Range(func(name string, val pcommon.Value) bool {
				if strings.HasPrefix(name, "orphanwatch.") && name != verdict.AttrDeferred {
					v[name] = val.AsRaw()
				}
				return true
			})
			res[k] = append(res[k], encodeAttrs(v))
			sort.Strings(res[k])
		}
	}
	return res
}

// encodeAttrs encodes a verdict's attributes as JSON with sorted keys; integers and floats of
// equal value encode alike.
func encodeAttrs(m map[string]any) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// seriesOf flattens Prometheus text into one value per series: counters, and histograms by
// count, sum and cumulative bucket (rounded to 1e-9).
func seriesOf(t *testing.T, text string) map[string]float64 {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err)
	res := map[string]float64{}
	round := func(f float64) float64 { return math.Round(f*1e9) / 1e9 }
	for name, f := range fams {
		if !strings.HasPrefix(name, "orphanwatch_") {
			continue
		}
		for _, m := range f.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, lp.GetName()+"="+strconv.Quote(lp.GetValue()))
			}
			sort.Strings(ls)
			labels := "{" + strings.Join(ls, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				res[name+labels] = round(m.GetCounter().GetValue())
			case m.GetGauge() != nil:
				res[name+labels] = round(m.GetGauge().GetValue())
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				res[name+"_count"+labels] = float64(h.GetSampleCount())
				res[name+"_sum"+labels] = round(h.GetSampleSum())
				for _, b := range h.GetBucket() {
					res[fmt.Sprintf("%s_bucket%s le=%v", name, labels, b.GetUpperBound())] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return res
}

// lasts is the time from the first span start to the last span end of td.
func lasts(td ptrace.Traces) time.Duration {
	var first, last pcommon.Timestamp
	for _, s := range tdwalk.Flatten(td) {
		if st := s.Span.StartTimestamp(); st != 0 && (first == 0 || st < first) {
			first = st
		}
		last = max(last, s.Span.EndTimestamp())
	}
	return time.Duration(last - first)
}

// shiftToNow moves every time of td (span start and end, event times, and the absolute
// deadlines the default configuration reads: x-deadline in seconds, x-deadline-ms in
// milliseconds) by one amount, so that its first span end falls on at (within a second after). Zero times stay zero.
func shiftToNow(td ptrace.Traces, at time.Time) {
	var first pcommon.Timestamp
	for _, s := range tdwalk.Flatten(td) {
		if e := s.Span.EndTimestamp(); e != 0 && (first == 0 || e < first) {
			first = e
		}
	}
	if first == 0 {
		return
	}
	// A whole number of seconds, so that deadlines in seconds stay whole.
	delta := (at.UnixNano() - int64(first) + 1e9 - 1) / 1e9 * 1e9
	shift := func(ts pcommon.Timestamp) pcommon.Timestamp {
		if ts == 0 {
			return 0
		}
		return pcommon.Timestamp(int64(ts) + delta)
	}
	for _, s := range tdwalk.Flatten(td) {
		s.Span.SetStartTimestamp(shift(s.Span.StartTimestamp()))
		s.Span.SetEndTimestamp(shift(s.Span.EndTimestamp()))
		for i := 0; i < s.Span.Events().Len(); i++ {
			e := s.Span.Events().At(i)
			e.SetTimestamp(shift(e.Timestamp()))
		}
		for key, unit := range map[string]float64{"http.request.header.x-deadline": 1e9, "http.request.header.x-deadline-ms": 1e6} {
			if v, ok := s.Span.Attributes().Get(key); ok {
				shiftDeadline(v, float64(delta)/unit)
			}
		}
	}
}

// shiftDeadline adds d to a deadline value: a number, a numeric string, or an array of them.
func shiftDeadline(v pcommon.Value, d float64) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		v.SetInt(v.Int() + int64(math.Round(d)))
	case pcommon.ValueTypeDouble:
		v.SetDouble(v.Double() + d)
	case pcommon.ValueTypeStr:
		if f, err := strconv.ParseFloat(v.Str(), 64); err == nil {
			v.SetStr(strconv.FormatFloat(f+d, 'f', -1, 64))
		}
	case pcommon.ValueTypeSlice:
		for i := 0; i < v.Slice().Len(); i++ {
			shiftDeadline(v.Slice().At(i), d)
		}
	}
}

// TestKeyedResendsAcrossTraces: analyze on the re-sends file, with its defaults, gives the one
// run the collector gives, not one run per trace.
func TestKeyedResendsAcrossTraces(t *testing.T) {
	data, err := (&ptrace.JSONMarshaler{}).MarshalTraces(keyedResends())
	require.NoError(t, err)
	dir := t.TempDir()
	file := filepath.Join(dir, "resends.json")
	require.NoError(t, os.WriteFile(file, data, 0o600))

	runsOf := func(args ...string) map[string]int {
		r := runCLI(t, "", append([]string{"analyze", "--format", "json"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		var rep analyze.Report
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
		return nonZero(rep.Summary.Runs)
	}
	assert.Equal(t, map[string]int{"delivered_to_nobody": 1}, runsOf(file))
}
