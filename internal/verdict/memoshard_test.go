package verdict_test

import (
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// copyOf returns the spans as an independent copy k: every trace ID (of the spans and their
// links) and every idempotency-key and message hash made its own, so that copies bind nothing
// to each other.
func copyOf(spans []verdict.Span, k int) []verdict.Span {
	out := slices.Clone(spans)
	for i := range out {
		s := &out[i]
		s.TraceID[8] = byte(k + 1)
		s.Links = slices.Clone(s.Links)
		for j := range s.Links {
			s.Links[j].TraceID[8] = byte(k + 1)
		}
		if s.KeyHash != 0 {
			s.KeyHash = s.KeyHash*1_000_003 + uint64(k+1)
		}
		if s.MessageHash != 0 {
			s.MessageHash = s.MessageHash*1_000_003 + uint64(k+1)
		}
	}
	return out
}

// releaseCopies releases each copy's spans in the releases given (span indexes, the same for
// every copy) through one correlator, the copies one after another or each in a goroutine of
// its own at once, then finishes; it returns every copy's effective verdicts.
func releaseCopies(t *testing.T, copies [][]verdict.Span, releases [][]int, concurrent bool) [][]verdict.Verdict {
	c := newCorrelator(t)
	out := make([][]verdict.Verdict, len(copies))
	var mu sync.Mutex // guards out across the goroutines
	apply := func(carried []verdict.Carried) {
		mu.Lock()
		defer mu.Unlock()
		for n := range carried {
			cv := &carried[n]
			k := int(cv.Span.TraceID[8]) - 1
			i, ok := cv.Span.Extra.(int)
			if !ok {
				i = slices.IndexFunc(copies[k], func(s verdict.Span) bool {
					return s.SpanID == cv.Span.SpanID && s.Kind == cv.Span.Kind && s.TraceID == cv.Span.TraceID && s.Start == cv.Span.Start && s.End == cv.Span.End
				})
			}
			require.GreaterOrEqual(t, i, 0)
			applyPart(&out[k][i], cv)
		}
	}
	var last int64
	run := func(k int) {
		spans := copies[k]
		var now int64
		for _, rel := range releases {
			now = releaseByTrace(c, spans, rel, now, func(g []int, d verdict.Decision) {
				apply(d.Carried)
				if !d.Deferred {
					mu.Lock()
					for n, i := range g {
						if !d.Verdicts[n].Provisional {
							out[k][i] = d.Verdicts[n]
						}
					}
					mu.Unlock()
				}
			})
		}
		mu.Lock()
		last = max(last, now)
		mu.Unlock()
	}
	for k := range copies {
		out[k] = make([]verdict.Verdict, len(copies[k]))
	}
	if concurrent {
		var wg sync.WaitGroup
		for k := range copies {
			wg.Go(func() { run(k) })
		}
		wg.Wait()
	} else {
		for k := range copies {
			run(k)
		}
	}
	carried, _ := c.Finish(last)
	apply(carried)
	n, _ := c.DecisionPaths()
	incrementalTaken.Add(n)
	return out
}

// incrementalTaken counts the releases releaseCopies' correlators decided incrementally.
var incrementalTaken atomic.Uint64

// TestConcurrentReleasesEqualSerial releases eight independent copies of every scenario, each
// in three releases in end order (then in releases of two spans), through one correlator from eight goroutines at once (the
// memo shards and the shared tables locked in turn, under -race), and checks every copy's
// verdicts equal those of the copies released one after another.
func TestConcurrentReleasesEqualSerial(t *testing.T) {
	before := incrementalTaken.Load()
	defer func() {
		if !t.Failed() && incrementalTaken.Load() == before {
			t.Error("no release was decided incrementally")
		}
	}()
	dirs, err := filepath.Glob("../../testdata/scenarios/s*")
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, d := range dirs {
		t.Run(filepath.Base(d), func(t *testing.T) {
			spans := scenarioSpans(t, filepath.Join(d, "trace.json"))
			order := indexes(len(spans))
			sortByEnd(spans, order, false)
			copies := make([][]verdict.Span, 8)
			for k := range copies {
				copies[k] = copyOf(spans, k)
			}
			// In three releases, and two spans a release: most of these decided incrementally
			// (incremental.go), each shard's working memory in use by its goroutines in turn.
			for _, size := range []int{max(len(order)/3, 1), 2} {
				var releases [][]int
				for rest := order; len(rest) > 0; {
					n := min(size, len(rest))
					releases = append(releases, rest[:n])
					rest = rest[n:]
				}
				want := releaseCopies(t, copies, releases, false)
				for k := 1; k < len(copies); k++ {
					require.Equal(t, want[0], want[k], "copy %d released alone differs from copy 0", k)
				}
				got := releaseCopies(t, copies, releases, true)
				require.Equal(t, want, got, "releases of %d spans", size)
			}
		})
	}
}
