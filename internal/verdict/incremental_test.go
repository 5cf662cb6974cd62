package verdict_test

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/featuregate"
	"pgregory.net/rapid"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// The incremental path (incremental.go) against the decision of the whole trace at every
// release: two correlators, one deciding incrementally and one deciding every release of a
// trace whole, are given the same releases of a scenario's spans (in the order they end, cut
// anywhere, roots released first or in their place) and the same sweeps (now and then past
// ChainWait, past run_timeout, or time passing without one); every Decision (verdicts, deferral, carried verdicts in order, stats, reach) and
// every sweep's carried verdicts must be equal.

// lockstep runs the releases through both correlators and compares, returning how many
// releases the incremental one decided incrementally.
func lockstep(t require.TestingT, name string, spans []verdict.Span, releases [][]int, sweepAfter []int64) uint64 {
	return lockstepWith(t, name, spans, releases, sweepAfter, verdict.Config{})
}

// lockstepWith is lockstep with the limits of limits (MaxContextSpans, MaxPendingSpans,
// MaxOpenRuns) where they are set, for both correlators: memos forgotten and given up, their
// indexes recycled, open runs evicted.
func lockstepWith(t require.TestingT, name string, spans []verdict.Span, releases [][]int, sweepAfter []int64, limits verdict.Config) uint64 {
	inc, whole := newCorrelator(t), newCorrelator(t)
	if limits.MaxContextSpans > 0 {
		inc, whole = newCorrelatorLimited(t, limits), newCorrelatorLimited(t, limits)
	}
	verdict.SetIncremental(whole, false)
	var now int64
	for r, rel := range releases {
		var in []verdict.Span
		in, now = releaseSpans(spans, rel, now)
		inc.Observe(in)
		whole.Observe(in)
		for _, g := range byTrace(spans, rel) {
			part := pick(spans, g)
			extra := func(k int) any { return g[k] }
			di := inc.Release(nil, part, now, extra)
			dw := whole.Release(nil, part, now, extra)
			markOnly(&di)
			markOnly(&dw)
			require.Equal(t, dw, di, "%s: release %d of %d, trace %x", name, r, len(releases), spans[g[0]].TraceID)
		}
		if sweepAfter[r] < 0 { // time passes, no sweep: the next release sees it first
			now -= sweepAfter[r]
		}
		if sweepAfter[r] > 0 {
			now += sweepAfter[r]
			ci, si := inc.Sweep(now)
			cw, sw := whole.Sweep(now)
			sortCarried(ci)
			sortCarried(cw)
			require.Equal(t, cw, ci, "%s: sweep after release %d", name, r)
			require.Equal(t, sw, si, "%s: sweep stats after release %d", name, r)
		}
	}
	ci, si := inc.Finish(now)
	cw, sw := whole.Finish(now)
	sortCarried(ci)
	sortCarried(cw)
	require.Equal(t, cw, ci, "%s: finish", name)
	require.Equal(t, sw, si, "%s: finish stats", name)
	n, _ := inc.DecisionPaths()
	wn, _ := whole.DecisionPaths()
	require.Zero(t, wn, "the whole correlator decided incrementally")
	return n
}

// newCorrelatorLimited is newCorrelator with the memo and open-run limits of limits.
func newCorrelatorLimited(t require.TestingT, limits verdict.Config) *verdict.Correlator {
	cfg := newCorrelator(t).Config()
	cfg.MaxContextSpans, cfg.MaxPendingSpans, cfg.MaxOpenRuns = limits.MaxContextSpans, limits.MaxPendingSpans, limits.MaxOpenRuns
	c, err := verdict.New(cfg)
	require.NoError(t, err)
	return c
}

// markOnly reduces the provisional verdicts of a decision to their mark: the rest is not a
// verdict (Verdict.Provisional).
func markOnly(d *verdict.Decision) {
	for k := range d.Verdicts {
		if d.Verdicts[k].Provisional {
			d.Verdicts[k] = verdict.Verdict{Provisional: true}
		}
	}
}

