package orphanmetrics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/keytier"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/lookupcount"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/prices"
)

// Key sharing across a tier in observe mode (processor README, "Key sharing across a tier"):
// the observing exporter finds the orphan_keys extension that `keys` names, hashes keys with
// its HMAC and holds a trace whose key binds nowhere yet for the extension's wait, as the
// processor does. Binding across members through a broker: test/scaleout (kfake).

// observeKeys returns an observing recorder sharing keys through ext (nil: no key sharing),
// started, with decision_wait 0: a trace is due as it arrives.
func observeKeys(t *testing.T, ext extension.Extension) (*orphanmetrics.Recorder, *orphanmetrics.Observing, *lookupcount.Counts) {
	t.Helper()
	cfg := orphanmetrics.NewDefaultSettings()
	cfg.DecisionWait = 0
	cfg.Prices = prices.Scenarios()
	id := component.MustNewID("orphan_keys")
	if ext != nil {
		cfg.Keys = &id
	}
	require.NoError(t, cfg.ValidateMode(), "keys is allowed in observe mode")
	rec, err := orphanmetrics.NewRecorder(cfg)
	require.NoError(t, err)
	obs, err := orphanmetrics.NewObserving(cfg, rec, zap.NewNop(), nil, nil)
	require.NoError(t, err)
	lk := &lookupcount.Counts{} // what the exporter's key_lookups counter gets
	if ext != nil {
		require.NoError(t, obs.ShareKeys(keytier.Host{id: ext}, id, lk.Add))
	}
	obs.Start()
	t.Cleanup(obs.Shutdown)
	return rec, obs, lk
}

// With the brokers down, a trace whose key binds nowhere is held the extension's wait before it
// is decided, then counted as it would have been without key sharing (unbound), its key looked
// up once and counted missed.
func TestObserveKeySharingHoldsForTheWait(t *testing.T) {
	b := keytier.S7JobAlone()
	refRec, refObs, _ := observeKeys(t, nil)
	refObs.Consume(b)
	want := seriesOf(t, refRec)
	require.NotEmpty(t, want, "without key sharing, B is counted as it arrives (decision_wait 0)")

	rec, obs, lk := observeKeys(t, keytier.Down(t, 300*time.Millisecond))
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
	assert.Equal(t, map[string]int64{"missed": 1}, lk.Get())
}

// Shutdown decides a trace held for a key record at once: nothing is left uncounted.
func TestObserveKeySharingShutdownDecidesHeld(t *testing.T) {
	b := keytier.S7JobAlone()
	refRec, refObs, _ := observeKeys(t, nil)
	refObs.Consume(b)
	want := seriesOf(t, refRec)

	rec, obs, lk := observeKeys(t, keytier.Down(t, time.Hour))
	obs.Consume(b)
	require.Equal(t, 1, obs.KeyTracesWaiting())
	start := time.Now()
	obs.Shutdown()
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Equal(t, want, seriesOf(t, rec))
	assert.Equal(t, map[string]int64{"missed": 1}, lk.Get())
}
