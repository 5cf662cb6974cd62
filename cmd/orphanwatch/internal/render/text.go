// Package render prints an analysis report for people (a table per trace and a summary) or
// for machines (JSON).
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/orphanwatch/orphanwatch/cmd/orphanwatch/internal/analyze"
	"github.com/orphanwatch/orphanwatch/cmd/orphanwatch/internal/input"
)

// JSON writes the report as indented JSON.
func JSON(w io.Writer, r *analyze.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Outcomes in the order they are listed.
var outcomeOrder = []string{"delivered_to_nobody", "cancelled", "retryable_failure", "hard_failure", "unknown_root", "success"}

// Text writes the report as tables: files read, each trace, then the summary. With spans, each
// trace also lists every span and its verdict.
func Text(w io.Writer, r *analyze.Report, spans bool) error {
	p := &printer{w: w}
	for _, f := range r.Files {
		p.linef("file %s: %s, %s, %s", f.Name, f.Format, plural(f.Spans, "span"), plural(f.Traces, "trace"))
		if len(f.Malformed) > 0 {
			p.linef("  dropped malformed spans: %s", input.FormatCounts(f.Malformed))
		}
		for _, wn := range f.Warnings {
			p.linef("  note: %s", wn)
		}
	}
	for i := range r.Traces {
		p.linef("")
		p.trace(&r.Traces[i], spans)
	}
	p.linef("")
	p.summary(r)
	return p.err
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) linef(format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *printer) table(indent string, header []string, rows [][]string) {
	if p.err != nil {
		return
	}
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, indent+strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, indent+strings.Join(r, "\t"))
	}
	p.err = tw.Flush()
}

// reachLine answers the article's question for one abandoned request: how many service hops
// deep the news of the cancellation travelled, against how deep work went on without it.
func reachLine(reach, depth int64) string {
	line := fmt.Sprintf("cancellation reached %d of %d hops", reach, max(reach, depth))
	if depth > 0 {
		return line + fmt.Sprintf("; orphaned work %d hops down", depth)
	}
	return line + "; nothing orphaned below the root's service"
}