// sortCarried orders what a sweep carried: Sweep and Finish walk maps, in no set order.
func sortCarried(cs []verdict.Carried) {
	slices.SortStableFunc(cs, func(a, b verdict.Carried) int {
		return cmp.Or(
			cmp.Compare(string(a.Span.TraceID[:]), string(b.Span.TraceID[:])),
			cmp.Compare(string(a.Span.SpanID[:]), string(b.Span.SpanID[:])),
			cmp.Compare(a.Span.Kind, b.Span.Kind),
			cmp.Compare(a.Part, b.Part),
			cmp.Compare(a.Span.Start, b.Span.Start))
	})
}

func TestIncrementalEqualsWhole(t *testing.T) {
	dirs, files := allScenarioSpans(t)
	// Every scenario, each span its own release (roots first): the most releases a trace can
	// have; with the index's maps made from the third span on, and without them.
	var taken uint64
	for _, linear := range []int{2, 1 << 20} {
		old := verdict.SetLinearIndex(linear)
		taken += lockstepEach(t, dirs, files)
		verdict.SetLinearIndex(old)
	}
	require.Positive(t, taken, "no release took the incremental path")

	rapid.Check(t, func(rt *rapid.T) {
		fi := rapid.IntRange(0, len(files)-1).Draw(rt, "scenario")
		spans := files[fi]
		order := rapid.Permutation(indexes(len(spans))).Draw(rt, "ties")
		rootsFirst := rapid.Bool().Draw(rt, "rootsFirst")
		sortByEnd(spans, order, rootsFirst)
		releases := drawReleases(rt, order)
		// Between releases: nothing, or time passes (a moment, past ChainWait, past
		// run_timeout) with a sweep after it or without (the next release sees it first).
		sweeps := make([]int64, len(releases))
		for r := range sweeps {
			sweeps[r] = []int64{0, 0, int64(time.Second), int64(31 * time.Second), int64(6 * time.Minute),
				-int64(31 * time.Second), -int64(6 * time.Minute)}[rapid.IntRange(0, 6).Draw(rt, fmt.Sprintf("sweep%d", r))]
		}
		old := verdict.SetLinearIndex(rapid.SampledFrom([]int{2, 64}).Draw(rt, "linearIndex"))
		defer verdict.SetLinearIndex(old)
		// Now and then tight limits: memos forgotten (their indexes recycled into the next
		// memo's), traces given up, open runs evicted (the whole decision's fallback).
		// Each limit tight or as shipped, on its own: tight open runs make most decisions whole
		// (wholeOpenFull), and would hide the memo bounds' effect on the incremental path.
		def := verdict.DefaultConfig()
		limits := verdict.Config{MaxContextSpans: def.MaxContextSpans, MaxPendingSpans: def.MaxPendingSpans, MaxOpenRuns: def.MaxOpenRuns}
		if rapid.Bool().Draw(rt, "tightContext") {
			limits.MaxContextSpans = rapid.IntRange(1, 30).Draw(rt, "maxContextSpans")
		}
		if rapid.Bool().Draw(rt, "tightPending") {
			limits.MaxPendingSpans = rapid.IntRange(1, 30).Draw(rt, "maxPendingSpans")
		}
		if rapid.IntRange(0, 3).Draw(rt, "tightOpen") == 0 {
			limits.MaxOpenRuns = rapid.IntRange(1, 4).Draw(rt, "maxOpenRuns")
		}
		lockstepWith(rt, filepath.Base(dirs[fi]), spans, releases, sweeps, limits)
	})
}

// lockstepEach runs lockstep over every scenario, each span its own release, roots first.
func lockstepEach(t *testing.T, dirs []string, files [][]verdict.Span) uint64 {
	var taken uint64
	for fi, spans := range files {
		order := indexes(len(spans))
		sortByEnd(spans, order, true)
		releases := make([][]int, len(order))
		for k, i := range order {
			releases[k] = []int{i}
		}
		taken += lockstep(t, filepath.Base(dirs[fi]), spans, releases, make([]int64, len(releases)))
	}
	return taken
}

