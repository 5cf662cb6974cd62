package orphanprocessor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/orphanwatch/orphanwatch/internal/scenarios"
)

func TestKeySharingOffByDefault(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.False(t, cfg.KeySharing.Enabled())
	require.NoError(t, cfg.Validate())
	assert.Equal(t, 5*time.Second, cfg.KeySharing.Wait)
	assert.Equal(t, "orphanwatch_keys", cfg.KeySharing.Topic)
}

func TestKeySharingValidateNamesFields(t *testing.T) {
	cm := confmap.NewFromStringMap(map[string]any{"key_sharing": map[string]any{
		"brokers": []any{"127.0.0.1:9092", " "}, "topic": "", "secret": "short", "wait": "-1s",
		"max_records": 0, "max_waiting": -1, "partitions": 0, "replication_factor": 0,
		"retention": "0s", "dial_timeout": "0s",
		"sasl": map[string]any{"mechanism": "GSSAPI", "username": ""},
	}})
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, cm.Unmarshal(cfg))
	err := cfg.Validate()
	require.Error(t, err)
	for _, field := range []string{"key_sharing.brokers[1]", "key_sharing.topic", "key_sharing.secret: must be at least 16 bytes, got 5",
		"key_sharing.wait", "key_sharing.max_records", "key_sharing.max_waiting", "key_sharing.partitions",
		"key_sharing.replication_factor", "key_sharing.retention", "key_sharing.dial_timeout",
		"key_sharing.sasl.mechanism", "key_sharing.sasl.username"} {
		assert.Contains(t, err.Error(), field)
	}
	assert.NotContains(t, err.Error(), "short", "the secret is never printed")
}

// With key sharing on, the reader's key hash is the keyed hash: a processor without the
// secret (or without key sharing) hashes the same key differently.
func TestKeySharingHashesWithTheSecret(t *testing.T) {
	mk := func(secret string) *orphanProcessor {
		cfg := createDefaultConfig().(*Config)
		if secret != "" {
			cfg.KeySharing.Brokers = []string{"127.0.0.1:1"}
			cfg.KeySharing.Secret = configopaque.String("0123456789abcdef" + configSecretSuffix(secret))
		}
		require.NoError(t, cfg.Validate())
		p, err := newOrphanProcessor(processortest.NewNopSettings(processortest.NopType), cfg, new(consumertest.TracesSink))
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
		return p
	}
	plain, a, b := mk(""), mk("a"), mk("b")
	ha, hb := a.reader.KeyHashOf("K"), b.reader.KeyHashOf("K")
	assert.NotEqual(t, plain.reader.KeyHashOf("K"), ha)
	assert.NotEqual(t, ha, hb)
	assert.NotZero(t, ha)
}

func configSecretSuffix(s string) string { return strings.Repeat(s, 4) }

// With the brokers unreachable, key sharing costs a bounded wait and nothing else: a trace
// whose key binds nowhere is held key_sharing.wait beyond its decision, then passed on whole,
// unbound; Shutdown leaves no goroutine behind (goleak in TestMain).
func TestKeySharingBrokersDown(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.DecisionWait = 0
	cfg.KeySharing.Brokers = []string{"127.0.0.1:1"}
	cfg.KeySharing.Secret = "0123456789abcdef"
	cfg.KeySharing.CreateTopic = false
	cfg.KeySharing.Wait = 300 * time.Millisecond
	cfg.KeySharing.DialTimeout = 100 * time.Millisecond
	require.NoError(t, cfg.Validate())
	sink := new(consumertest.TracesSink)
	p, err := newOrphanProcessor(processortest.NewNopSettings(processortest.NopType), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), nil))

	td, _ := scenarios.S7()
	// Trace B alone: the consumer's model calls carry K, the request's trace never comes.
	b := ptrace.NewTraces()
	td.CopyTo(b)
	var idA pcommon.TraceID
	b.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(sp ptrace.Span) bool {
				if idA.IsEmpty() {
					idA = sp.TraceID()
				}
				return sp.TraceID() == idA
			})
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
	n := b.SpanCount()
	start := time.Now()
	require.NoError(t, p.ConsumeTraces(context.Background(), b))
	assert.Zero(t, sink.SpanCount(), "held for key_sharing.wait")
	require.Eventually(t, func() bool { return sink.SpanCount() == n }, 5*time.Second, 10*time.Millisecond)
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 250*time.Millisecond)
	detached := 0
	for _, out := range sink.AllTraces() {
		rss := out.ResourceSpans()
		for i := range rss.Len() {
			for j := range rss.At(i).ScopeSpans().Len() {
				sps := rss.At(i).ScopeSpans().At(j).Spans()
				for k := range sps.Len() {
					if v, ok := sps.At(k).Attributes().Get("orphanwatch.detached"); ok && v.Bool() {
						detached++
					}
				}
			}
		}
	}
	assert.Equal(t, n, detached, "unbound: every span of B is detached work")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.Shutdown(ctx))
}
