package orphankeysextension

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/orphanwatch/orphanwatch/extension/orphankeysextension/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// cluster starts a kfake broker for the test.
func cluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
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
func startKeys(t *testing.T, c *kfake.Cluster, edit func(*Config)) (*keys, error) {
	t.Helper()
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
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
	return ext.(*keys), err
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
func TestTopicCreatedWhenMissing(t *testing.T) {
	c := cluster(t)
	_, err := startKeys(t, c, func(cfg *Config) {
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
func TestTopicCheckedWhenPresent(t *testing.T) {
	c := cluster(t)
	adm := admin(t, c)
	del, compact := "delete", "compact"
	_, err := adm.CreateTopic(context.Background(), 2, 1, map[string]*string{"cleanup.policy": &del}, "keys_deleted")
	require.NoError(t, err)
	_, err = adm.CreateTopic(context.Background(), 5, 1, map[string]*string{"cleanup.policy": &compact}, "keys_compacted")
	require.NoError(t, err)

	_, err = startKeys(t, c, func(cfg *Config) { cfg.Topic.Name = "keys_deleted" })
	require.Error(t, err)
	assert.Contains(t, err.Error(), `topic "keys_deleted" has cleanup.policy=delete: it must include compact`)

	_, err = startKeys(t, c, func(cfg *Config) { cfg.Topic.Name = "keys_compacted" })
	require.NoError(t, err)
	assert.Equal(t, "compact", topicConfig(t, adm, "keys_compacted", "cleanup.policy"), "a present topic is not altered")

	_, err = startKeys(t, c, func(cfg *Config) { cfg.Topic.Name = "keys_missing"; cfg.Topic.Create = false })
	require.Error(t, err)
	assert.Contains(t, err.Error(), `topic "keys_missing" does not exist and topic.create is false`)
}

// Records carry the trace and root span they came from: two requests (traces) that sent the
// same key keep a record each, on the topic (keyed by key hash and trace, so that compaction
// keeps both) and in every member's table; a look-up for a trace linked to one of them finds
// its own; a member started later rebuilds both from the topic.
func TestRecordsCarryTraceAndRoot(t *testing.T) {
	c := cluster(t)
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

	for _, m := range []*keys{m1, m2} {
		require.Eventually(t, func() bool { return m.table.len() == 2 }, 10*time.Second, 10*time.Millisecond)
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
		gh, ref, ok := decodeRecord(r.Key, r.Value)
		require.True(t, ok)
		assert.Equal(t, h, gh)
		assert.True(t, bytes.Equal(r.Key[8:], ref.Trace[:]))
		traces[ref.Trace] = ref.Root
		assert.NotContains(t, string(r.Key)+string(r.Value), "order-4711")
	}
	assert.Equal(t, map[verdict.TraceID]verdict.SpanID{r1.Trace: r1.Root, r2.Trace: r2.Root}, traces)

	// A member that starts later reads the topic whole.
	m3, err := startKeys(t, c, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return m3.table.len() == 2 }, 10*time.Second, 10*time.Millisecond)
	got, _ := m3.Lookup(h, []verdict.TraceID{r2.Trace})
	assert.Equal(t, r2, got)
}

// The client is configured like the kafka receiver's: SASL against a broker that requires it.
func TestSASL(t *testing.T) {
	c := cluster(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "orphanwatch", "s3cret-pass"))
	for _, tc := range []struct {
		pass string
		ok   bool
	}{{"s3cret-pass", true}, {"wrong", false}} {
		m, err := startKeys(t, c, func(cfg *Config) {
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

// The keyed hash depends on the secret (nobody without it can hash guessed keys to compare),
// and is never 0.
func TestHashIsKeyed(t *testing.T) {
	mk := func(secret string) *keys {
		cfg := NewFactory().CreateDefaultConfig().(*Config)
		cfg.Secret = configopaque.String(secret)
		k, err := newKeys(cfg, component.NewID(metadata.Type), componenttest.NewNopTelemetrySettings())
		require.NoError(t, err)
		return k
	}
	a, b := mk("0123456789abcdef"), mk("another secret!!")
	assert.NotEqual(t, a.Hash("K"), b.Hash("K"))
	assert.Equal(t, a.Hash("K"), a.Hash("K"))
	assert.NotEqual(t, a.Hash("K"), a.Hash("L"))
	assert.NotZero(t, a.Hash(""))
}

func TestRecordRoundTrip(t *testing.T) {
	ref := verdict.RootRef{Gone: 1767225601000000000, Service: "gateway", Reason: verdict.EndReasonCancelled,
		Trace: verdict.TraceID{0xab, 1}, Root: verdict.SpanID{0xcd, 2}}
	k, v := encodeRecord(42, ref)
	h, got, ok := decodeRecord(k, v)
	require.True(t, ok)
	assert.Equal(t, uint64(42), h)
	assert.Equal(t, ref, got)
	v1 := append([]byte{1}, v[1:]...)
	for name, bad := range map[string][2][]byte{
		"short value": {k, v[:5]}, "version 1": {k, v1}, "trailing byte": {k, append(slices.Clone(v), 'x')},
		"8-byte key (version 1)": {k[:8], v}, "zero hash": {append(make([]byte, 8), k[8:]...), v},
		"zero trace": {append(slices.Clone(k[:8]), make([]byte, 16)...), v},
	} {
		_, _, ok := decodeRecord(bad[0], bad[1])
		assert.False(t, ok, name)
	}
}

func TestTableBounded(t *testing.T) {
	tb := newTable(4)
	for i := range 100 {
		tb.put(uint64(i+1), verdict.RootRef{Gone: int64(i), Trace: verdict.TraceID{1}})
	}
	assert.Equal(t, 4, tb.len())
	assert.Equal(t, int64(96), tb.evicted)
	_, ok := tb.lookup(100, nil)
	assert.True(t, ok, "newest record kept")
	_, ok = tb.lookup(1, nil)
	assert.False(t, ok, "oldest evicted")
	// One key: a record per trace, the same trace replaced, at most maxTracesPerKey traces.
	tb = newTable(100)
	for i := range 10 {
		tb.put(7, verdict.RootRef{Gone: int64(i), Trace: verdict.TraceID{byte(i % 6), 1}})
	}
	assert.Equal(t, maxTracesPerKey, tb.len())
	got, _ := tb.lookup(7, []verdict.TraceID{{1, 1}})
	assert.Equal(t, int64(7), got.Gone, "the trace's latest record")
}

func TestRetryBackoff(t *testing.T) {
	b := retryBackoff(250 * time.Millisecond)
	assert.Equal(t, []time.Duration{250 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second},
		[]time.Duration{b(0), b(1), b(2), b(3), b(5), b(6), b(60)})
	assert.Equal(t, 10*time.Second, retryBackoff(10*time.Second)(3), "a first backoff above the cap stays")
}
