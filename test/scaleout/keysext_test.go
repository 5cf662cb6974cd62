package scaleout

// Tests of the orphan_keys extension on kfake (here, so that kfake stays out of the main
// module): the key topic created and checked, records that carry their trace and root span,
// the Kafka client's SASL and TLS.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/orphanwatch/orphanwatch/extension/orphankeysextension"
	"github.com/orphanwatch/orphanwatch/internal/keyshare"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/testpki"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// holdsBoth reports whether m's table holds both records of key h.
func holdsBoth(m keyshare.Keys, h uint64, r1, r2 verdict.RootRef) bool {
	g1, ok1 := m.Lookup(h, []verdict.TraceID{r1.Trace})
	g2, ok2 := m.Lookup(h, []verdict.TraceID{r2.Trace})
	return ok1 && ok2 && g1 == r1 && g2 == r2
}

// cluster starts a kfake broker for the test.
func keysCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// admin returns an admin client of c (closed at the end of the test).
func admin(t *testing.T, c *kfake.Cluster, opts ...kgo.Opt) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// startKeys creates and starts an extension on c's brokers with cfg changed by edit; it is
// shut down at the end of the test. The start error is returned.
func startKeys(t *testing.T, c *kfake.Cluster, edit func(*orphankeysextension.Config)) (keyshare.Keys, error) {
	t.Helper()
	f := orphankeysextension.NewFactory()
	cfg := f.CreateDefaultConfig().(*orphankeysextension.Config)
	cfg.Brokers = c.ListenAddrs()
	cfg.Secret = "0123456789abcdef"
	cfg.Topic.CheckTimeout = 5 * time.Second
	if edit != nil {
		edit(cfg)
	}
	require.NoError(t, confmap.Validate(cfg))
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	err = ext.Start(context.Background(), componenttest.NewNopHost())
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return ext.(keyshare.Keys), err
}

func topicConfig(t *testing.T, adm *kadm.Client, topic, key string) string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	require.NoError(t, err)
	rc, err := rcs.On(topic, nil)
	require.NoError(t, err)
	for _, c := range rc.Configs {
		if c.Key == key && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

// A missing topic is created compacted, with the configured partitions, replication factor
// and retention.
func TestKeysTopicCreatedWhenMissing(t *testing.T) {
	c := keysCluster(t)
	_, err := startKeys(t, c, func(cfg *orphankeysextension.Config) {
		cfg.Topic.Name = "keys_created"
		cfg.Topic.Partitions = 3
		cfg.Topic.ReplicationFactor = 1
		cfg.Topic.Retention = 6 * time.Hour
	})
	require.NoError(t, err)
	adm := admin(t, c)
	tds, err := adm.ListTopics(context.Background(), "keys_created")
	require.NoError(t, err)
	td := tds["keys_created"]
	require.NoError(t, td.Err)
	assert.Len(t, td.Partitions, 3)
	assert.Equal(t, 1, td.Partitions.NumReplicas())
	assert.Equal(t, "compact,delete", topicConfig(t, adm, "keys_created", "cleanup.policy"))
	assert.Equal(t, "21600000", topicConfig(t, adm, "keys_created", "retention.ms"))
}

// A present topic is checked: one that is not compacted fails start-up with an error naming
// it; a compacted one with other partitions than configured is used (logged).
func TestKeysTopicCheckedWhenPresent(t *testing.T) {
	c := keysCluster(t)
	adm := admin(t, c)
	del, compact := "delete", "compact"
	_, err := adm.CreateTopic(context.Background(), 2, 1, map[string]*string{"cleanup.policy": &del}, "keys_deleted")
	require.NoError(t, err)
	_, err = adm.CreateTopic(context.Background(), 5, 1, map[string]*string{"cleanup.policy": &compact}, "keys_compacted")
	require.NoError(t, err)

	_, err = startKeys(t, c, func(cfg *orphankeysextension.Config) { cfg.Topic.Name = "keys_deleted" })
	require.Error(t, err)
	assert.Contains(t, err.Error(), `topic "keys_deleted" has cleanup.policy=delete: it must include compact`)

	_, err = startKeys(t, c, func(cfg *orphankeysextension.Config) { cfg.Topic.Name = "keys_compacted" })
	require.NoError(t, err)
	assert.Equal(t, "compact", topicConfig(t, adm, "keys_compacted", "cleanup.policy"), "a present topic is not altered")

	_, err = startKeys(t, c, func(cfg *orphankeysextension.Config) { cfg.Topic.Name = "keys_missing"; cfg.Topic.Create = false })
	require.Error(t, err)
	assert.Contains(t, err.Error(), `topic "keys_missing" does not exist and topic.create is false`)
}

// Records carry the trace and root span they came from: two requests (traces) that sent the
// same key keep a record each, on the topic (keyed by key hash and trace, so that compaction
// keeps both) and in every member's table; a look-up for a trace linked to one of them finds
// its own; a member started later rebuilds both from the topic.
func TestKeysRecordsCarryTraceAndRoot(t *testing.T) {
	c := keysCluster(t)
	m1, err := startKeys(t, c, nil)
	require.NoError(t, err)
	m2, err := startKeys(t, c, nil)
	require.NoError(t, err)
	var mu sync.Mutex
	var seen []uint64
	unsub := m2.Subscribe(func(h []uint64) { mu.Lock(); seen = append(seen, h...); mu.Unlock() })
	defer unsub()

	h := m1.Hash("order-4711")
	require.Equal(t, h, m2.Hash("order-4711"), "one secret, one hash on every member")
	r1 := verdict.RootRef{Gone: 2e9, Service: "gateway", Reason: verdict.EndReasonCancelled, Trace: verdict.TraceID{1, 1}, Root: verdict.SpanID{1}}
	r2 := verdict.RootRef{Gone: 10e9, Service: "checkout", Reason: verdict.EndReasonCompleted, Trace: verdict.TraceID{5, 5}, Root: verdict.SpanID{5}}
	m1.Publish(h, r1)
	m2.Publish(h, r2)
	m1.Publish(h, r1) // once per key, trace and gone time

	for _, m := range []keyshare.Keys{m1, m2} {
		require.Eventually(t, func() bool { return holdsBoth(m, h, r1, r2) }, 10*time.Second, 10*time.Millisecond)
		got, ok := m.Lookup(h, []verdict.TraceID{{9}, r1.Trace})
		assert.True(t, ok)
		assert.Equal(t, r1, got)
		got, _ = m.Lookup(h, []verdict.TraceID{r2.Trace})
		assert.Equal(t, r2, got)
		got, _ = m.Lookup(h, nil)
		assert.Contains(t, []verdict.RootRef{r1, r2}, got, "no link: the first record read")
		_, ok = m.Lookup(h+1, nil)
		assert.False(t, ok)
	}
	mu.Lock()
	assert.Equal(t, []uint64{h, h}, seen, "the subscriber is told each record's key hash")
	mu.Unlock()

	// On the topic: key = hash | trace ID, the root span in the value, never the key in clear.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("orphanwatch_keys"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var recs []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(recs) < 2 && ctx.Err() == nil {
		recs = append(recs, cl.PollFetches(ctx).Records()...)
	}
	require.Len(t, recs, 2, "one record per key and trace: the repeated publication was not sent")
	traces := map[verdict.TraceID]verdict.SpanID{}
	for _, r := range recs {
		// key = hash (8 bytes) | trace ID (16); value = version 2 | gone (8) | reason | detached | root span (8) | ...
		require.Len(t, r.Key, 24)
		require.GreaterOrEqual(t, len(r.Value), 20)
		assert.Equal(t, byte(2), r.Value[0])
		assert.Equal(t, h, binary.BigEndian.Uint64(r.Key[:8]))
		var tr verdict.TraceID
		var root verdict.SpanID
		copy(tr[:], r.Key[8:])
		copy(root[:], r.Value[11:19])
		traces[tr] = root
		assert.NotContains(t, string(r.Key)+string(r.Value), "order-4711")
	}
	assert.Equal(t, map[verdict.TraceID]verdict.SpanID{r1.Trace: r1.Root, r2.Trace: r2.Root}, traces)

	// A member that starts later reads the topic whole.
	m3, err := startKeys(t, c, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return holdsBoth(m3, h, r1, r2) }, 10*time.Second, 10*time.Millisecond)
	got, _ := m3.Lookup(h, []verdict.TraceID{r2.Trace})
	assert.Equal(t, r2, got)
}

