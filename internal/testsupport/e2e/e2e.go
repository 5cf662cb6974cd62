// Package e2e starts the orphanwatch collector distribution as a real process for end-to-end
// tests: it builds the binary, writes a config with free loopback ports, waits for health, and
// scrapes the orphanmetrics endpoint.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/orphanwatch/orphanwatch/internal/zipkinaddr"
)

// RepoRoot returns the repository root (the folder holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// RealTestdata returns the folder of real trace files (../shared/testdata-real beside the
// repository, or $ORPHANWATCH_REAL_TESTDATA), or "" when absent.
func RealTestdata() string {
	dir := os.Getenv("ORPHANWATCH_REAL_TESTDATA")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "..", "shared", "testdata-real")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return ""
	}
	return dir
}

// BuildCollector builds cmd/otelcol-orphanwatch into dir and returns the binary's path. Under
// -short it skips t: a test that builds and runs the collector is a long one.
func BuildCollector(t testing.TB, dir string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the collector")
	}
	bin := filepath.Join(dir, "otelcol-orphanwatch")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/otelcol-orphanwatch")
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the collector: %v\n%s", err, out)
	}
	return bin
}

// FreePort returns a port on 127.0.0.1 that was free a moment ago, taken below Linux's
// ephemeral range (32768-60999): outbound connections (a collector's exporters, Kafka clients)
// get their local ports from that range, and one of them could take a port between this check
// and the listen. A port is handed out once per test process: a test picks several ports
// before anything listens on them, and two calls could otherwise draw the same free port.
func FreePort(t testing.TB) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 200 {
		p := 20000 + rand.IntN(12000)
		if portsGiven[p] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		portsGiven[p] = true
		return p
	}
	t.Fatal("no free port in 20000-31999 on 127.0.0.1")
	return 0
}

// portsGiven holds every port FreePort has handed out in this process.
var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// Collector is a running collector process.
type Collector struct {
	OTLPGRPC, OTLPHTTP, Zipkin, Metrics, Health, Telemetry int
	cmd                                                    *exec.Cmd
	log                                                    *SyncBuffer
}

// SyncBuffer is a bytes.Buffer safe for concurrent use: a process's output, written by its
// goroutine, read by the test meanwhile.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Options tune the collector's config.
type Options struct {
	DecisionWait string // default "1s"
	// Annotate runs the orphan processor (annotate mode) with the exporter reading its
	// attributes; by default the exporter observes (the shipped default, no processor).
	Annotate bool
	// ExtraOrphan is YAML inserted under the component that decides (the orphanmetrics
	// exporter, or processors.orphan with Annotate), indented by the caller to 4 spaces.
	ExtraOrphan string
	// Env is added to the process's environment (GOMAXPROCS=1, say).
	Env []string
	// Nice, when positive, starts the process under nice(1) with this increment: every thread
	// of the collector yields the CPU to the machine's other work.
	Nice int
}

