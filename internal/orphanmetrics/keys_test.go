package orphanmetrics_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/keystest"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// Key sharing across a tier in observe mode (processor README, "Key sharing across a tier"):
// the observing exporter finds the orphan_keys extension that `keys` names, hashes keys with
// its HMAC and holds a trace whose key binds nowhere yet for the extension's wait, as the
// processor does. Binding across members through a broker: test/scaleout (kfake).

// keysHost is a component.Host with the given extensions.
type keysHost map[component.ID]component.Component

func (h keysHost) GetExtensions() map[component.ID]component.Component { return h }

// downKeys starts an orphan_keys extension whose brokers are unreachable, with the given wait.
func downKeys(t *testing.T, wait time.Duration) extension.Extension {
	t.Helper()
	ext := keystest.New(t, map[string]any{
		"brokers": []any{"127.0.0.1:1"}, "wait": wait.String(), "dial_timeout": "100ms",
		"topic": map[string]any{"check_timeout": "200ms"},
	})
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()), "brokers down: start-up goes on")
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return ext
}

// s7JobAlone is S7's trace B alone (the queue consumer whose model calls carry key K); the
// request's trace A never comes.
func s7JobAlone() ptrace.Traces {
	td, _ := scenarios.S7()
	var idA pcommon.TraceID
	td.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
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
	return td
}

// lookupCounts counts key look-ups by outcome (what the exporter's key_lookups counter gets).
type lookupCounts struct {
	mu sync.Mutex
	m  map[string]int64
}

func (c *lookupCounts) add(_ context.Context, outcome string, n int64) {
	c.mu.Lock()
	c.m[outcome] += n
	c.mu.Unlock()
}

func (c *lookupCounts) get() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int64{}
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

// observeKeys returns an observing recorder sharing keys through ext (nil: no key sharing),
// started, with decision_wait 0: a trace is due as it arrives.
func observeKeys(t *testing.T, ext extension.Extension) (*orphanmetrics.Recorder, *orphanmetrics.Observing, *lookupCounts) {
	t.Helper()
	cfg := orphanmetrics.NewDefaultSettings()
	cfg.DecisionWait = 0
	cfg.Prices = scenarioPrices
	id := component.MustNewID("orphan_keys")
	if ext != nil {
		cfg.Keys = &id
	}
	require.NoError(t, cfg.ValidateMode(), "keys is allowed in observe mode")
	rec, err := orphanmetrics.NewRecorder(cfg)
	require.NoError(t, err)
	obs, err := orphanmetrics.NewObserving(cfg, rec, zap.NewNop(), nil, nil)
	require.NoError(t, err)
	lk := &lookupCounts{m: map[string]int64{}}
	if ext != nil {
		require.NoError(t, obs.ShareKeys(keysHost{id: ext}, id, lk.add))
	}
	obs.Start()
	t.Cleanup(obs.Shutdown)
	return rec, obs, lk
}

// With the brokers down, a trace whose key binds nowhere is held the extension's wait before it
// is decided, then counted as it would have been without key sharing (unbound), its key looked
// up once and counted missed.
func TestObserveKeySharingHoldsForTheWait(t *testing.T) {
	b := s7JobAlone()
	refRec, refObs, _ := observeKeys(t, nil)
	refObs.Consume(b)
	want := seriesOf(t, refRec)
	require.NotEmpty(t, want, "without key sharing, B is counted as it arrives (decision_wait 0)")

	rec, obs, lk := observeKeys(t, downKeys(t, 300*time.Millisecond))
	start := time.Now()
	obs.Consume(b)
	assert.Empty(t, seriesOf(t, rec), "held by the gate for the extension's wait")
	assert.Equal(t, 1, obs.KeyTracesWaiting())
	assert.True(t, obs.Observer().Owed(), "a trace held for a key record is owed")
	require.Eventually(t, func() bool { return len(seriesOf(t, rec)) > 0 }, 5*time.Second, 10*time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
	require.Eventually(t, func() bool { return !obs.Observer().Owed() }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, want, seriesOf(t, rec), "decided unbound, as without key sharing")
	assert.Equal(t, 0, obs.KeyTracesWaiting())
	assert.Equal(t, map[string]int64{"missed": 1}, lk.get())
}

// Shutdown decides a trace held for a key record at once: nothing is left uncounted.
func TestObserveKeySharingShutdownDecidesHeld(t *testing.T) {
	b := s7JobAlone()
	refRec, refObs, _ := observeKeys(t, nil)
	refObs.Consume(b)
	want := seriesOf(t, refRec)

	rec, obs, lk := observeKeys(t, downKeys(t, time.Hour))
	obs.Consume(b)
	require.Equal(t, 1, obs.KeyTracesWaiting())
	start := time.Now()
	obs.Shutdown()
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Equal(t, want, seriesOf(t, rec))
	assert.Equal(t, map[string]int64{"missed": 1}, lk.get())
}
