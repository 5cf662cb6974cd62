package orphanmetricsexporter_test

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"
)

// A program that wants the metrics of some traces as Prometheus text,
// without a collector or an HTTP server.
func ExampleWriteText() {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "agent")
	span := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetName("call_tool")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	span.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	span.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(1500 * time.Millisecond)))
	span.Attributes().PutInt("orphanwatch.attempt", 3)
	span.Attributes().PutStr("orphanwatch.liveness", "orphaned")
	span.Attributes().PutStr("orphanwatch.run.outcome", "delivered_to_nobody")

	var buf bytes.Buffer
	if err := orphanmetricsexporter.WriteText(&buf, nil, td); err != nil {
		panic(err)
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(line, "orphanwatch_runs_total") ||
			strings.HasPrefix(line, "orphanwatch_attempts_total") ||
			strings.HasPrefix(line, "orphanwatch_spend_seconds_total") {
			fmt.Println(line)
		}
	}
	// Output:
	// orphanwatch_attempts_total{liveness="outlived_root",operation="call_tool",service_name="agent"} 1
	// orphanwatch_runs_total{operation="call_tool",outcome="delivered_to_nobody",service_name="agent"} 1
	// orphanwatch_spend_seconds_total{liveness="orphaned",service_name="agent"} 1.5
}

// A program that keeps a Recorder and serves or merges its registry itself.
func ExampleNewRecorder() {
	cfg := orphanmetricsexporter.NewDefaultConfig()
	cfg.Namespace = "myapp_orphans"
	rec, err := orphanmetricsexporter.NewRecorder(cfg)
	if err != nil {
		panic(err)
	}
	rec.Record(ptrace.NewTraces()) // call for each batch of spans
	mfs, err := rec.Gatherer().Gather()
	if err != nil {
		panic(err)
	}
	fmt.Println(mfs[0].GetName())
	// Output: myapp_orphans_label_overflow_total
}