// The client is configured like the kafka receiver's: SASL against a broker that requires it.
func TestKeysSASL(t *testing.T) {
	c := keysCluster(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "orphanwatch", "s3cret-pass"))
	for _, tc := range []struct {
		pass string
		ok   bool
	}{{"s3cret-pass", true}, {"wrong", false}} {
		m, err := startKeys(t, c, func(cfg *orphankeysextension.Config) {
			cfg.Topic.CheckTimeout = 2 * time.Second
			require.NoError(t, confmap.NewFromStringMap(map[string]any{"auth": map[string]any{"sasl": map[string]any{
				"mechanism": "SCRAM-SHA-512", "username": "orphanwatch", "password": tc.pass}}}).Unmarshal(cfg))
		})
		require.NoError(t, err, "a broker that refuses the login does not fail start-up: it is retried")
		r := verdict.RootRef{Gone: 1, Service: "gateway", Trace: verdict.TraceID{7}, Root: verdict.SpanID{7}}
		m.Publish(42, r)
		if tc.ok {
			require.Eventually(t, func() bool { _, ok := m.Lookup(42, nil); return ok }, 10*time.Second, 10*time.Millisecond)
		} else {
			time.Sleep(500 * time.Millisecond)
			_, ok := m.Lookup(42, nil)
			assert.False(t, ok, "nothing read without a valid login")
		}
	}
}

// The client speaks TLS (configtls, as the kafka receiver's) to a broker that requires it; a
// plaintext client reads nothing from it.
func TestKeysTLS(t *testing.T) {
	pki := testpki.New(t)
	cert, ca := pki.Issue(t, "127.0.0.1", x509.ExtKeyUsageServerAuth), pki.CAFile()
	c := keysCluster(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	for _, withTLS := range []bool{true, false} {
		m, err := startKeys(t, c, func(cfg *orphankeysextension.Config) {
			cfg.Topic.CheckTimeout = 2 * time.Second
			if withTLS {
				cfg.TLS = &configtls.ClientConfig{Config: configtls.Config{CAFile: ca}}
			}
		})
		require.NoError(t, err)
		r := verdict.RootRef{Gone: 1, Service: "gateway", Trace: verdict.TraceID{3}, Root: verdict.SpanID{3}}
		m.Publish(43, r)
		if withTLS {
			require.Eventually(t, func() bool { got, ok := m.Lookup(43, nil); return ok && got == r }, 10*time.Second, 10*time.Millisecond)
		} else {
			time.Sleep(500 * time.Millisecond)
			_, ok := m.Lookup(43, nil)
			assert.False(t, ok, "a plaintext client reads nothing from a TLS broker")
		}
	}
}