func (p *printer) trace(t *analyze.TraceReport, spans bool) {
	p.linef("trace %s  (%s; %s)", t.TraceID, plural(t.Spans, "span"), strings.Join(t.Files, ", "))
	kv := [][2]string{}
	switch {
	case t.Root == nil:
		kv = append(kv, [2]string{"root", "not in the input: spans judged unknown (runs unknown_root)"})
	default:
		r := t.Root
		kv = append(kv, [2]string{"root", fmt.Sprintf("%s  [%s, %s]  %s, started %s", r.Name, orDash(r.Service), r.Kind, seconds(r.Duration), r.Start.Format(time.RFC3339Nano))})
		switch {
		case r.Detached:
			kv = append(kv, [2]string{"end", "root is detached work (consumer or linked): not judged against a gone time"})
		case r.Bound:
			kv = append(kv, [2]string{"end", "root is work bound to a request elsewhere (idempotency key or deadline): judged against its gone time"})
		case r.EndReason != "":
			end := r.EndReason
			if r.GoneAfterStart != nil {
				end += fmt.Sprintf("; gone at +%s", seconds(*r.GoneAfterStart))
				if math.Abs(*r.GoneAfterStart-r.Duration) > 1e-9 {
					end += " (deadline before the end)"
				}
			}
			kv = append(kv, [2]string{"end", end})
		default:
			kv = append(kv, [2]string{"end", "not judged (malformed root)"})
		}
	}
	if r := t.Root; r != nil && r.CancelReachHops != nil && r.OrphanedDepthHops != nil {
		kv = append(kv, [2]string{"reach", reachLine(*r.CancelReachHops, *r.OrphanedDepthHops)})
	}
	for _, o := range t.OtherRoots {
		kv = append(kv, [2]string{"root also", fmt.Sprintf("%s  [%s, %s]  %s, %s", o.Name, orDash(o.Service), o.Kind, seconds(o.Duration), orDash(o.EndReason))})
	}
	kv = append(kv, [2]string{"spans", liveness(t.Liveness)})
	kv = append(kv, [2]string{"runs", runs(t.Runs)})
	kv = append(kv, [2]string{"orphaned", orphanedLine(t)})
	kv = append(kv, [2]string{"spend", spendLine(t.Spend)})
	if len(t.Edges) > 0 {
		var es []string
		for _, e := range t.Edges {
			es = append(es, fmt.Sprintf("%s -> %s (%d)", e.Caller, e.Callee, e.Spans))
		}
		kv = append(kv, [2]string{"edges", "cancellation not passed on: " + strings.Join(es, ", ")})
	}
	for _, x := range kv {
		p.linef("  %-9s %s", x[0], x[1])
	}
	if len(t.NotableRuns) > 0 {
		p.linef("  runs that did not succeed:")
		rows := make([][]string, 0, len(t.NotableRuns))
		for _, r := range t.NotableRuns {
			rows = append(rows, []string{orDash(r.Service), r.Name, r.Outcome, strconv.Itoa(r.Attempts), r.Result})
		}
		p.table("    ", []string{"SERVICE", "OPERATION", "OUTCOME", "ATTEMPTS", "RESULT"}, rows)
	}
	if len(t.Orphaned) > 0 {
		p.linef("  orphaned spans:")
		rows := make([][]string, 0, len(t.Orphaned))
		for _, s := range t.Orphaned {
			start := "-"
			if s.StartAfterRoot != nil {
				start = "+" + seconds(*s.StartAfterRoot)
			}
			when := "before gone"
			if s.StartedAfterGone {
				when = "after gone"
			}
			edge := "-"
			if s.CallerService != "" {
				edge = s.CallerService + " -> " + orDash(s.Service)
			}
			tokens, cost := "-", "-"
			switch {
			case s.Model != "" && s.InputTokens == nil && s.OutputTokens == nil && s.Cost == nil:
				tokens = s.Model + " (no usage)"
			case s.Model != "":
				tokens = fmt.Sprintf("%s %s/%s", s.Model, intOr(s.InputTokens), intOr(s.OutputTokens))
				cost = "no price"
				if s.Cost != nil {
					cost = usd(*s.Cost)
				}
			}
			run := "-"
			if s.RunOutcome != "" {
				run = s.RunOutcome
			}
			rows = append(rows, []string{orDash(s.Service), s.Name, s.Kind, start, when, seconds(s.AfterGone), edge, run, tokens, cost})
		}
		p.table("    ", []string{"SERVICE", "SPAN", "KIND", "START", "STARTED", "OUTLIVED BY", "CALLER EDGE", "RUN", "TOKENS IN/OUT", "COST"}, rows)
	}
	if spans {
		p.spans(t)
	}
}

// maxIndent bounds the indentation of the span tree; deeper spans show their depth.
const maxIndent = 10

// spans lists every span of the trace as a tree, with its verdict.
func (p *printer) spans(t *analyze.TraceReport) {
	p.linef("  span verdicts:")
	children := map[string][]int{}
	ids := map[string]bool{}
	for _, s := range t.SpanVerdicts {
		ids[s.SpanID] = true
	}
	var tops []int
	for i, s := range t.SpanVerdicts {
		if s.ParentID != "" && ids[s.ParentID] && s.ParentID != s.SpanID {
			children[s.ParentID] = append(children[s.ParentID], i)
		} else {
			tops = append(tops, i)
		}
	}
	var rootStart int64
	if t.Root != nil {
		rootStart = t.Root.Start.UnixNano()
	}
	var rows [][]string
	seen := map[int]bool{}
	var walk func(i, depth int)
	walk = func(i, depth int) {
		if seen[i] || depth > 64 {
			return
		}
		seen[i] = true
		s := t.SpanVerdicts[i]
		when := "-"
		if rootStart > 0 && s.Start > 0 {
			when = fmt.Sprintf("+%s..+%s", seconds(float64(s.Start-rootStart)/1e9), seconds(float64(s.End-rootStart)/1e9))
		}
		indent := strings.Repeat("· ", min(depth, maxIndent))
		if depth > maxIndent {
			indent += fmt.Sprintf("(%d) ", depth)
		}
		rows = append(rows, []string{indent + s.Name, orDash(s.Service), s.Kind, when, verdictText(s.Verdict)})
		for _, c := range children[s.SpanID] {
			walk(c, depth+1)
		}
	}
	for _, i := range tops {
		walk(i, 0)
	}
	for i := range t.SpanVerdicts {
		walk(i, 0) // spans on a parent cycle
	}
	p.table("    ", []string{"SPAN", "SERVICE", "KIND", "TIME", "VERDICT"}, rows)
}