// StartCollector writes a config with free loopback ports and starts bin; the process is
// stopped when the test ends.
func StartCollector(t testing.TB, bin string, o Options) *Collector {
	t.Helper()
	if o.DecisionWait == "" {
		o.DecisionWait = "1s"
	}
	c := &Collector{OTLPGRPC: FreePort(t), OTLPHTTP: FreePort(t), Zipkin: FreePort(t), Metrics: FreePort(t), Health: FreePort(t), Telemetry: FreePort(t), log: &SyncBuffer{}}
	rules := fmt.Sprintf(`    decision_wait: %s
    prices:
      gpt-4o: {input_per_million: 2.50, output_per_million: 10.00}
      gpt-4o-mini: {input_per_million: 0.15, output_per_million: 0.60}
%s`, o.DecisionWait, o.ExtraOrphan)
	orphan, exporter, processors := "", "\n"+rules, "[memory_limiter, batch]"
	if o.Annotate {
		orphan, exporter, processors = "  orphan:\n"+rules, "\n    mode: annotate\n", "[memory_limiter, orphan, batch]"
	}
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc: {endpoint: "127.0.0.1:%d"}
      http: {endpoint: "127.0.0.1:%d"}
  zipkin: {endpoint: "127.0.0.1:%d"}
processors:
  memory_limiter: {check_interval: 1s, limit_percentage: 80, spike_limit_percentage: 20}
%s
  batch: {timeout: 100ms}
exporters:
  orphanmetrics:
    endpoint: "127.0.0.1:%d"%s
  debug: {verbosity: basic}
extensions:
  health_check: {endpoint: "127.0.0.1:%d"}
service:
  extensions: [health_check]
  pipelines:
    traces:
      receivers: [otlp, zipkin]
      processors: %s
      exporters: [orphanmetrics, debug]
  telemetry:
    metrics:
      readers:
        - pull: {exporter: {prometheus: {host: "127.0.0.1", port: %d}}}
`, c.OTLPGRPC, c.OTLPHTTP, c.Zipkin, orphan, c.Metrics, exporter, c.Health, processors, c.Telemetry)
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(bin, "--config", path)
	if o.Nice > 0 {
		c.cmd = exec.Command("nice", "-n", fmt.Sprint(o.Nice), bin, "--config", path)
	}
	if len(o.Env) > 0 {
		c.cmd.Env = append(os.Environ(), o.Env...)
	}
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(t) })
	if err := WaitReady(fmt.Sprintf("http://127.0.0.1:%d/", c.Health), 30*time.Second, nil); err != nil {
		t.Fatalf("collector %v; log:\n%s", err, c.log.String())
	}
	return c
}

// WaitReady polls url every 100 ms until it answers 200 OK. It gives up with an error when
// exited (nil: not asked) reports that the process meant to answer has ended, or when within
// has passed.
func WaitReady(url string, within time.Duration, exited func() bool) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(within)
	for {
		resp, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if exited != nil && exited() {
			return errors.New("exited")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready at %s after %s", url, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop ends the process (SIGTERM, then kill after 10 s).
func (c *Collector) Stop(t testing.TB) {
	if c.cmd == nil || c.cmd.Process == nil || c.cmd.ProcessState != nil {
		return
	}
	_ = c.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// Log returns what the collector printed so far.
func (c *Collector) Log() string { return c.log.String() }

// Post sends body to the collector's port at path with the given content type and returns the
// HTTP status.
func Post(t testing.TB, port int, path, contentType string, body []byte) int {
	t.Helper()
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d%s", port, path), contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Logf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// Series is one scraped sample: metric name with labels, and value.
type Series struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Scrape reads the Prometheus text at url and flattens it into samples; histograms give
// _count and _sum samples.
func Scrape(t testing.TB, url string) []Series {
	t.Helper()
	fams, err := Families(url, 10*time.Second)
	if err != nil {
		t.Fatalf("scraping %s: %v", url, err)
	}
	var out []Series
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			out = append(out, Samples(f, m)...)
		}
	}
	return out
}

// Samples flattens one metric of family f into its samples: a counter, gauge or untyped
// metric gives one, a histogram its _count and then its _sum; other types give none.
func Samples(f *dto.MetricFamily, m *dto.Metric) []Series {
	name := f.GetName()
	l := map[string]string{}
	for _, lp := range m.GetLabel() {
		l[lp.GetName()] = lp.GetValue()
	}
	switch f.GetType() {
	case dto.MetricType_COUNTER:
		return []Series{{name, l, m.GetCounter().GetValue()}}
	case dto.MetricType_GAUGE:
		return []Series{{name, l, m.GetGauge().GetValue()}}
	case dto.MetricType_HISTOGRAM:
		return []Series{
			{name + "_count", l, float64(m.GetHistogram().GetSampleCount())},
			{name + "_sum", l, m.GetHistogram().GetSampleSum()},
		}
	case dto.MetricType_UNTYPED:
		return []Series{{name, l, m.GetUntyped().GetValue()}}
	}
	return nil
}

// Families reads the Prometheus text exposition at url into its metric families, waiting at
// most timeout for the whole answer.
func Families(url string, timeout time.Duration) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// Sum adds the values of samples named name whose labels include all of match.
func Sum(ss []Series, name string, match map[string]string) float64 {
	total := 0.0
	for _, s := range ss {
		if s.Name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += s.Value
		}
	}
	return total
}

// Settled reports whether, in one scrape tel of the collector's own metrics, everything sent
// has been counted. In observe mode (no orphan processor ran): the orphanmetrics exporter got
// every span the receivers accepted and owes nothing (records waiting or pending, open runs,
// held roots all 0). In annotate mode: the orphan processor holds and owes nothing (spans_held, pending_spans and open_runs are 0, and it
// passed spans on) and everything it passed on has been counted by the orphanmetrics exporter:
// the exporter's sent_spans plus send_failed_spans equal the processor's spans_processed plus
// carrier_spans less its spans_dropped. The gauges alone do not tell it: the last verdicts (a
// run closed by its run_timeout, carried) leave the processor as the gauges drop, and reach the
// exporter when the batch processor flushes (issue 19 item 9). One scrape is enough: the
// SDK reads the gauges before the counters, and the processor hands a sweep's verdicts on
// before its gauges drop.
func Settled(tel []Series) bool {
	orphan := map[string]string{"processor": "orphan"}
	exp := map[string]string{"exporter": "orphanmetrics"}
	counted := Sum(tel, "otelcol_exporter_sent_spans", exp) + Sum(tel, "otelcol_exporter_send_failed_spans", exp)
	if Sum(tel, "otelcol_processor_orphan_spans_processed", orphan) == 0 {
		// Observe mode: every span the receivers accepted reached the exporter, and the
		// exporter owes nothing (no record waits for a decision, a root or a chain; no run is
		// open; no abandoned root is held).
		return counted > 0 && counted == Sum(tel, "otelcol_receiver_accepted_spans", nil) &&
			Sum(tel, "otelcol_exporter_orphanmetrics_records", map[string]string{"state": "waiting"}) == 0 &&
			Sum(tel, "otelcol_exporter_orphanmetrics_records", map[string]string{"state": "pending"}) == 0 &&
			Sum(tel, "otelcol_exporter_orphanmetrics_open_runs", nil) == 0 &&
			Sum(tel, "otelcol_exporter_orphanmetrics_held_roots", nil) == 0
	}
	out := Sum(tel, "otelcol_processor_orphan_spans_processed", orphan) + Sum(tel, "otelcol_processor_orphan_carrier_spans", orphan) -
		Sum(tel, "otelcol_processor_orphan_spans_dropped", orphan)
	return Sum(tel, "otelcol_processor_orphan_spans_held", orphan) == 0 &&
		Sum(tel, "otelcol_processor_orphan_pending_spans", orphan) == 0 &&
		Sum(tel, "otelcol_processor_orphan_open_runs", orphan) == 0 &&
		counted == out
}

// WaitFor polls until cond holds or timeout passes, and reports whether it held.
func WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// MetricsURL is the orphanmetrics scrape URL of c.
func (c *Collector) MetricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", c.Metrics)
}

// TelemetryURL is the collector's own metrics URL.
func (c *Collector) TelemetryURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", c.Telemetry)
}

// FixZipkinIPv4 rewrites IPv4 addresses with leading zeros ("52.0.0.04") in a Zipkin v2 JSON
// body to their canonical form: the collector's zipkin receiver rejects the whole request for
// such an address (Go's net.ParseIP refuses leading zeros), which some real exports contain.
func FixZipkinIPv4(body []byte) []byte {
	s := string(body)
	var b strings.Builder
	for {
		i := strings.Index(s, `"ipv4"`)
		if i < 0 {
			b.WriteString(s)
			break
		}
		j := strings.IndexByte(s[i+6:], '"')
		if j < 0 {
			b.WriteString(s)
			break
		}
		start := i + 6 + j + 1
		end := strings.IndexByte(s[start:], '"')
		if end < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:start])
		b.WriteString(zipkinaddr.CanonicalIPv4(s[start : start+end]))
		s = s[start+end:]
	}
	return []byte(b.String())
}
