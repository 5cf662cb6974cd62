package orphanprocessor

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Each job decision_wait had is a setting of its own (issue 28 item 4); these tests show each
// setting governs its job, with decision_wait held at 30 s.

func durOf(d time.Duration) *time.Duration { return &d }

// abandonedTrace is a cancelled root (0-3 s, arriving at 3) with a child ended before it.
func abandonedTrace() ptrace.Traces {
	td := ptrace.NewTraces()
	root := addSpan(td, "gateway", 1, 1, 0, ptrace.SpanKindServer, 0, 3)
	root.Attributes().PutInt("http.response.status_code", 499)
	addSpan(td, "gateway", 1, 2, 1, ptrace.SpanKindClient, 0.1, 2.9)
	return td
}

// lateOrphan is a server span under the root's child, ended (and arriving) at 8 s, after the
// root was cancelled: an orphan one hop below the root's call.
func lateOrphan() ptrace.Traces {
	td := ptrace.NewTraces()
	addSpan(td, "researcher", 1, 3, 2, ptrace.SpanKindServer, 0.2, 8)
	return td
}

// TestAbandonedRootHoldGovernsTheHeldRoot: the cancelled root leaves abandoned_root_hold after
// it arrived, not decision_wait; so an orphan arriving after the hold no longer deepens it, one
// arriving within it does. 0 holds no root: it leaves with its trace.
func TestAbandonedRootHoldGovernsTheHeldRoot(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hold      *time.Duration
		leaves    float64 // when the root leaves (it arrived at 3)
		depthHops int64   // its orphaned depth then
	}{
		{"unset: decision_wait", nil, 33, 1},
		{"8s", durOf(8 * time.Second), 11, 1},
		{"4s", durOf(4 * time.Second), 7, 0},
		{"0: not held", durOf(0), 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := new(consumertest.TracesSink)
			cfg := testConfig(30 * time.Second)
			cfg.AbandonedRootHold = tc.hold
			r, err := NewReplay(nopSettings(), cfg, sink)
			require.NoError(t, err)
			ctx := context.Background()
			rootLeft := func() bool {
				_, ok := spanAttrs(sink.AllTraces())[pcommon.SpanID{1, 1}]
				return ok
			}
			require.NoError(t, r.ConsumeTraces(ctx, at(3).AsTime(), abandonedTrace()))
			orphanIn := false
			for _, step := range []struct {
				at   float64
				left bool
			}{{tc.leaves - 0.1, false}, {tc.leaves, true}} {
				if step.at >= 8 && !orphanIn {
					require.NoError(t, r.ConsumeTraces(ctx, at(8).AsTime(), lateOrphan()))
					orphanIn = true
				}
				require.NoError(t, r.AdvanceTo(ctx, at(step.at).AsTime()))
				assert.Equal(t, step.left, rootLeft(), "at %.1f s: the root leaves at %.1f s", step.at, tc.leaves)
			}
			require.True(t, rootLeft())
			attrs := spanAttrs(sink.AllTraces())[pcommon.SpanID{1, 1}]
			reason, _ := attrs.Get(verdict.AttrRootEndReason)
			assert.Equal(t, "cancelled", reason.Str())
			depth, _ := attrs.Get(verdict.AttrOrphanedDepth)
			assert.Equal(t, tc.depthHops, depth.Int(), "the orphan arriving at 8 s (decided at 10 s) counts only while the root is held")
			if !orphanIn {
				require.NoError(t, r.ConsumeTraces(ctx, at(8).AsTime(), lateOrphan()))
			}
			_, err = r.Drain(ctx)
			require.NoError(t, err)
			require.NoError(t, r.Shutdown(ctx))
		})
	}
}

// brokenChain is a span under a parent that never arrives (span 5), ended (and arriving) at
// 6 s, after the root was cancelled: orphaned under the root known, its chain to it
// incomplete.
func brokenChain() ptrace.Traces {
	td := ptrace.NewTraces()
	addSpan(td, "researcher", 1, 4, 5, ptrace.SpanKindServer, 0.5, 6)
	return td
}

