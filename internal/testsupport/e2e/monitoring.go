package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// RequireTool returns the path of the first of names found on PATH. When none is there the test
// is skipped with a message, except under CI=true, where it fails: CI installs the tools
// (.ci/monitoring.sh), so a missing one there is a broken machine, not an optional test.
func RequireTool(t testing.TB, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("none of %s on PATH: install Debian's prometheus and prometheus-alertmanager packages (bash .ci/monitoring.sh)", strings.Join(names, ", "))
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Process is a server process started by a test and stopped by its PID when the test ends.
type Process struct {
	Name string
	cmd  *exec.Cmd
	log  *SyncBuffer
	done chan struct{}
}

// StartProcess starts bin with args; the process is stopped (SIGTERM, then SIGKILL after 10 s)
// when the test ends.
func StartProcess(t testing.TB, name, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{Name: name, log: &SyncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.Stop)
	return p
}

// PID is the process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Log returns what the process printed so far.
func (p *Process) Log() string { return p.log.String() }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop ends the process by its PID: SIGTERM, then SIGKILL after 10 s. Safe to call twice.
func (p *Process) Stop() {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitHTTP polls url until it answers 200, the process exits, or timeout passes.
func waitHTTP(t testing.TB, p *Process, url string, timeout time.Duration) {
	t.Helper()
	if err := WaitReady(url, timeout, p.Exited); err != nil {
		t.Fatalf("%s %v; log:\n%s", p.Name, err, p.Log())
	}
}

// Prometheus is a running Prometheus server on loopback.
type Prometheus struct {
	*Process
	Port int
	Dir  string // holds prometheus.yml and the TSDB
}

// StartPrometheus writes config to a new folder (as prometheus.yml) and starts bin on a free
// 127.0.0.1 port with exemplar storage enabled, then waits until it is ready. extraFiles are
// written beside the config (name -> content), e.g. rule files the config names; extraArgs are
// further flags (--web.enable-remote-write-receiver).
func StartPrometheus(t testing.TB, bin string, config []byte, extraFiles map[string][]byte, extraArgs ...string) *Prometheus {
	t.Helper()
	dir := t.TempDir()
	for name, b := range extraFiles {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, config, 0o600); err != nil {
		t.Fatal(err)
	}
	p := &Prometheus{Port: FreePort(t), Dir: dir}
	p.Process = StartProcess(t, "prometheus", bin, append([]string{
		"--config.file=" + cfg,
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", p.Port),
		"--enable-feature=exemplar-storage",
		"--log.level=warn",
	}, extraArgs...)...)
	waitHTTP(t, p.Process, p.URL()+"/-/ready", 30*time.Second)
	return p
}

// URL is the server's base URL.
func (p *Prometheus) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", p.Port) }

// API is a client of the server's HTTP API.
func (p *Prometheus) API(t testing.TB) promv1.API {
	t.Helper()
	c, err := promapi.NewClient(promapi.Config{Address: p.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return promv1.NewAPI(c)
}

// Alertmanager is a running Alertmanager on loopback, clustering off.
type Alertmanager struct {
	*Process
	Port int
}

// StartAlertmanager writes config to a new folder and starts bin on a free 127.0.0.1 port with
// clustering disabled, then waits until it is ready.
func StartAlertmanager(t testing.TB, bin string, config []byte) *Alertmanager {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, config, 0o600); err != nil {
		t.Fatal(err)
	}
	a := &Alertmanager{Port: FreePort(t)}
	a.Process = StartProcess(t, "alertmanager", bin,
		"--config.file="+cfg,
		"--storage.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", a.Port),
		"--cluster.listen-address=",
		"--log.level=warn",
	)
	waitHTTP(t, a.Process, a.URL()+"/-/ready", 30*time.Second)
	return a
}

// URL is the server's base URL.
func (a *Alertmanager) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", a.Port) }

// Addr is host:port, as Prometheus' alerting config wants it.
func (a *Alertmanager) Addr() string { return fmt.Sprintf("127.0.0.1:%d", a.Port) }

// WebhookAlert is one alert of an Alertmanager webhook notification.
type WebhookAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	Fingerprint string            `json:"fingerprint"`
}

// WebhookMessage is one notification Alertmanager posted (webhook payload version 4), with the
// path it was posted to.
type WebhookMessage struct {
	Path         string            `json:"-"`
	Version      string            `json:"version"`
	Receiver     string            `json:"receiver"`
	Status       string            `json:"status"`
	GroupLabels  map[string]string `json:"groupLabels"`
	CommonLabels map[string]string `json:"commonLabels"`
	Alerts       []WebhookAlert    `json:"alerts"`
}

// Webhook is an HTTP receiver of Alertmanager notifications on loopback.
type Webhook struct {
	URL  string // base URL, no trailing slash
	srv  *http.Server
	mu   sync.Mutex
	msgs []WebhookMessage
	bad  []string
}

// StartWebhook starts a receiver on a free 127.0.0.1 port that records every notification
// posted to any path; it is closed when the test ends.
func StartWebhook(t testing.TB) *Webhook {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &Webhook{URL: "http://" + l.Addr().String()}
	w.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 10<<20))
		var m WebhookMessage
		if err == nil {
			err = json.Unmarshal(body, &m)
		}
		w.mu.Lock()
		if err != nil || r.Method != http.MethodPost {
			w.bad = append(w.bad, fmt.Sprintf("%s %s: %v: %.200s", r.Method, r.URL.Path, err, body))
		} else {
			m.Path = r.URL.Path
			w.msgs = append(w.msgs, m)
		}
		w.mu.Unlock()
		rw.WriteHeader(http.StatusOK)
	})}
	go func() { _ = w.srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.srv.Shutdown(ctx)
	})
	return w
}

// Messages returns the notifications received so far.
func (w *Webhook) Messages() []WebhookMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]WebhookMessage(nil), w.msgs...)
}

// Rejected returns the requests that were not a webhook notification.
func (w *Webhook) Rejected() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.bad...)
}

// Alerts returns every alert received so far with the message it came in.
func (w *Webhook) Alerts() []ReceivedAlert {
	var out []ReceivedAlert
	for _, m := range w.Messages() {
		for _, a := range m.Alerts {
			out = append(out, ReceivedAlert{Message: m, Alert: a})
		}
	}
	return out
}

// ReceivedAlert is an alert and the notification that carried it.
type ReceivedAlert struct {
	Message WebhookMessage
	Alert   WebhookAlert
}