func verdictText(v map[string]any) string {
	if len(v) == 0 {
		return "(none)"
	}
	keys := slices.Sorted(maps.Keys(v))
	parts := make([]string, len(keys))
	for i, k := range keys {
		val := v[k]
		if f, ok := val.(float64); ok {
			val = strconv.FormatFloat(roundTo(f, 9), 'f', -1, 64)
		}
		parts[i] = fmt.Sprintf("%s=%v", strings.TrimPrefix(k, "orphanwatch."), val)
	}
	return strings.Join(parts, " ")
}

func (p *printer) summary(r *analyze.Report) {
	s := &r.Summary
	p.linef("summary: %s, %s, %s", plural(s.Files, "file"), plural(s.Traces, "trace"), plural(s.Spans, "span"))
	kv := [][2]string{
		{"roots", counts(s.Roots, []string{"completed", "cancelled", "deadline_exceeded", "error", "detached", "missing", "unjudged"})},
		{"spans", liveness(s.Liveness)},
		{"runs", runs(s.Runs)},
		{"tokens", tokensLine(s)},
		{"cost", costLine(s.Spend)},
	}
	if len(s.Edges) == 0 {
		kv = append(kv, [2]string{"edges", "no service edge dropped a cancellation"})
	} else {
		var es []string
		for _, e := range s.Edges {
			es = append(es, fmt.Sprintf("%s -> %s (%d)", e.Caller, e.Callee, e.Spans))
		}
		kv = append(kv, [2]string{"edges", "cancellation not passed on: " + strings.Join(es, ", ")})
	}
	kv = append(kv, [2]string{"malformed", malformedLine(s)})
	for _, x := range kv {
		p.linef("  %-9s %s", x[0], x[1])
	}
}

