// Package badinput logs bad input sampled: the components count malformed spans and attribute
// values by reason in their telemetry, and, so that an operator reading the logs sees them
// too, write at most one log line per reason per interval, with the count since the previous
// line of that reason. A line names the reason and the count, never anything of the spans
// (no attribute values, no idempotency keys, no IDs).
package badinput // import "github.com/orphanwatch/orphanwatch/internal/badinput"

import (
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// DefaultInterval is how often at most one reason is logged.
const DefaultInterval = 10 * time.Second

// Log writes the sampled lines of one counter of a component. It is safe for concurrent use;
// Add takes no lock once a reason has been seen.
type Log struct {
	logger   *zap.Logger
	msg      string
	counter  string
	unit     string
	interval time.Duration
	now      func() time.Time

	reasons sync.Map // reason -> *reasonState
}

type reasonState struct {
	pending atomic.Int64
	last    atomic.Int64 // unix ns of the last line, 0: none yet
}

// New returns a Log writing msg at Warn level to logger, each line with the fields reason,
// counter (the telemetry counter that counts the same), unit (its count, since the previous
// line of the reason) and interval. now is the clock (nil: time.Now); interval <= 0 means
// DefaultInterval. A nil logger logs nothing.
func New(logger *zap.Logger, msg, counter, unit string, interval time.Duration, now func() time.Time) *Log {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if now == nil {
		now = time.Now
	}
	return &Log{logger: logger, msg: msg, counter: counter, unit: unit, interval: interval, now: now}
}

// Add notes n more occurrences of reason; when the reason's last line is an interval old (or
// there was none), it writes a line with every occurrence since.
func (l *Log) Add(reason string, n int64) {
	if l == nil || l.logger == nil || n <= 0 {
		return
	}
	st, ok := l.reasons.Load(reason)
	if !ok {
		st, _ = l.reasons.LoadOrStore(reason, &reasonState{})
	}
	rs := st.(*reasonState)
	rs.pending.Add(n)
	now := l.now().UnixNano()
	last := rs.last.Load()
	if last != 0 && now-last < int64(l.interval) {
		return
	}
	if !rs.last.CompareAndSwap(last, now) {
		return // another goroutine writes this interval's line
	}
	count := rs.pending.Swap(0)
	if count == 0 {
		return
	}
	l.logger.Warn(l.msg,
		zap.String("reason", reason),
		zap.Int64(l.unit, count),
		zap.String("counter", l.counter),
		zap.Duration("interval", l.interval))
}
