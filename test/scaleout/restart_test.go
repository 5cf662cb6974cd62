package scaleout

import (
	"strings"
	"testing"
	"time"
)

// TestKeyTableRebuiltOnRestart: a member that restarts reads the key topic again from its
// start and holds every record the tier published before it stopped; it rejoins the group
// with its group_instance_id.
func TestKeyTableRebuiltOnRestart(t *testing.T) {
	const pairs = 8
	tr := startTier(t, tierOptions{members: 2, keySharing: true, decisionWait: "1s"})
	total := 0
	for i := range pairs {
		a, _, _, _ := s7Pair(100 + i)
		total += a.SpanCount()
		tr.send(t, a)
	}
	if got := tr.settle(t, total, 30*time.Second); got != total {
		t.Fatalf("%d of %d spans judged", got, total)
	}
	published := waitGauge(t, tr.members, "otelcol_orphan_keys_records_published", pairs, 10*time.Second)
	if published != pairs {
		t.Fatalf("published %v records, want %d (one per request trace)", published, pairs)
	}
	for _, m := range tr.members {
		if n := waitGauge(t, []*member{m}, "otelcol_orphan_keys_records", pairs, 10*time.Second); n != pairs {
			t.Fatalf("a member holds %v records, want %d", n, pairs)
		}
	}
	tr.members[1].Stop()
	start := time.Now()
	m := tr.addMember(t, 2) // same name: same group_instance_id
	n := waitGauge(t, []*member{m}, "otelcol_orphan_keys_records", pairs, 20*time.Second)
	took := time.Since(start)
	if n != pairs {
		t.Fatalf("restarted member holds %v records, want %d", n, pairs)
	}
	tr.members = []*member{tr.members[0], m}
	if err := tr.groupStable(2, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted member: %v key records read back within %s of its start; the group is stable again after %s",
		n, took.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
}

// waitGauge waits until the sum over members of a telemetry metric (all its series: the
// extension's carry the instance ID) reaches want.
func waitGauge(t *testing.T, members []*member, name string, want int, within time.Duration) float64 {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		v := 0.0
		for k, x := range telemetryOf(t, members, name+"{") {
			if strings.HasPrefix(k, name+"{") {
				v += x
			}
		}
		if v >= float64(want) || time.Now().After(deadline) {
			return v
		}
		time.Sleep(100 * time.Millisecond)
	}
}
