package scaleout

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"

	"github.com/orphanwatch/orphanwatch/distribution"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
)

// factories are the distribution's own (package distribution: OCB's components for
// cmd/otelcol-orphanwatch/builder-config.yaml), so the tier runs exactly the
// components cmd/otelcol-orphanwatch ships.
func factories() (otelcol.Factories, error) { return distribution.Components() }

// broker starts kfake on 127.0.0.1 with the spans topic.
func broker(t testing.TB, partitions int32) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "otlp_spans"), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// collector runs the distribution's components in-process with a shipped config file and
// --set-style overrides (yaml: URIs), until Stop or the end of the test.
type collector struct {
	name string
	col  *otelcol.Collector
	done chan error
	once sync.Once
}

func startCollector(t testing.TB, name, file string, overrides map[string]string) *collector {
	t.Helper()
	uris := []string{"file:" + filepath.Join(e2e.RepoRoot(), file)}
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		uris = append(uris, "yaml:"+k+": "+overrides[k])
	}
	col, err := otelcol.NewCollector(otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol-orphanwatch", Version: "test"},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			URIs:              uris,
			ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory(), yamlprovider.NewFactory()},
		}},
		SkipSettingGRPCLogger: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{name: name, col: col, done: make(chan error, 1)}
	go func() { c.done <- col.Run(context.Background()) }()
	deadline := time.Now().Add(30 * time.Second)
	for col.GetState() != otelcol.StateRunning {
		select {
		case err := <-c.done:
			t.Fatalf("%s: %v", name, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start in 30s", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(c.Stop)
	return c
}

// Stop shuts the collector down gracefully (the orphan processor decides what it holds).
func (c *collector) Stop() {
	c.once.Do(func() {
		c.col.Shutdown()
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
		}
	})
}

// sink is an OTLP/gRPC server standing for the trace store behind the front tier: every span the
// front exported to it.
type sink struct {
	ptraceotlp.UnimplementedGRPCServer
	addr string
	mu   sync.Mutex
	got  []ptrace.Traces
	n    int
}

func newSink(t testing.TB) *sink {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{addr: l.Addr().String()}
	srv := grpc.NewServer()
	ptraceotlp.RegisterGRPCServer(srv, s)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return s
}

func (s *sink) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	td := ptrace.NewTraces()
	req.Traces().CopyTo(td)
	s.mu.Lock()
	s.got = append(s.got, td)
	s.n += td.SpanCount()
	s.mu.Unlock()
	return ptraceotlp.NewExportResponse(), nil
}

func (s *sink) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got, s.n = nil, 0
}

func (s *sink) spans() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// each calls fn for every span the sink received.
func (s *sink) each(fn func(res string, sp ptrace.Span)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, td := range s.got {
		tdwalk.SpansWithResource(td, func(r pcommon.Resource, sp ptrace.Span) {
			svc, _ := r.Attributes().Get("service.name")
			fn(svc.AsString(), sp)
		})
	}
}

// member is one orphanwatch collector of the tier with its ports. It forwards nothing: the
// front sends the spans to the trace store.
type member struct {
	*collector
	metrics, telemetry int
}

// tierOptions configure a test tier.
type tierOptions struct {
	members      int
	partitions   int32
	decisionWait string
	keySharing   bool
	keyWait      string
}

// tier is a front collector and the orphanwatch members behind one kfake broker.
type tier struct {
	broker       string
	front        *collector
	store        *sink // the trace store, behind the front
	otlp         int   // front OTLP/HTTP port
	jaeger       int   // front Jaeger gRPC port
	frontMetrics int   // front telemetry port
	members      []*member
	opts         tierOptions
}

const testSecret = "scaleout-test-secret-0123456789"

func startTier(t testing.TB, o tierOptions) *tier {
	t.Helper()
	if o.partitions == 0 {
		o.partitions = 12
	}
	if o.decisionWait == "" {
		o.decisionWait = "2s"
	}
	if o.keyWait == "" {
		o.keyWait = "3s"
	}
	tr := &tier{broker: broker(t, o.partitions), opts: o}
	for i := 1; i <= o.members; i++ {
		tr.addMember(t, i)
	}
	tr.waitGroup(t, o.members)
	tr.startFront(t)
	return tr
}

