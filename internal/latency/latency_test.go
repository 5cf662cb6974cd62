package latency

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestVerdictLatencyBounded: requests beyond max are observed early, oldest first.
func TestVerdictLatencyBounded(t *testing.T) {
	var got []float64
	l := New(time.Hour, 2, func(s float64) { got = append(got, s) })
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		id := [16]byte{byte(i + 1)}
		l.RootArrived(id, t0.Add(time.Duration(i)*time.Second))
		l.Counted(id, t0.Add(time.Duration(i)*time.Second+500*time.Millisecond))
	}
	assert.Equal(t, []float64{0.5}, got, "the first request, evicted for the third")
	l.Expire(t0.Add(30 * time.Minute))
	assert.Len(t, got, 1, "within the horizon")
	l.Expire(time.Time{})
	assert.Equal(t, []float64{0.5, 0.5, 0.5}, got)
	assert.False(t, l.Tracking())
}
