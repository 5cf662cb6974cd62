package orphanmetricsconnector

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// BenchmarkFlush measures one flush (gather the recorder, build the OTLP metrics, hand them to
// a no-op consumer) after the spans of every scenario (as built, before the processor: the
// series their gen_ai and orphanwatch attributes make) under 200 renamings of their services,
// up to the service_name limit: the cost paid once per metrics_flush_interval, off the
// spans' path. ns/point is per data point sent.
func BenchmarkFlush(b *testing.B) {
	c, err := newConnector(NewDefaultConfig(), connectortest.NewNopSettings(metadata.Type), consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	for i := range 200 {
		for _, sc := range scenarios.All() {
			td, _ := sc.Build()
			for _, rs := range td.ResourceSpans().All() {
				if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
					rs.Resource().Attributes().PutStr("service.name", v.Str()+"-"+string(rune('a'+i%26))+string(rune('a'+i/26)))
				}
			}
			_ = c.ConsumeTraces(context.Background(), td)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.flush(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	mfs, _ := c.rec.Recorder.Gatherer().Gather()
	points := c.conv.convert(mfs, 1).DataPointCount()
	b.ReportMetric(float64(points), "points")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*points), "ns/point")
}
