package verdict

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReleaseWaitGovernsARunsEnd: a run whose loop ended after its attempts is over
// ReleaseWait (the component's decision_wait: the longest a span may wait for its release)
// plus the clock-skew tolerance after its loop ended, not ChainWait (chain_wait, a setting of
// its own since issue 28 item 4). Released before that, it is left open and closed by a sweep.
func TestReleaseWaitGovernsARunsEnd(t *testing.T) {
	for _, tc := range []struct {
		name               string
		releaseWait, chain time.Duration
		openAt, closedAt   float64 // sweeps: the run is still open at the first, closed by the second
	}{
		// the loop (the root) ended at 3 s: over at 3 + 3 + 0.25 s
		{"release wait 3s, chain wait 30s", 3 * time.Second, 30 * time.Second, 6, 6.5},
		// over at 3 + 30 + 0.25 s, whatever the chain wait
		{"release wait 30s, chain wait 3s", 30 * time.Second, 3 * time.Second, 33, 33.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ReleaseWait, cfg.ChainWait = tc.releaseWait, tc.chain
			c, err := New(cfg)
			require.NoError(t, err)
			root := sp(1, 0, "gw", KindServer, 0, 3)
			root.IsHTTP, root.HTTPStatus = true, 200
			a1 := sp(2, 1, "gw", KindClient, 0.1, 0.5)
			a1.IsHTTP, a1.HTTPStatus, a1.Status = true, 503, StatusError
			a2 := sp(3, 1, "gw", KindClient, 0.6, 1)
			a2.IsHTTP, a2.HTTPStatus, a2.Status, a2.ResendCount = true, 503, StatusError, 1
			spans := []Span{root, a1, a2}
			now := t0 + 4*sec
			c.ObserveAt(spans, now)
			d := c.Release(nil, spans, now, nil)
			require.False(t, d.Deferred)
			assert.Equal(t, OutcomeNone, d.Verdicts[2].Outcome, "the run is open at 4 s")
			carried, _ := c.Sweep(t0 + int64(tc.openAt*float64(sec)))
			assert.Empty(t, carried, "still open at %.1f s", tc.openAt)
			carried, _ = c.Sweep(t0 + int64(tc.closedAt*float64(sec)))
			require.Len(t, carried, 1, "closed by %.1f s", tc.closedAt)
			assert.Equal(t, SpanID{3}, carried[0].Span.SpanID, "the final attempt carries the outcome")
			assert.Equal(t, OutcomeRetryableFailure, carried[0].Verdict.Outcome)
		})
	}
}
