package dashboards

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Query is one Prometheus query of a dashboard panel.
type Query struct {
	Dashboard string // dashboard title
	Panel     string // panel title
	RefID     string
	Expr      string
	Legend    string
	Instant   bool // an instant query (else a range query)
	Exemplar  bool // exemplars requested
}

// Mode is the one mode q has data in, "annotate" or "observe", from the AnnotateOnly or
// ObserveOnly mark that ends its panel's title or its legend; "" for a query of both modes.
func (q Query) Mode() string {
	for _, t := range []string{q.Panel, q.Legend} {
		switch {
		case strings.HasSuffix(t, AnnotateOnly):
			return "annotate"
		case strings.HasSuffix(t, ObserveOnly):
			return "observe"
		}
	}
	return ""
}

func (q Query) String() string { return fmt.Sprintf("%s / %s / %s", q.Dashboard, q.Panel, q.RefID) }

type jsonTarget struct {
	RefID        string `json:"refId"`
	Expr         string `json:"expr"`
	LegendFormat string `json:"legendFormat"`
	Instant      bool   `json:"instant"`
	Exemplar     bool   `json:"exemplar"`
}

type jsonPanel struct {
	Type    string       `json:"type"`
	ID      int          `json:"id"`
	Title   string       `json:"title"`
	Targets []jsonTarget `json:"targets"`
	Panels  []jsonPanel  `json:"panels"`
}

type jsonDashboard struct {
	Title      string      `json:"title"`
	Panels     []jsonPanel `json:"panels"`
	Templating struct {
		List []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// Queries reads every panel query of a dashboard's JSON (as Render writes it), including the
// panels of collapsed rows.
func Queries(dashboardJSON []byte) ([]Query, error) {
	var d jsonDashboard
	if err := json.Unmarshal(dashboardJSON, &d); err != nil {
		return nil, err
	}
	var out []Query
	var walk func(ps []jsonPanel)
	walk = func(ps []jsonPanel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				out = append(out, Query{Dashboard: d.Title, Panel: p.Title, RefID: t.RefID, Expr: t.Expr,
					Legend: t.LegendFormat, Instant: t.Instant, Exemplar: t.Exemplar})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out, nil
}

// VariableQueries returns the query variables of a dashboard's JSON: name -> query
// (e.g. `label_values(orphanwatch_runs_total, service_name)`).
func VariableQueries(dashboardJSON []byte) (map[string]string, error) {
	var d jsonDashboard
	if err := json.Unmarshal(dashboardJSON, &d); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		switch q := v.Query.(type) {
		case string:
			out[v.Name] = q
		case map[string]any:
			out[v.Name] = fmt.Sprint(q["query"])
		default:
			return nil, fmt.Errorf("variable %s: query of type %T", v.Name, v.Query)
		}
	}
	return out, nil
}

// Expand replaces Grafana's variables in expr with values from vars (name without `$` -> value),
// in the $name, ${name} and [[name]] forms, longest names first. Use it with the built-ins a
// query needs, e.g. {"__rate_interval": "1m", "__range": "1h", "service": ".*"}.
func Expand(expr string, vars map[string]string) string {
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, n := range names {
		v := vars[n]
		expr = strings.ReplaceAll(expr, "${"+n+"}", v)
		expr = strings.ReplaceAll(expr, "[["+n+"]]", v)
		expr = strings.ReplaceAll(expr, "$"+n, v)
	}
	return expr
}

// LabelValuesMetric returns the metric of a `label_values(metric, label)` variable query.
func LabelValuesMetric(q string) (metric, label string, err error) {
	inner, ok := strings.CutPrefix(strings.TrimSpace(q), "label_values(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return "", "", fmt.Errorf("not label_values(metric, label): %q", q)
	}
	metric, label, ok = strings.Cut(strings.TrimSuffix(inner, ")"), ",")
	if !ok {
		return "", "", fmt.Errorf("not label_values(metric, label): %q", q)
	}
	return strings.TrimSpace(metric), strings.TrimSpace(label), nil
}

// Parse parses a PromQL expression (after Expand).
func Parse(expr string) (parser.Expr, error) {
	return parser.NewParser(parser.Options{}).ParseExpr(expr)
}

// NameMatchers returns the metric-name matcher of every selector of expr: an equality for a
// plain name (orphanwatch_runs_total), a regular expression for a name pattern
// ({__name__=~"otelcol_x(_total)?"}, a counter of the collector's own telemetry under its
// scraped and its pushed name), sorted by their text and without repeats. A selector without
// one is an error: every dashboard query names its metrics.
func NameMatchers(expr string) ([]*labels.Matcher, error) {
	e, err := Parse(expr)
	if err != nil {
		return nil, err
	}
	set := map[string]*labels.Matcher{}
	var bad error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		var name *labels.Matcher
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && (m.Type == labels.MatchEqual || m.Type == labels.MatchRegexp) {
				name = m
			}
		}
		if name == nil || name.Value == "" {
			bad = fmt.Errorf("selector %s names no metric", vs)
			return nil
		}
		set[name.String()] = name
		return nil
	})
	if bad != nil {
		return nil, bad
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*labels.Matcher, 0, len(keys))
	for _, k := range keys {
		out = append(out, set[k])
	}
	return out, nil
}