// startFront starts the front tier's collector (config/scaleout/front.yaml) in-process.
func (tr *tier) startFront(t testing.TB) {
	t.Helper()
	tr.otlp, tr.jaeger, tr.frontMetrics = e2e.FreePort(t), e2e.FreePort(t), e2e.FreePort(t)
	tr.store = newSink(t)
	tr.front = startCollector(t, "front", "config/scaleout/front.yaml", map[string]string{
		"receivers::otlp::protocols::http::endpoint":          fmt.Sprintf("127.0.0.1:%d", tr.otlp),
		"receivers::otlp::protocols::grpc::endpoint":          fmt.Sprintf("127.0.0.1:%d", e2e.FreePort(t)),
		"receivers::zipkin::endpoint":                         fmt.Sprintf("127.0.0.1:%d", e2e.FreePort(t)),
		"receivers::jaeger::protocols::grpc::endpoint":        fmt.Sprintf("127.0.0.1:%d", tr.jaeger),
		"receivers::jaeger::protocols::thrift_http::endpoint": fmt.Sprintf("127.0.0.1:%d", e2e.FreePort(t)),
		"exporters::kafka::brokers":                           "[" + tr.broker + "]",
		"exporters::otlp_grpc/store::endpoint":                tr.store.addr,
		"extensions::health_check::endpoint":                  fmt.Sprintf("127.0.0.1:%d", e2e.FreePort(t)),
		"service::telemetry::metrics::readers":                fmt.Sprintf("[{pull: {exporter: {prometheus: {host: 127.0.0.1, port: %d}}}}]", tr.frontMetrics),
		"service::telemetry::logs::level":                     "warn",
	})
}

func (tr *tier) addMember(t testing.TB, i int) *member {
	t.Helper()
	m := &member{metrics: e2e.FreePort(t), telemetry: e2e.FreePort(t)}
	name := fmt.Sprintf("m%d", i)
	ov := map[string]string{
		"receivers::kafka::brokers":           "[" + tr.broker + "]",
		"receivers::kafka::client_id":         "orphanwatch-" + name,
		"receivers::kafka::group_instance_id": "orphanwatch-" + name,
		// kfake enforces Kafka's 6 s minimum.
		"receivers::kafka::session_timeout":       "6s",
		"receivers::kafka::heartbeat_interval":    "1s",
		"exporters::orphanmetrics::decision_wait": tr.opts.decisionWait,
		"extensions::orphan_keys::brokers":        "[" + tr.broker + "]",
		"extensions::orphan_keys::secret":         testSecret,
		"extensions::orphan_keys::client_id":      "orphanwatch-keys-" + name,
		"extensions::orphan_keys::wait":           tr.opts.keyWait,
		"exporters::orphanmetrics::endpoint":      fmt.Sprintf("127.0.0.1:%d", m.metrics),
		"extensions::health_check::endpoint":      fmt.Sprintf("127.0.0.1:%d", e2e.FreePort(t)),
		"service::telemetry::metrics::readers":    fmt.Sprintf("[{pull: {exporter: {prometheus: {host: 127.0.0.1, port: %d}}}}]", m.telemetry),
		"service::telemetry::logs::level":         "warn",
	}
	if !tr.opts.keySharing {
		ov["exporters::orphanmetrics::keys"] = "null"
		ov["service::extensions"] = "[health_check]"
	}
	m.collector = startCollector(t, name, "config/scaleout/member.yaml", ov)
	tr.members = append(tr.members, m)
	return m
}