func malformedLine(s *analyze.Summary) string {
	var parts []string
	if len(s.Malformed) > 0 {
		parts = append(parts, "dropped while reading: "+input.FormatCounts(s.Malformed))
	}
	wv := map[string]int{}
	for k, v := range s.Processor.WithoutVerdict {
		if k != "root_missing" { // reported with the roots
			wv[k] = int(v)
		}
	}
	if len(wv) > 0 && input.FormatCounts(wv) != "" {
		parts = append(parts, "not judged by the processor: "+input.FormatCounts(wv))
	}
	ai := map[string]int{}
	for k, v := range s.Processor.AttributesIgnored {
		ai[k] = int(v)
	}
	if len(ai) > 0 && input.FormatCounts(ai) != "" {
		parts = append(parts, "attribute values ignored: "+input.FormatCounts(ai))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

func liveness(l analyze.Liveness) string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(l.Live, "live")
	if l.Orphaned > 0 {
		parts = append(parts, fmt.Sprintf("%d orphaned (%d started after gone)", l.Orphaned, l.StartedAfterGone))
	}
	add(l.Unknown, "unknown")
	add(l.Detached, "detached")
	add(l.None, "without verdict")
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func runs(m map[string]int) string {
	total := 0
	for _, v := range m {
		total += v
	}
	if total == 0 {
		return "none"
	}
	return fmt.Sprintf("%d: %s", total, counts(m, outcomeOrder))
}

// counts renders "a 1, b 2" in the given order, then any other keys sorted.
func counts(m map[string]int, order []string) string {
	var parts []string
	done := map[string]bool{}
	for _, k := range order {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
		done[k] = true
	}
	var rest []string
	for k, v := range m {
		if !done[k] && v > 0 {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func orphanedLine(t *analyze.TraceReport) string {
	if len(t.Orphaned) == 0 {
		return "nothing"
	}
	maxAfter := 0.0
	for _, s := range t.Orphaned {
		maxAfter = math.Max(maxAfter, s.AfterGone)
	}
	line := fmt.Sprintf("%s, outliving the root by up to %s", plural(len(t.Orphaned), "span"), seconds(maxAfter))
	if sp := t.Spend["orphaned"]; sp != nil && sp.ModelCalls > 0 {
		line += fmt.Sprintf("; %d in / %d out tokens, %s", sp.InputTokens, sp.OutputTokens, costOf(sp))
	}
	return line
}

var spendOrder = []string{"live", "orphaned", "unknown", "detached", "none"}

func spendLine(m map[string]*analyze.Spend) string {
	var parts []string
	for _, cat := range spendOrder {
		sp := m[cat]
		if sp == nil || sp.ModelCalls == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %s, %d in / %d out tokens, %s", cat, plural(sp.ModelCalls, "model call"), sp.InputTokens, sp.OutputTokens, costOf(sp)))
	}
	if len(parts) == 0 {
		return "no model calls"
	}
	return strings.Join(parts, "; ")
}

func tokensLine(s *analyze.Summary) string {
	var parts []string
	for _, cat := range spendOrder {
		sp := s.Spend[cat]
		if sp == nil || sp.ModelCalls == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d in / %d out", cat, sp.InputTokens, sp.OutputTokens))
	}
	if len(parts) == 0 {
		return "no model calls"
	}
	return strings.Join(parts, "; ") + fmt.Sprintf(" (%.1f%% orphaned)", 100*s.OrphanedTokenShare)
}

func costLine(m map[string]*analyze.Spend) string {
	var parts []string
	unpriced := map[string]bool{}
	for _, cat := range spendOrder {
		sp := m[cat]
		if sp == nil || sp.ModelCalls == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s", cat, usd(sp.Cost)))
		for model, ms := range sp.Models {
			if ms.Unpriced > 0 {
				unpriced[model] = true
			}
		}
	}
	if len(parts) == 0 {
		return "no model calls"
	}
	line := strings.Join(parts, "; ")
	noUsage := 0
	for _, sp := range m {
		noUsage += sp.NoUsage
	}
	if noUsage > 0 {
		line += fmt.Sprintf(" (%s without token usage)", plural(noUsage, "model call"))
	}
	if len(unpriced) > 0 {
		var ms []string
		for m := range unpriced {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		line += " (no price for " + strings.Join(ms, ", ") + ": see --prices)"
	}
	return line
}

func costOf(sp *analyze.Spend) string {
	priced := sp.ModelCalls - sp.Unpriced - sp.NoUsage
	var notes []string
	if sp.Unpriced > 0 {
		notes = append(notes, fmt.Sprintf("%d unpriced", sp.Unpriced))
	}
	if sp.NoUsage > 0 {
		notes = append(notes, fmt.Sprintf("%d without usage", sp.NoUsage))
	}
	switch {
	case priced == 0 && sp.Unpriced > 0:
		return "cost unknown (no price; see --prices)"
	case priced == 0:
		return "cost unknown (" + strings.Join(notes, ", ") + ")"
	case len(notes) > 0:
		return fmt.Sprintf("%s (+ %s)", usd(sp.Cost), strings.Join(notes, ", "))
	}
	return usd(sp.Cost)
}

func usd(c float64) string {
	return "$" + strconv.FormatFloat(roundTo(c, 9), 'f', -1, 64)
}

func roundTo(f float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(f*p) / p
}

// seconds formats a duration in seconds: "3.550s", "12.0ms", "26µs".
func seconds(s float64) string {
	a := math.Abs(s)
	switch {
	case a >= 1 || a == 0:
		return fmt.Sprintf("%.3fs", s)
	case a >= 0.001:
		return fmt.Sprintf("%.1fms", s*1e3)
	}
	return fmt.Sprintf("%.0fµs", s*1e6)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func intOr(p *int64) string {
	if p == nil {
		return "?"
	}
	return strconv.FormatInt(*p, 10)
}
