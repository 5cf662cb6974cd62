package labellimit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"pgregory.net/rapid"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestNewRejectsNonPositiveLimits(t *testing.T) {
	_, err := New(0, nil, nil)
	require.ErrorContains(t, err, "default limit must be positive, got 0")
	_, err = New(5, map[string]int{"model": -1, "operation": 0}, nil)
	require.ErrorContains(t, err, `limit for label "model" must be positive, got -1`)
	require.ErrorContains(t, err, `limit for label "operation" must be positive, got 0`)
}

func TestValue(t *testing.T) {
	overflows := map[string]int{}
	l, err := New(2, map[string]int{"operation": 1}, func(label string) { overflows[label]++ })
	require.NoError(t, err)

	assert.Equal(t, "a", l.Value("service_name", "a"))
	assert.Equal(t, "b", l.Value("service_name", "b"))
	assert.Equal(t, Overflow, l.Value("service_name", "c"))
	assert.Equal(t, "a", l.Value("service_name", "a"), "admitted values stay admitted")
	assert.Equal(t, Overflow, l.Value("service_name", "c"), "an overflowed value never gets in later")
	assert.Equal(t, Overflow, l.Value("service_name", "d"))

	// Labels are independent, and overrides apply per label.
	assert.Equal(t, "c", l.Value("model", "c"))
	assert.Equal(t, "x", l.Value("operation", "x"))
	assert.Equal(t, Overflow, l.Value("operation", "y"))

	assert.Equal(t, map[string]int{"service_name": 3, "operation": 1}, overflows)
	assert.Equal(t, 2, l.Len("service_name"))
	assert.Equal(t, 1, l.Len("operation"))
	assert.Equal(t, 0, l.Len("callee_service"))
	assert.Equal(t, 1, l.Limit("operation"))
	assert.Equal(t, 2, l.Limit("model"))
}

func TestNilCallback(t *testing.T) {
	l, err := New(1, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "a", l.Value("x", "a"))
	assert.Equal(t, Overflow, l.Value("x", "b"))
}

// The limiter admits exactly the first N distinct values of each label and
// calls back once per replaced occurrence, for any sequence.
func TestValueProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(1, 5).Draw(t, "limit")
		labels := []string{"a", "b"}
		type call struct{ label, value string }
		calls := rapid.SliceOf(rapid.Custom(func(t *rapid.T) call {
			return call{
				label: rapid.SampledFrom(labels).Draw(t, "label"),
				value: fmt.Sprint(rapid.IntRange(0, 9).Draw(t, "value")),
			}
		})).Draw(t, "calls")

		overflows := map[string]int{}
		l, err := New(limit, nil, func(label string) { overflows[label]++ })
		if err != nil {
			t.Fatal(err)
		}
		admitted := map[string][]string{} // model: first `limit` distinct values in order
		wantOverflows := map[string]int{}
		for _, c := range calls {
			want := c.value
			found := false
			for _, v := range admitted[c.label] {
				found = found || v == c.value
			}
			switch {
			case found:
			case len(admitted[c.label]) < limit:
				admitted[c.label] = append(admitted[c.label], c.value)
			default:
				want = Overflow
				wantOverflows[c.label]++
			}
			if got := l.Value(c.label, c.value); got != want {
				t.Fatalf("Value(%q, %q) = %q, want %q", c.label, c.value, got, want)
			}
		}
		for _, label := range labels {
			if overflows[label] != wantOverflows[label] {
				t.Fatalf("overflows[%q] = %d, want %d", label, overflows[label], wantOverflows[label])
			}
			if l.Len(label) != len(admitted[label]) {
				t.Fatalf("Len(%q) = %d, want %d", label, l.Len(label), len(admitted[label]))
			}
		}
	})
}

func TestConcurrent(t *testing.T) {
	const limit, workers, values = 10, 8, 100
	var overflows atomic.Int64
	l, err := New(limit, nil, func(string) { overflows.Add(1) })
	require.NoError(t, err)

	var wg sync.WaitGroup
	var admittedOccurrences atomic.Int64
	for w := range workers {
		wg.Go(func() {
			for i := range values {
				// Every worker offers the same 100 values, in different orders.
				v := fmt.Sprint((i*7 + w*13) % values)
				if l.Value("op", v) != Overflow {
					admittedOccurrences.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, limit, l.Len("op"))
	assert.Equal(t, int64(workers*values), admittedOccurrences.Load()+overflows.Load())
	// A value is admitted on its first offer or never, so each of the 10
	// admitted values got through for all 8 workers, and nothing else did.
	assert.Equal(t, int64(limit*workers), admittedOccurrences.Load())
}
