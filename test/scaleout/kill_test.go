package scaleout

import (
	"math"
	"syscall"
	"testing"
	"time"
)

// TestMemberKilledMidTraffic runs the tier as README "Scale" ships it: the front (in-process)
// sends every span to the trace store and to Kafka, two members (the distribution's binary,
// config/scaleout/member.yaml) observe. Member 2 is killed (SIGKILL) when half the traffic is
// sent. It shows:
//
//   - the trace store got every span once: a member that dies costs no span;
//   - the verdicts the member lost (the records it held, from messages it had committed) are
//     counted by the tier's telemetry: the front's otelcol_exporter_sent_spans{exporter="kafka"}
//     minus the members' otelcol_exporter_orphanmetrics_spans_judged (the dead member's as last
//     scraped). No single member can count them: the survivor never reads what the dead member
//     had committed, and a verdict counted by the dead member after its last scrape is lost to
//     Prometheus as well;
//   - requests begun after the hand-over (the group stable with the survivor alone) are judged
//     as one collector judges them: the survivor's series grow by exactly a one-member tier's
//     series for the same traffic.
func TestMemberKilledMidTraffic(t *testing.T) {
	bin := buildDistribution(t)
	tr, procs := startProcTier(t, bin, 2)
	victim := watch(t, tr.members[1])

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
	if err := tr.groupStable(1, time.Second); err != nil {
		t.Fatalf("the survivor did not take the partitions over: %v", err)
	}
	stored := tr.waitStore(t, tf.spans, 30*time.Second)
	sent := tr.frontSent(t, "kafka")
	h := verdictsAfter(t, tr, 1, victim, sent)
	d := measure(tr, tf)
	survivor := tr.members[:1]
	t.Logf("SIGKILL of a member, %d trace groups (%d spans, %d traces): partitions moved %s after the kill; trace store %d spans (%d unique, %d twice, %d traces incomplete); to Kafka %d",
		80, tf.spans, len(tf.perTrace), moved.Round(100*time.Millisecond), stored, d.unique, d.duplicated, d.tracesIncomplete, sent)
	t.Logf("verdicts: the killed member judged %d spans (last scrape), the survivor %d; lost %d of %d (%.1f%%): sent_spans{exporter=kafka} - sum(spans_judged)",
		h.goneJudged, h.othersJudged, h.lost, sent, 100*float64(h.lost)/float64(sent))
	_, lastTel := victim.last()
	t.Logf("the killed member at its last scrape: records waiting %v, kept %v; the survivor: spans without verdict (root_missing) %v, runs unknown_root %v",
		metricSum(lastTel, "otelcol_exporter_orphanmetrics_records", "state=waiting"), metricSum(lastTel, "otelcol_exporter_orphanmetrics_records", "state=kept"),
		metricSum(telemetryOf(t, survivor, "otelcol_exporter_orphanmetrics_spans_without_verdict"), "otelcol_exporter_orphanmetrics_spans_without_verdict", "reason=root_missing"),
		metricSum(orphanSeriesOf(t, survivor), "orphanwatch_runs_total", "outcome=unknown_root"))

	// Every span reached the trace store once, and the topic.
	if d.unique != tf.spans || d.duplicated != 0 || d.tracesIncomplete != 0 {
		t.Errorf("trace store: %d of %d spans, %d twice, %d traces incomplete", d.unique, tf.spans, d.duplicated, d.tracesIncomplete)
	}
	if sent != tf.spans {
		t.Errorf("the front sent %d of %d spans to Kafka", sent, tf.spans)
	}
	// Verdicts: none counted twice, and the loss is bounded by what the member had.
	if h.lost < 0 {
		t.Errorf("%d spans judged twice", -h.lost)
	}
	if h.goneJudged+h.lost > tf.spans-h.othersJudged || h.othersJudged == 0 {
		t.Errorf("judged: killed member %d, survivor %d, lost %d of %d", h.goneJudged, h.othersJudged, h.lost, tf.spans)
	}

	// Requests begun after the hand-over: the survivor judges them as one collector does.
	before := orphanSeriesOf(t, survivor)
	judgedBefore := judged(t, tr.members[0])
	after := newTrafficFrom(1000, 24)
	after.play(t, tr, 50*time.Millisecond, nil)
	if got := tr.settleStable(t, survivor, 60*time.Second) - judgedBefore; got != after.spans {
		t.Fatalf("after the hand-over the survivor judged %d of %d spans", got, after.spans)
	}
	grown := orphanSeriesOf(t, survivor)
	for k, v := range before {
		grown[k] -= v
		if math.Abs(grown[k]) < 1e-9*math.Max(1, v) {
			delete(grown, k)
		}
	}
	one := startTier(t, tierOptions{members: 1, keySharing: true})
	after.play(t, one, 50*time.Millisecond, nil)
	if got := one.settle(t, after.spans, 60*time.Second); got != after.spans {
		t.Fatalf("one collector judged %d of %d spans", got, after.spans)
	}
	want := one.orphanSeries(t)
	if dd := diff(want, grown); len(dd) > 0 {
		t.Errorf("requests begun after the hand-over: %d series differ from one collector's:\n%s", len(dd), joinLines(dd))
	} else {
		t.Logf("requests begun after the hand-over (%d spans): the survivor's series grew by one collector's, %d series", after.spans, len(want))
	}
}
