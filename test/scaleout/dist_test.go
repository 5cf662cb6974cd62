package scaleout

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildDistribution builds cmd/otelcol-orphanwatch (bounded: 5 minutes).
func buildDistribution(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "otelcol-orphanwatch")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/otelcol-orphanwatch")
	cmd.Dir = repo(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// proc is a member run as the distribution's binary, configured as README "Scale" says: the
// shipped config/scaleout/member.yaml and environment variables.
type proc struct {
	cmd    *exec.Cmd
	health int
	log    *strings.Builder
	exited chan struct{}
}

func startProc(t *testing.T, bin string, tr *tier, m *member, name string, extra ...string) *proc {
	t.Helper()
	p := &proc{health: freePort(t), log: &strings.Builder{}, exited: make(chan struct{})}
	args := append([]string{"--config", filepath.Join(repo(t), "config/scaleout/member.yaml")}, extra...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(),
		"ORPHANWATCH_MEMBER="+name,
		"ORPHANWATCH_KEY_SECRET="+testSecret,
		"KAFKA_BROKERS="+tr.broker,
		fmt.Sprintf("METRICS_PORT=%d", m.metrics),
		fmt.Sprintf("TELEMETRY_PORT=%d", m.telemetry),
		fmt.Sprintf("HEALTH_PORT=%d", p.health),
		"TRACE_STORE_ENDPOINT="+m.sink.addr,
	)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("%s output:\n%s", name, tail(p.log.String(), 3000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", p.health))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("%s exited:\n%s", name, tail(p.log.String(), 3000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy in 60s:\n%s", name, tail(p.log.String(), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestDistributionTier starts the distribution twice as the orphanwatch tier against kfake on
// 127.0.0.1 (the front tier in-process), checks that the two members' summed series equal one
// collector's on the scenarios, then kills one member (SIGKILL) in the middle of traffic and
// measures what was lost and what was read twice.
func TestDistributionTier(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the distribution")
	}
	bin := buildDistribution(t)
	batches := scenarioBatches()
	want, _ := runTier(t, 1, true, batches)

	tr := &tier{broker: broker(t, 12), opts: tierOptions{members: 2, partitions: 12}}
	procs := make([]*proc, 2)
	for i := range 2 {
		m := &member{sink: newSink(t), metrics: freePort(t), telemetry: freePort(t)}
		procs[i] = startProc(t, bin, tr, m, fmt.Sprintf("%d", i+1),
			"--set", "processors::orphan::decision_wait=2s", "--set", "extensions::orphan_keys::wait=3s")
		tr.members = append(tr.members, m)
	}
	tr.waitGroup(t, 2)
	tr.startFront(t)

	total := 0
	for _, td := range batches {
		total += td.SpanCount()
		tr.send(t, td)
	}
	if got := tr.waitSpans(t, total, 60*time.Second); got != total {
		t.Fatalf("%d of %d spans exported", got, total)
	}
	time.Sleep(500 * time.Millisecond)
	if d := diff(want, tr.orphanSeries(t)); len(d) > 0 {
		t.Errorf("two distribution members: %d series differ from one collector:\n%s", len(d), joinLines(d))
	} else {
		t.Logf("two distribution members: %d series equal one collector's; spans per member %d, %d", len(want), tr.members[0].sink.spans(), tr.members[1].sink.spans())
	}

	// Kill member 2 in the middle of traffic.
	for _, m := range tr.members {
		m.sink.reset()
	}
	tf := newTraffic(80)
	var killed time.Time
	rebalanced := make(chan time.Duration, 1)
	tf.play(t, tr, 50*time.Millisecond, func() {
		killed = time.Now()
		_ = procs[1].cmd.Process.Signal(syscall.SIGKILL)
		go func() {
			_ = tr.groupStable(1, 40*time.Second)
			rebalanced <- time.Since(killed)
		}()
	})
	moved := <-rebalanced
	// After the move, the survivor reads from the last committed offsets: give it the decision
	// wait, the key wait and a margin.
	got := tr.waitSpans(t, tf.spans, 10*time.Second)
	time.Sleep(time.Second)
	d := measure(tr, tf)
	t.Logf("SIGKILL of a member, %d trace groups (%d spans, %d traces): partitions moved %s after the kill; %d spans exported (%d unique, %d duplicated); lost %d (%.1f%%); traces incomplete %d; spans per member %v; traces decided by both members %d",
		80, tf.spans, len(tf.perTrace), moved.Round(100*time.Millisecond), got, d.unique, d.duplicated, tf.spans-d.unique,
		100*float64(tf.spans-d.unique)/float64(tf.spans), d.tracesIncomplete, d.perMember, d.tracesSplit)
	t.Logf("survivor: %v %v", telemetryOf(t, tr.members[:1], "otelcol_processor_orphan_traces_root_missing"), telemetryOf(t, tr.members[:1], "otelcol_processor_orphan_key_lookups"))
	if d.unique == 0 || d.unique > tf.spans {
		t.Fatalf("exported %d unique spans of %d", d.unique, tf.spans)
	}
}
