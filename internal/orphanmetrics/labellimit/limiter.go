// Package labellimit bounds the number of distinct values a Prometheus label
// can take, so that span data (service names, span names, model names) can
// never blow up the cardinality of the exported series.
//
// For each label name the first N distinct values seen are admitted for the
// life of the Limiter; every later new value is replaced by [Overflow]. A value
// once admitted stays admitted, so a series never changes its label value
// half-way through its life.
package labellimit // import "github.com/orphanwatch/orphanwatch/internal/orphanmetrics/labellimit"

import (
	"errors"
	"fmt"
	"sync"
)

// Overflow is the label value that replaces every value beyond a label's limit.
const Overflow = "other"

// Limiter admits at most a fixed number of distinct values per label name.
// It is safe for concurrent use.
type Limiter struct {
	defaultLimit int
	limits       map[string]int
	onOverflow   func(label string)

	mu   sync.RWMutex
	seen map[string]map[string]struct{}
}

// New returns a Limiter that admits defaultLimit distinct values per label
// name, or perLabel[name] for the names listed there. onOverflow, if not nil,
// is called (outside any lock) once for every value occurrence that is
// replaced by [Overflow]. Limits must be positive.
func New(defaultLimit int, perLabel map[string]int, onOverflow func(label string)) (*Limiter, error) {
	if defaultLimit <= 0 {
		return nil, fmt.Errorf("default limit must be positive, got %d", defaultLimit)
	}
	limits := make(map[string]int, len(perLabel))
	var errs error
	for name, n := range perLabel {
		if n <= 0 {
			errs = errors.Join(errs, fmt.Errorf("limit for label %q must be positive, got %d", name, n))
			continue
		}
		limits[name] = n
	}
	if errs != nil {
		return nil, errs
	}
	return &Limiter{
		defaultLimit: defaultLimit,
		limits:       limits,
		onOverflow:   onOverflow,
		seen:         make(map[string]map[string]struct{}),
	}, nil
}

// Limit returns the number of distinct values admitted for label.
func (l *Limiter) Limit(label string) int {
	if n, ok := l.limits[label]; ok {
		return n
	}
	return l.defaultLimit
}

// Value returns value if it is (or can still be) admitted for label, and
// [Overflow] otherwise, in which case the overflow callback is called.
func (l *Limiter) Value(label, value string) string {
	v, over := l.Admit(label, value)
	if over && l.onOverflow != nil {
		l.onOverflow(label)
	}
	return v
}

// Admit is Value without the overflow callback: it returns the value to export and whether
// it is [Overflow] because the label reached its limit.
func (l *Limiter) Admit(label, value string) (string, bool) {
	l.mu.RLock()
	_, ok := l.seen[label][value]
	l.mu.RUnlock()
	if ok {
		return value, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	values, ok := l.seen[label]
	if !ok {
		values = make(map[string]struct{})
		l.seen[label] = values
	}
	if _, ok := values[value]; ok {
		return value, false
	}
	if len(values) < l.Limit(label) {
		values[value] = struct{}{}
		return value, false
	}
	return Overflow, true
}

// Len returns the number of distinct values admitted so far for label.
func (l *Limiter) Len(label string) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.seen[label])
}