// waitGroup waits until the group has n members and every partition is assigned.
func (tr *tier) waitGroup(t testing.TB, n int) {
	t.Helper()
	if err := tr.groupStable(n, 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

// groupStable waits until the group has n members and every partition is assigned.
func (tr *tier) groupStable(n int, within time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(tr.broker))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		gs, err := adm.DescribeGroups(ctx, "orphanwatch")
		cancel()
		if err == nil {
			g := gs["orphanwatch"]
			assigned, withParts := 0, 0
			for _, m := range g.Members {
				if a, ok := m.Assigned.AsConsumer(); ok {
					np := 0
					for _, tp := range a.Topics {
						np += len(tp.Partitions)
					}
					assigned += np
					if np > 0 {
						withParts++
					}
				}
			}
			if g.State == "Stable" && len(g.Members) == n && withParts == n && assigned == int(tr.opts.partitions) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("group not stable with %d members in %s", n, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sendAll sends every batch (send) and returns how many spans they hold.
func (tr *tier) sendAll(t testing.TB, batches []ptrace.Traces) (spans int) {
	t.Helper()
	for _, td := range batches {
		spans += td.SpanCount()
		tr.send(t, td)
	}
	return spans
}

// send posts traces to the front tier over OTLP/HTTP.
func (tr *tier) send(t testing.TB, td ptrace.Traces) {
	t.Helper()
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/traces", tr.otlp), "application/x-protobuf", bytes.NewReader(body))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if attempt == 20 {
			t.Fatalf("send: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitStore waits until the trace store behind the front got n spans (bounded).
func (tr *tier) waitStore(t testing.TB, n int, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := tr.store.spans()
		if got >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// storedAndJudged waits until the trace store behind the front got total spans and the members
// judged total spans (60 s for each), and fails the test when either falls short.
func (tr *tier) storedAndJudged(t testing.TB, total int) {
	t.Helper()
	if got := tr.waitStore(t, total, 60*time.Second); got != total {
		t.Fatalf("%d members: %d of %d spans in the trace store", len(tr.members), got, total)
	}
	if got := tr.settle(t, total, 60*time.Second); got != total {
		t.Fatalf("%d members: %d of %d spans judged", len(tr.members), got, total)
	}
}

// judged is the spans whose verdicts member m decided and counted (its exporter's
// otelcol_exporter_orphanmetrics_spans_judged).
func judged(t testing.TB, m *member) int {
	t.Helper()
	return int(metricSum(scrape(t, m.telemetry), "otelcol_exporter_orphanmetrics_spans_judged", ""))
}

// owes is what member m still keeps before counting: records waiting for their decision, held
// abandoned roots, traces waiting for a key record (its exporter's gauges).
func owes(t testing.TB, m *member) int {
	t.Helper()
	tel := scrape(t, m.telemetry)
	return int(metricSum(tel, "otelcol_exporter_orphanmetrics_records", "state=waiting") +
		metricSum(tel, "otelcol_exporter_orphanmetrics_held_roots", "") +
		metricSum(tel, "otelcol_exporter_orphanmetrics_key_traces_waiting", ""))
}

// settleStable waits until the given members owe nothing and their spans judged have not
// moved for 2 s, then decision_wait and a margin (what waits for a root or a chain); it returns
// the spans they judged (bounded). For a tier that lost verdicts, where no total is reached.
func (tr *tier) settleStable(t testing.TB, members []*member, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	last, since := -1, time.Now()
	for {
		got, owed := 0, 0
		for _, m := range members {
			got += judged(t, m)
			owed += owes(t, m)
		}
		if got != last || owed != 0 {
			last, since = got, time.Now()
		}
		if time.Since(since) >= 2*time.Second || time.Now().After(deadline) {
			wait, err := time.ParseDuration(tr.opts.decisionWait)
			if err != nil {
				wait = 2 * time.Second
			}
			time.Sleep(wait + 1500*time.Millisecond) // a chain's decision_wait, the next sweep
			got = 0
			for _, m := range members {
				got += judged(t, m)
			}
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settle waits until the members judged n spans in all and owe nothing (records waiting for
// their decision, held roots, traces waiting for a key record), then until no record waits for
// a root or a chain (records{state="pending"}: their verdicts come decision_wait after their
// decision, at the next sweep; bounded by three decision_waits), and a margin; it returns the
// spans judged (bounded by within).
func (tr *tier) settle(t testing.TB, n int, within time.Duration) int {
	t.Helper()
	wait, err := time.ParseDuration(tr.opts.decisionWait)
	if err != nil {
		wait = 2 * time.Second
	}
	deadline := time.Now().Add(within)
	got := 0
	for {
		owed := 0
		got = 0
		for _, m := range tr.members {
			got += judged(t, m)
			owed += owes(t, m)
		}
		if (got >= n && owed == 0) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	pendingUntil := time.Now().Add(3*wait + 2*time.Second)
	for time.Now().Before(pendingUntil) {
		pending := 0.0
		for _, m := range tr.members {
			pending += metricSum(scrape(t, m.telemetry), "otelcol_exporter_orphanmetrics_records", "state=pending")
		}
		if pending == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // what a sweep handed over is counted; margin for the scrape
	return got
}

// metricSum sums the series of a metric (name{...} or name_total{...}) whose labels contain
// every comma-separated label=value of want.
func metricSum(series map[string]float64, name, want string) float64 {
	v := 0.0
next:
	for k, x := range series {
		if !strings.HasPrefix(k, name+"{") && !strings.HasPrefix(k, name+"_total{") {
			continue
		}
		if want != "" {
			for _, l := range strings.Split(want, ",") {
				if !strings.Contains(k, l) {
					continue next
				}
			}
		}
		v += x
	}
	return v
}

// scrape reads a Prometheus text endpoint into series -> value (histograms as _bucket, _sum,
// _count series; exemplars dropped).
func scrape(t testing.TB, port int) map[string]float64 {
	t.Helper()
	m, err := tryScrape(port)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// tryScrape is scrape that returns its error (a member that is gone).
func tryScrape(port int) (map[string]float64, error) {
	fams, err := e2e.Families(fmt.Sprintf("http://127.0.0.1:%d/metrics", port), 5*time.Second)
	if err != nil {
		return nil, err
	}
	return familiesToMap(fams), nil
}

// watcher scrapes a member's metrics and telemetry every 100 ms, as Prometheus would (more
// often), and keeps the last scrape that succeeded: what stays of a member that is gone.
type watcher struct {
	mu          sync.Mutex
	series, tel map[string]float64
	stop, done  chan struct{}
}

func watch(t testing.TB, m *member) *watcher {
	t.Helper()
	w := &watcher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			series, err1 := tryScrape(m.metrics)
			tel, err2 := tryScrape(m.telemetry)
			if err1 == nil && err2 == nil {
				w.mu.Lock()
				w.series, w.tel = series, tel
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-tk.C:
			}
		}
	}()
	t.Cleanup(w.close)
	return w
}

// close stops the scrapes; last stays readable.
func (w *watcher) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// last is the last successful scrape: the member's orphanwatch series (non-zero) and its
// telemetry.
func (w *watcher) last() (series, tel map[string]float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	series = map[string]float64{}
	for k, v := range w.series {
		if v != 0 && strings.HasPrefix(k, "orphanwatch_") {
			series[k] = v
		}
	}
	return series, w.tel
}

// familiesToMap flattens metric families into series -> value.
func familiesToMap(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			lbl := labels(m.GetLabel())
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name+lbl] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name+lbl] = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				out[name+lbl] = m.GetUntyped().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[name+"_count"+lbl] = float64(h.GetSampleCount())
				out[name+"_sum"+lbl] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					if math.IsInf(b.GetUpperBound(), 1) {
						continue // the exposition adds it, Gather does not: it is _count
					}
					out[fmt.Sprintf("%s_bucket%s{le=%g}", name, lbl, b.GetUpperBound())] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return out
}

func labels(ls []*dto.LabelPair) string {
	parts := make([]string, 0, len(ls))
	for _, l := range ls {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// frontSent is the spans the front's exporter handed on (otelcol_exporter_sent_spans), kafka or
// otlp_grpc/store.
func (tr *tier) frontSent(t testing.TB, exporter string) int {
	t.Helper()
	return int(metricSum(scrape(t, tr.frontMetrics), "otelcol_exporter_sent_spans", "exporter="+exporter))
}

// orphanSeriesOf sums the given members' orphanmetrics series, leaving out zero values and the
// exporter's own health series.
func orphanSeriesOf(t testing.TB, members []*member) map[string]float64 {
	t.Helper()
	return (&tier{members: members}).orphanSeries(t)
}

// orphanSeries sums the members' orphanmetrics series, leaving out zero values and the
// exporter's own health series, which count per member (scrape-time gauges).
func (tr *tier) orphanSeries(t testing.TB) map[string]float64 {
	t.Helper()
	sum := map[string]float64{}
	for _, m := range tr.members {
		for k, v := range scrape(t, m.metrics) {
			sum[k] += v
		}
	}
	for k, v := range sum {
		if v == 0 || !strings.HasPrefix(k, "orphanwatch_") {
			delete(sum, k)
		}
	}
	return sum
}

// telemetry sums a collector-telemetry counter across the members, by its labels.
func (tr *tier) telemetry(t testing.TB, prefix string) map[string]float64 {
	t.Helper()
	return telemetryOf(t, tr.members, prefix)
}

func telemetryOf(t testing.TB, members []*member, prefix string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range members {
		for k, v := range scrape(t, m.telemetry) {
			if strings.HasPrefix(k, prefix) {
				out[strings.Replace(scopeLabels.ReplaceAllString(k, ""), ",}", "}", 1)] += v
			}
		}
	}
	return out
}

// scopeLabels are the labels the collector's Prometheus reader adds to name the instrumentation
// scope (otel_scope_name=github.com/orphanwatch/..., its version, schema URL).
var scopeLabels = regexp.MustCompile(`otel_scope_[a-z_]+=[^,}]*,?`)

// diff lists the series whose values differ (relative 1e-9).
func diff(want, got map[string]float64) []string {
	var out []string
	for k, w := range want {
		g := got[k]
		if math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
			out = append(out, fmt.Sprintf("%s: one collector %g, tier %g", k, w, g))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s: one collector -, tier %g", k, g))
		}
	}
	sort.Strings(out)
	return out
}

func TestMain(m *testing.M) {
	// ORPHANWATCH_MEMBER is set by the overrides; the shipped file's ${env:...} must resolve.
	_ = os.Setenv("ORPHANWATCH_MEMBER", "test")
	code := m.Run()
	if dist.dir != "" {
		_ = os.RemoveAll(dist.dir)
	}
	os.Exit(code)
}
