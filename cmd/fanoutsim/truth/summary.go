package truth

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteSummary prints the truth as a short human-readable report.
func (t Truth) WriteSummary(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "fanoutsim ground truth (mode=%s seed=%d tolerance=%gs", t.Mode, t.Seed, t.ToleranceSeconds)
	if t.WallSeconds > 0 {
		fmt.Fprintf(&b, " wall=%.1fs", t.WallSeconds)
	}
	b.WriteString(")\n")
	fmt.Fprintf(&b, "  requests            %d (answered %d, abandoned %d, failed %d)\n", t.Requests, t.Answered, t.Abandoned, t.Failed)
	fmt.Fprintf(&b, "  answers by status   %s\n", kv(t.AnswersByStatus))
	fmt.Fprintf(&b, "  roots by end reason %s\n", kv(t.Roots))
	runs := map[string]int{}
	for k, v := range t.Runs {
		runs[string(k)] = v
	}
	fmt.Fprintf(&b, "  runs by outcome     %s (%d attempts)\n", kvOrdered(runs, outcomeNames()), t.RunAttempts)
	fmt.Fprintf(&b, "  delivered_to_nobody result ok=%d error=%d\n", t.DeliveredToNobody[ResultOK], t.DeliveredToNobody["error"])
	fmt.Fprintf(&b, "  attempts            total=%d live=%d outlived_root=%d started_after_gone=%d unknown=%d\n",
		t.Attempts.Total, t.Attempts.Live, t.Attempts.OutlivedRoot, t.Attempts.StartedAfterGone, t.Attempts.Unknown)
	spend := func(name string, s Spend) {
		fmt.Fprintf(&b, "  %-19s model_calls=%d input_tokens=%d output_tokens=%d model_seconds=%.3f (after gone %.3f) cost_usd=%.6f attempt_seconds=%.3f\n",
			name, s.ModelCalls, s.InputTokens, s.OutputTokens, s.ModelSeconds, s.ModelSecondsAfterGone, s.CostUSD, s.AttemptSeconds)
		for _, m := range slices.Sorted(maps.Keys(s.ByModel)) {
			ms := s.ByModel[m]
			fmt.Fprintf(&b, "    %-17s model_calls=%d input_tokens=%d output_tokens=%d cost_usd=%.6f\n", m, ms.ModelCalls, ms.InputTokens, ms.OutputTokens, ms.CostUSD)
		}
	}
	spend("orphaned spend", t.Orphaned)
	spend("total spend", t.Total)
	fmt.Fprintf(&b, "  orphaned SERVER     %s\n", kv(t.OrphanedServerSpans))
	fmt.Fprintf(&b, "  unpropagated edges  %s\n", kv(t.Unpropagated))
	for _, svc := range slices.Sorted(maps.Keys(t.CancelReachByService)) {
		r := t.CancelReachByService[svc]
		fmt.Fprintf(&b, "  cancel reach        %s: %d abandoned; reach hops %s (mean %.2f); orphaned depth hops %s (mean %.2f)\n",
			svc, r.Count, kv(r.Reach), mean(r.ReachSum, r.Count), kv(r.OrphanedDepth), mean(r.OrphanedDepthSum, r.Count))
	}
	if t.Incomplete > 0 {
		fmt.Fprintf(&b, "  incomplete          %d\n", t.Incomplete)
	}
	if e := t.Export; e != nil {
		fmt.Fprintf(&b, "  spans exported      %s\n", e)
		if !e.Complete() {
			fmt.Fprintf(&b, "  WARNING             %d of %d spans did not reach the collector (%d export calls failed): its metrics cannot equal this truth\n", e.Lost(), e.Ended, e.Errors)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func outcomeNames() []string {
	out := make([]string, len(Outcomes))
	for i, o := range Outcomes {
		out[i] = string(o)
	}
	return append(out, string(UnknownRoot))
}

func kv(m map[string]int) string {
	return kvOrdered(m, slices.Sorted(maps.Keys(m)))
}

func kvOrdered(m map[string]int, keys []string) string {
	var parts []string
	for _, k := range keys {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s=%d", k, v))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func mean(sum, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(sum) / float64(n)
}
