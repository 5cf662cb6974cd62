package orphanprocessor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/keystest"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/tdwalk"
)

func TestKeySharingOffByDefault(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.Nil(t, cfg.Keys)
	require.NoError(t, cfg.Validate())
}

func TestKeySharingConfigNamesTheExtension(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"keys": "orphan_keys/tier"}).Unmarshal(cfg))
	require.NotNil(t, cfg.Keys)
	assert.Equal(t, component.MustNewIDWithName("orphan_keys", "tier"), *cfg.Keys)
	// The processor-level section of earlier releases is gone: the collector refuses it by name.
	err := confmap.NewFromStringMap(map[string]any{"key_sharing": map[string]any{"brokers": []any{"k:9092"}}}).Unmarshal(createDefaultConfig())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "key_sharing")
}

// extHost is a component.Host with the given extensions.
type extHost map[component.ID]component.Component

func (h extHost) GetExtensions() map[component.ID]component.Component { return h }

// Start refuses a `keys` ID that names no extension, or an extension of another type, naming
// the field and the ID.
func TestKeySharingFindsOrRefusesTheExtension(t *testing.T) {
	id := component.MustNewID("orphan_keys")
	nf := extensiontest.NewNopFactory()
	nop, err := nf.Create(context.Background(), extensiontest.NewNopSettings(nf.Type()), nf.CreateDefaultConfig())
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		host component.Host
		want string
	}{
		"missing":    {extHost{}, `keys: extension "orphan_keys" is not configured`},
		"wrong type": {extHost{id: nop}, `keys: extension "orphan_keys" is not an orphan_keys extension`},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.Keys = &id
			p, err := newOrphanProcessor(processortest.NewNopSettings(processortest.NopType), cfg, new(consumertest.TracesSink))
			require.NoError(t, err)
			err = p.Start(context.Background(), tc.host)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			require.NoError(t, p.Shutdown(context.Background()))
		})
	}
	t.Run("found", func(t *testing.T) {
		cfg := createDefaultConfig().(*Config)
		named := component.MustNewIDWithName("orphan_keys", "tier")
		cfg.Keys = &named
		p, err := newOrphanProcessor(processortest.NewNopSettings(processortest.NopType), cfg, new(consumertest.TracesSink))
		require.NoError(t, err)
		ext := keystest.New(t, nil)
		require.NoError(t, p.Start(context.Background(), extHost{named: ext}))
		assert.Equal(t, ext.Hash("K"), p.reader.KeyHashOf("K"), "keys are hashed with the extension's HMAC")
		require.NoError(t, p.Shutdown(context.Background()))
	})
}

// With key sharing on, the reader's key hash is the extension's keyed hash: a processor whose
// extension has another secret (or without key sharing) hashes the same key differently.
func TestKeySharingHashesWithTheSecret(t *testing.T) {
	id := component.MustNewID("orphan_keys")
	mk := func(secret string) *orphanProcessor {
		cfg := createDefaultConfig().(*Config)
		host := component.Host(extHost{})
		if secret != "" {
			cfg.Keys = &id
			host = extHost{id: keystest.New(t, map[string]any{"secret": keystest.Secret + configSecretSuffix(secret)})}
		}
		require.NoError(t, cfg.Validate())
		p, err := newOrphanProcessor(processortest.NewNopSettings(processortest.NopType), cfg, new(consumertest.TracesSink))
		require.NoError(t, err)
		require.NoError(t, p.Start(context.Background(), host))
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
// whose key binds nowhere is held the extension's wait beyond its decision, then passed on whole,
// unbound; Shutdown leaves no goroutine behind (goleak in TestMain).
func TestKeySharingBrokersDown(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.DecisionWait = 0
	id := component.MustNewID("orphan_keys")
	cfg.Keys = &id
	require.NoError(t, cfg.Validate())
	ext := keystest.New(t, map[string]any{
		"brokers": []any{"127.0.0.1:1"}, "wait": "300ms", "dial_timeout": "100ms",
		"topic": map[string]any{"check_timeout": "200ms"},
	})
	host := extHost{id: ext}
	require.NoError(t, ext.Start(context.Background(), host), "brokers down: start-up goes on")
	sink := new(consumertest.TracesSink)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	p, err := newOrphanProcessor(settingsFor(tel, component.MustNewIDWithName("orphan", "tier")), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), host))

	td, _ := scenarios.S7()
	// Trace B alone: the consumer's model calls carry K, the request's trace never comes.
	b := ptrace.NewTraces()
	td.CopyTo(b)
	var idA pcommon.TraceID
	tdwalk.RemoveSpans(b, func(sp ptrace.Span) bool {
		if idA.IsEmpty() {
			idA = sp.TraceID()
		}
		return sp.TraceID() == idA
	})
	n := b.SpanCount()
	start := time.Now()
	require.NoError(t, p.ConsumeTraces(context.Background(), b))
	assert.Zero(t, sink.SpanCount(), "held for the extension's wait")
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
	// The key was looked up once, when B was decided, and bound nowhere: counted with the
	// processor's own attribute, as every instrument of the processor is (metadata.yaml).
	assert.Equal(t, map[string]int64{"outcome=missed,processor=orphan/tier": 1}, points(t, tel, "otelcol_processor_orphan_key_lookups"))
	assert.Equal(t, map[string]int64{"processor=orphan/tier": 0}, points(t, tel, "otelcol_processor_orphan_key_traces_waiting"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.Shutdown(ctx))
	require.NoError(t, ext.Shutdown(ctx))
}