// TestIncrementalPathTaken: a trace of a root, a call and its server span, released one span
// at a time root first, is decided whole at its first two releases (the second builds the
// index) and incrementally at the third; a repeated span ID falls back to the whole decision,
// counted.
func TestIncrementalPathTaken(t *testing.T) {
	c := newCorrelator(t)
	tr := verdict.TraceID{1}
	sec := int64(time.Second)
	root := verdict.Span{TraceID: tr, SpanID: verdict.SpanID{1}, Service: "gw", Name: "POST /ask", Kind: verdict.KindServer, Start: 10 * sec, End: 12 * sec, HTTPStatus: 499, IsHTTP: true, GRPCStatus: -1, ResendCount: -1, InputTokens: -1, OutputTokens: -1}
	call := root
	call.SpanID, call.ParentID, call.Kind, call.Name, call.Start, call.End, call.HTTPStatus = verdict.SpanID{2}, root.SpanID, verdict.KindClient, "POST", 10*sec, 15*sec, 200
	srv := call
	srv.SpanID, srv.ParentID, srv.Kind, srv.Service = verdict.SpanID{3}, call.SpanID, verdict.KindServer, "agent"
	now := 20 * sec
	for _, s := range []verdict.Span{root, call, srv} {
		c.Observe([]verdict.Span{s})
		d := c.Release(nil, []verdict.Span{s}, now, nil)
		require.False(t, d.Deferred)
		now += 3 * sec
	}
	n, whole := c.DecisionPaths()
	require.Equal(t, uint64(1), n, "whole: %v", whole) // the second release builds the index

	dup := srv
	dup.Start++ // the same span ID and kind, another span: which is kept depends on both
	c.Observe([]verdict.Span{dup})
	c.Release(nil, []verdict.Span{dup}, now, nil)
	n2, whole := c.DecisionPaths()
	require.Equal(t, n, n2)
	require.Equal(t, uint64(1), whole[1], "a repeated span ID is decided whole: %v", whole)
}

// TestIncrementalRunsAcrossReleases: runs the incremental path must decide again though no
// span of theirs is new — a run left open that the release's time closes, and a keyed run whose
// key another trace's open run carries — are decided as the whole decision decides them.
func TestIncrementalRunsAcrossReleases(t *testing.T) {
	sec := int64(time.Second)
	base := int64(1767225600) * sec
	span := func(tr, id, parent byte, svc string, kind verdict.Kind, start, end int64) verdict.Span {
		s := verdict.Span{TraceID: verdict.TraceID{tr}, SpanID: verdict.SpanID{tr, id}, Service: svc, Name: "GET /x", Kind: kind,
			Start: base + start, End: base + end, GRPCStatus: -1, ResendCount: -1, InputTokens: -1, OutputTokens: -1, IsHTTP: true, HTTPStatus: 200, Target: verdict.NewTargetHash().Add("x:80")}
		if parent != 0 {
			s.ParentID = verdict.SpanID{tr, parent}
		}
		return s
	}
	// Trace 1: a root, and an attempt that failed retryably under a loop span (3) that never
	// comes: its run stays open, the attempt provisional, then judged when ChainWait passed
	// (a sweep). Trace 1's next span comes after run_timeout, before any sweep.
	root1 := span(1, 1, 0, "gw", verdict.KindServer, 0, 10*sec)
	a1 := span(1, 2, 3, "gw", verdict.KindClient, sec, 2*sec)
	a1.HTTPStatus = 503
	late1 := span(1, 4, 1, "gw", verdict.KindInternal, 2*sec, 3*sec)
	other := span(7, 1, 0, "gw", verdict.KindServer, 0, sec)
	spans := []verdict.Span{root1, a1, other, late1}
	taken := lockstep(t, "open run closed by time", spans, [][]int{{0}, {1}, {2}, {3}}, []int64{0, int64(31 * time.Second), -int64(6 * time.Minute), 0})
	require.Positive(t, taken)

	// Trace 2's keyed attempt succeeds (its run is over); trace 3 sends the same key and its
	// attempt fails retryably (its run is open); then trace 2's next span is released.
	root2 := span(2, 1, 0, "gw", verdict.KindServer, 0, 10*sec)
	k2 := span(2, 2, 1, "gw", verdict.KindClient, sec, 2*sec)
	k2.KeyHash = 0xabc1
	root3 := span(3, 1, 0, "gw", verdict.KindServer, 0, 10*sec)
	k3 := span(3, 2, 9, "gw", verdict.KindClient, 3*sec, 4*sec)
	k3.KeyHash, k3.HTTPStatus = 0xabc1, 503
	late2 := span(2, 4, 1, "gw", verdict.KindInternal, 2*sec, 3*sec)
	spans = []verdict.Span{root2, k2, root3, k3, late2}
	taken = lockstep(t, "keyed run of another trace", spans, [][]int{{0}, {1}, {2}, {3}, {4}}, make([]int64, 5))
	require.Positive(t, taken)
}

