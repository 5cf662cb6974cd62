package scaleout

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/orphanwatch/orphanwatch/extension/orphankeysextension"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor"
)

// TestKeySharingWithSASL: two orphan processors share a key through a broker that requires
// SASL (SCRAM-SHA-256): trace A on one, trace B on the other, B bound to A's root.
func TestKeySharingWithSASL(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "orphanwatch", "s3cret-pass"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mk := func(name string) (processor.Traces, *consumertest.TracesSink) {
		// The orphan_keys extension, configured as the kafka receiver is (configkafka).
		ef := orphankeysextension.NewFactory()
		ecfg := ef.CreateDefaultConfig().(*orphankeysextension.Config)
		if err := confmap.NewFromStringMap(map[string]any{
			"brokers":   c.ListenAddrs(),
			"client_id": name,
			"secret":    testSecret,
			"wait":      "10s",
			"auth":      map[string]any{"sasl": map[string]any{"mechanism": "SCRAM-SHA-256", "username": "orphanwatch", "password": "s3cret-pass"}},
		}).Unmarshal(ecfg); err != nil {
			t.Fatal(err)
		}
		if err := confmap.Validate(ecfg); err != nil {
			t.Fatal(err)
		}
		ext, err := ef.Create(context.Background(), extensiontest.NewNopSettings(ef.Type()), ecfg)
		if err != nil {
			t.Fatal(err)
		}
		id := component.NewID(ef.Type())
		host := componentHost{id: ext}
		if err := ext.Start(context.Background(), host); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ext.Shutdown(context.Background()) })

		f := orphanprocessor.NewFactory()
		cfg := f.CreateDefaultConfig().(*orphanprocessor.Config)
		cfg.DecisionWait = 0
		cfg.Keys = &id
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		sink := new(consumertest.TracesSink)
		p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), cfg, sink)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background(), host); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Shutdown(context.Background()) }) // before the extension's
		return p, sink
	}
	p1, _ := mk("m1")
	p2, sink2 := mk("m2")
	a, b, ida, _ := s7Pair(7)
	var rootA pcommon.SpanID // read before the processor takes a
	tdwalk.Spans(a, func(sp ptrace.Span) {
		if sp.ParentSpanID().IsEmpty() {
			rootA = sp.SpanID()
		}
	})
	start := time.Now()
	if err := p2.ConsumeTraces(context.Background(), b); err != nil { // B first: it waits
		t.Fatal(err)
	}
	if err := p1.ConsumeTraces(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for sink2.SpanCount() < b.SpanCount() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	orphaned := 0
	for _, td := range sink2.AllTraces() {
		tdwalk.Spans(td, func(sp ptrace.Span) {
			if v, ok := sp.Attributes().Get("orphanwatch.liveness"); ok && v.Str() == "orphaned" {
				orphaned++
			}
		})
	}
	if orphaned != 2 {
		t.Fatalf("B's model calls orphaned: %d, want 2 (bound to A's root through SASL-authenticated key sharing)", orphaned)
	}
	t.Logf("B bound to A's root through a SASL broker %s after B arrived", time.Since(start).Round(10*time.Millisecond))

	// On the topic: one record, keyed by the key's HMAC and A's trace ID, naming A's root span;
	// the idempotency key itself appears nowhere.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("orphanwatch_keys"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SASL(scram.Auth{User: "orphanwatch", Pass: "s3cret-pass"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) == 0 && ctx.Err() == nil {
		recs = append(recs, cl.PollFetches(ctx).Records()...)
	}
	if len(recs) != 1 {
		t.Fatalf("%d key records, want 1", len(recs))
	}
	r := recs[0]
	if len(r.Key) != 24 || !bytes.Equal(r.Key[8:], ida[:]) || len(r.Value) < 19 || !bytes.Equal(r.Value[11:19], rootA[:]) {
		t.Errorf("record key %x value %x: want the key's HMAC then A's trace ID %s, and A's root span %s", r.Key, r.Value, ida, rootA)
	}
	if bytes.Contains(r.Key, []byte("pair-7-key")) || bytes.Contains(r.Value, []byte("pair-7-key")) {
		t.Error("the idempotency key appears in clear on the topic")
	}
}

// componentHost is a component.Host with the given extensions.
type componentHost map[component.ID]component.Component

func (h componentHost) GetExtensions() map[component.ID]component.Component { return h }
