package scaleout

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
)

// buildDistribution builds cmd/otelcol-orphanwatch once per test process (bounded: 5
// minutes); the binary is removed when the tests end (TestMain).
func buildDistribution(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the distribution")
	}
	dist.once.Do(func() {
		dir, err := os.MkdirTemp("", "scaleout-dist")
		if err != nil {
			dist.err = err
			return
		}
		dist.dir = dir
		out := filepath.Join(dir, "otelcol-orphanwatch")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/otelcol-orphanwatch")
		cmd.Dir = e2e.RepoRoot()
		if b, err := cmd.CombinedOutput(); err != nil {
			dist.err = fmt.Errorf("go build: %v\n%s", err, b)
			return
		}
		dist.bin = out
	})
	if dist.err != nil {
		t.Fatal(dist.err)
	}
	return dist.bin
}

// dist is the distribution built for this test process.
var dist struct {
	once     sync.Once
	dir, bin string
	err      error
}

// proc is a member run as the distribution's binary, configured as README "Scale" says: the
// shipped config/scaleout/member.yaml and environment variables.
type proc struct {
	cmd    *exec.Cmd
	health int
	log    *e2e.SyncBuffer
	exited chan struct{}
}

func startProc(t *testing.T, bin string, tr *tier, m *member, name string, extra ...string) *proc {
	t.Helper()
	p := &proc{health: e2e.FreePort(t), log: &e2e.SyncBuffer{}, exited: make(chan struct{})}
	args := append([]string{"--config", filepath.Join(e2e.RepoRoot(), "config/scaleout/member.yaml")}, extra...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(),
		"ORPHANWATCH_MEMBER="+name,
		"ORPHANWATCH_KEY_SECRET="+testSecret,
		"KAFKA_BROKERS="+tr.broker,
		fmt.Sprintf("METRICS_PORT=%d", m.metrics),
		fmt.Sprintf("TELEMETRY_PORT=%d", m.telemetry),
		fmt.Sprintf("HEALTH_PORT=%d", p.health),
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
	hasExited := func() bool {
		select {
		case <-p.exited:
			return true
		default:
			return false
		}
	}
	if err := e2e.WaitReady(fmt.Sprintf("http://127.0.0.1:%d/", p.health), 60*time.Second, hasExited); err != nil {
		t.Fatalf("%s %v:\n%s", name, err, tail(p.log.String(), 3000))
	}
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestDistributionTier starts the distribution twice as the orphanwatch tier against kfake on
// 127.0.0.1 (the front tier in-process) and checks that the two members' summed series equal
// one collector's on the scenarios. A member killed mid-traffic: TestMemberKilled.
func TestDistributionTier(t *testing.T) {
	bin := buildDistribution(t)
	batches := scenarioBatches()
	want, _ := runTier(t, 1, true, batches)

	tr, _ := startProcTier(t, bin, 2)
	total := tr.sendAll(t, batches)
	tr.storedAndJudged(t, total)
	if d := diff(want, tr.orphanSeries(t)); len(d) > 0 {
		t.Errorf("two distribution members: %d series differ from one collector:\n%s", len(d), joinLines(d))
	} else {
		t.Logf("two distribution members: %d series equal one collector's; spans judged per member %d, %d", len(want), judged(t, tr.members[0]), judged(t, tr.members[1]))
	}
}

// startProcTier starts n members as the distribution's binary (decision_wait 2s, the
// orphan_keys wait 3s) on a kfake broker of 12 partitions, then the front in-process.
func startProcTier(t *testing.T, bin string, n int) (*tier, []*proc) {
	t.Helper()
	tr := &tier{broker: broker(t, 12), opts: tierOptions{members: n, partitions: 12, decisionWait: "2s", keyWait: "3s"}}
	procs := make([]*proc, n)
	for i := range n {
		m := &member{metrics: e2e.FreePort(t), telemetry: e2e.FreePort(t)}
		procs[i] = startProc(t, bin, tr, m, fmt.Sprintf("%d", i+1),
			"--set", "exporters::orphanmetrics::decision_wait=2s", "--set", "extensions::orphan_keys::wait=3s")
		tr.members = append(tr.members, m)
	}
	tr.waitGroup(t, n)
	tr.startFront(t)
	return tr, procs
}