// TestIncrementalDecisionsGate: with the feature gate orphanwatch.incrementalDecisions off when
// a correlator is made, a trace released one span at a time is decided whole at every release
// (counted as forced), with the decisions the incremental path gives with the gate on.
func TestIncrementalDecisionsGate(t *testing.T) {
	reg := featuregate.GlobalRegistry()
	require.True(t, verdictGateEnabled(t), "the gate is on by default")
	decideAll := func() (ds []verdict.Decision, n, forced uint64) {
		c := newCorrelator(t)
		sec := int64(time.Second)
		root := verdict.Span{TraceID: verdict.TraceID{1}, SpanID: verdict.SpanID{1}, Service: "gw", Name: "POST /ask", Kind: verdict.KindServer, Start: 10 * sec, End: 12 * sec, HTTPStatus: 499, IsHTTP: true, GRPCStatus: -1, ResendCount: -1, InputTokens: -1, OutputTokens: -1}
		call := root
		call.SpanID, call.ParentID, call.Kind, call.Name, call.Start, call.End, call.HTTPStatus = verdict.SpanID{2}, root.SpanID, verdict.KindClient, "POST", 10*sec, 15*sec, 200
		srv := call
		srv.SpanID, srv.ParentID, srv.Kind, srv.Service = verdict.SpanID{3}, call.SpanID, verdict.KindServer, "agent"
		model := srv
		model.SpanID, model.ParentID, model.Kind, model.Name, model.Start, model.End = verdict.SpanID{4}, srv.SpanID, verdict.KindClient, "chat gpt-4o", 13*sec, 14*sec
		now := 20 * sec
		for _, s := range []verdict.Span{root, call, srv, model} {
			c.Observe([]verdict.Span{s})
			ds = append(ds, c.Release(nil, []verdict.Span{s}, now, nil))
			now += 3 * sec
		}
		n, whole := c.DecisionPaths()
		return ds, n, whole[verdict.WholeForced]
	}
	on, nOn, forcedOn := decideAll()
	require.Zero(t, forcedOn)
	require.Equal(t, uint64(2), nOn, "gate on: the third and fourth releases are incremental")

	require.NoError(t, reg.Set(verdict.IncrementalDecisionsGateID, false))
	t.Cleanup(func() { require.NoError(t, reg.Set(verdict.IncrementalDecisionsGateID, true)) })
	off, nOff, forced := decideAll()
	require.Zero(t, nOff, "gate off: no release is incremental")
	require.Equal(t, uint64(2), forced, "gate off: the third and fourth releases are decided whole, forced")
	require.Equal(t, on, off, "the same decisions either way")
}

// verdictGateEnabled reads the incremental path's gate from the global registry.
func verdictGateEnabled(t *testing.T) bool {
	found, enabled := false, false
	featuregate.GlobalRegistry().VisitAll(func(g *featuregate.Gate) {
		if g.ID() == verdict.IncrementalDecisionsGateID {
			found, enabled = true, g.IsEnabled()
		}
	})
	require.True(t, found, "gate %s not registered", verdict.IncrementalDecisionsGateID)
	return enabled
}