// TestChainWaitGovernsTheIncompleteChain: a span whose chain to its root is incomplete leaves
// deferred (provisional) and its verdict is carried chain_wait after that, at the next sweep,
// not decision_wait.
func TestChainWaitGovernsTheIncompleteChain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wait    *time.Duration
		carried float64 // the span left deferred at 8 s; its verdict is carried by then
	}{
		{"unset: decision_wait", nil, 39},
		{"4s", durOf(4 * time.Second), 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := new(consumertest.TracesSink)
			cfg := testConfig(30 * time.Second)
			cfg.ChainWait = tc.wait
			r, err := NewReplay(nopSettings(), cfg, sink)
			require.NoError(t, err)
			ctx := context.Background()
			require.NoError(t, r.ConsumeTraces(ctx, at(3).AsTime(), abandonedTrace()))
			require.NoError(t, r.ConsumeTraces(ctx, at(6).AsTime(), brokenChain()))
			require.NoError(t, r.AdvanceTo(ctx, at(8).AsTime()))
			attrs, ok := spanAttrs(sink.AllTraces())[pcommon.SpanID{4, 1}]
			require.True(t, ok, "left 2 s after it arrived, its root known")
			deferred, _ := attrs.Get(verdict.AttrDeferred)
			require.True(t, deferred.Bool(), "provisional: its chain is incomplete")
			key := pcommon.SpanID{4, 1}.String()
			require.NoError(t, r.AdvanceTo(ctx, at(tc.carried-1.5).AsTime()))
			assert.Empty(t, carriedEvents(sink.AllTraces())[key], "not carried before the chain wait passed")
			require.NoError(t, r.AdvanceTo(ctx, at(tc.carried).AsTime()))
			ev := carriedEvents(sink.AllTraces())[key]
			require.Len(t, ev, 1, "carried once the chain wait passed")
			assert.Equal(t, "orphaned", str(ev[0], verdict.AttrLiveness))
			_, err = r.Drain(ctx)
			require.NoError(t, err)
			require.NoError(t, r.Shutdown(ctx))
		})
	}
}

// TestDecideEachBatchGovernsTheMode: decide_each_batch decides each batch whole as it arrives
// (the spans leave in ConsumeTraces with their final verdicts, the cancelled root too),
// whatever decision_wait is; without it the same batch is held. decision_wait: 0 still means
// it, and says so once, as deprecated.
func TestDecideEachBatchGovernsTheMode(t *testing.T) {
	for _, tc := range []struct {
		name       string
		wait       time.Duration
		eachBatch  bool
		atOnce     bool
		deprecated bool
	}{
		{"decide_each_batch", 30 * time.Second, true, true, false},
		{"held", 30 * time.Second, false, false, false},
		{"decide_each_batch, decision_wait 0", 0, true, true, false},
		{"decision_wait 0, deprecated", 0, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			set := nopSettings()
			set.Logger = newBufferLogger(&logs)
			cfg := testConfig(tc.wait)
			cfg.DecideEachBatch = tc.eachBatch
			require.NoError(t, cfg.Validate())
			p, _ := newTestProcessorWith(t, set, cfg, nil)
			require.NoError(t, p.ConsumeTraces(context.Background(), abandonedTrace()))
			assert.Equal(t, btoi(tc.deprecated), bytes.Count(logs.Bytes(), []byte("decision_wait: 0 is deprecated")), logs.String())
			attrs := spanAttrs(sinkOf(p).AllTraces())
			if !tc.atOnce {
				assert.Empty(t, attrs, "held")
				return
			}
			require.Len(t, attrs, 2, "both spans left in ConsumeTraces")
			reason, _ := attrs[pcommon.SpanID{1, 1}].Get(verdict.AttrRootEndReason)
			assert.Equal(t, "cancelled", reason.Str(), "the abandoned root is not held")
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
