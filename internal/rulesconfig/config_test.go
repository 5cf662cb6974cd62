package rulesconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func dur(d time.Duration) *time.Duration { return &d }

// TestWaitsDefaultToDecisionWait: chain_wait and abandoned_root_hold, when not set, are
// decision_wait (what they were before they had names of their own), whatever decision_wait is;
// set, they are what is written, 0 included.
func TestWaitsDefaultToDecisionWait(t *testing.T) {
	c := Default()
	assert.Nil(t, c.ChainWait)
	assert.Nil(t, c.AbandonedRootHold)
	c.DecisionWait = 7 * time.Second
	assert.Equal(t, 7*time.Second, c.EffectiveChainWait())
	assert.Equal(t, 7*time.Second, c.EffectiveAbandonedRootHold())
	assert.Equal(t, 7*time.Second, c.LongestWait())
	assert.Equal(t, 2*time.Second, c.AfterRoot())
	vc := c.VerdictConfig(DefaultLimits())
	assert.Equal(t, 7*time.Second, vc.ChainWait)
	assert.Equal(t, 7*time.Second, vc.ReleaseWait)

	c.ChainWait, c.AbandonedRootHold = dur(3*time.Second), dur(0)
	assert.Equal(t, 3*time.Second, c.EffectiveChainWait())
	assert.Equal(t, time.Duration(0), c.EffectiveAbandonedRootHold())
	vc = c.VerdictConfig(DefaultLimits())
	assert.Equal(t, 3*time.Second, vc.ChainWait, "chain_wait")
	assert.Equal(t, 7*time.Second, vc.ReleaseWait, "decision_wait, not chain_wait")

	c.AbandonedRootHold = dur(time.Minute)
	assert.Equal(t, time.Minute, c.LongestWait(), "the longest of the three")
	c.DecisionWait = time.Second
	assert.Equal(t, time.Second, c.AfterRoot(), "decision_wait_after_root at most decision_wait")
}

// TestWaitsValidated: a negative chain_wait or abandoned_root_hold is refused, each named once;
// unset, they are not checked (a negative decision_wait is named once, as decision_wait).
func TestWaitsValidated(t *testing.T) {
	c := Default()
	require.NoError(t, c.Validate(DefaultLimits()))
	c.ChainWait, c.AbandonedRootHold = dur(-time.Second), dur(-2*time.Second)
	err := c.Validate(DefaultLimits())
	require.Error(t, err)
	for _, w := range []string{"chain_wait: must not be negative", "abandoned_root_hold: must not be negative", "-1s", "-2s"} {
		assert.Equal(t, 1, strings.Count(err.Error(), w), "%q in %q", w, err.Error())
	}
	assert.NotContains(t, "\n"+err.Error(), "\ndecision_wait:", "decision_wait is valid")

	c = Default()
	c.DecisionWait = -time.Second
	err = c.Validate(DefaultLimits())
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), "decision_wait:"), err.Error())
	assert.NotContains(t, err.Error(), "chain_wait")
	assert.NotContains(t, err.Error(), "abandoned_root_hold")
}
