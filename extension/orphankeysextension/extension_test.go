package orphankeysextension

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"

	"github.com/orphanwatch/orphanwatch/extension/orphankeysextension/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

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
