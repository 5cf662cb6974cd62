package scaleout

import (
	"strings"
	"testing"
	"time"
)

// TestMemberKafkaTelemetry: a member's telemetry endpoint serves the kafka receiver's series
// that the pipeline-health dashboard's Kafka section and the OrphanwatchKafkaLagHigh alert read
// (config/prometheus/rules, dashboards/health.go): otelcol_kafka_receiver_offset_lag per topic
// and partition, otelcol_kafka_receiver_records per topic; once the member has read every
// message, the lag is 0 on every partition it reports and the records read agree with the
// partitions' offsets.
func TestMemberKafkaTelemetry(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a tier")
	}
	tr := startTier(t, tierOptions{members: 1, partitions: 4})
	total := tr.sendAll(t, scenarioBatches())
	if got := tr.settle(t, total, 60*time.Second); got != total {
		t.Fatalf("%d of %d spans judged", got, total)
	}
	var lagSeries, partitions int
	var lag, records, offsets float64
	deadline := time.Now().Add(20 * time.Second)
	for {
		lagSeries, partitions, lag, records, offsets = 0, 0, 0, 0, 0
		for k, v := range scrape(t, tr.members[0].telemetry) {
			switch {
			case strings.HasPrefix(k, "otelcol_kafka_receiver_offset_lag{") && strings.Contains(k, "partition=") && strings.Contains(k, "topic=otlp_spans"):
				lagSeries++
				lag += v
			case strings.HasPrefix(k, "otelcol_kafka_receiver_records{") && strings.Contains(k, "topic=otlp_spans"):
				records += v
			case strings.HasPrefix(k, "otelcol_kafka_receiver_current_offset{") && strings.Contains(k, "topic=otlp_spans"):
				partitions++
				offsets += v
			}
		}
		if (lagSeries > 0 && lag == 0 && records == offsets+float64(partitions)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if lagSeries == 0 {
		t.Fatal("no otelcol_kafka_receiver_offset_lag{partition,topic} series on the member")
	}
	if lag != 0 {
		t.Errorf("lag %g after every span was judged, want 0", lag)
	}
	// current_offset is the offset of the last record read on a partition (kfake starts at 0):
	// one less than the records read from it.
	if records == 0 || records != offsets+float64(partitions) {
		t.Errorf("records read %g, the partitions' last offsets sum to %g on %d partitions", records, offsets, partitions)
	}
	if lagSeries != partitions {
		t.Errorf("lag on %d partitions, offsets on %d", lagSeries, partitions)
	}
	t.Logf("%d spans; %g records read on %d partitions, lag %g", total, records, lagSeries, lag)
}
