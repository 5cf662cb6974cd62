package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// Test versions of the committed monitoring configs. A test cannot wait for production rate
// windows and `for:` durations, nor scrape fixed ports; these functions rewrite exactly that and
// keep the rest (rule expressions, labels, annotations, routing tree, receivers) as committed.

// PrometheusTargets are the loopback addresses and files of a test's Prometheus.
type PrometheusTargets struct {
	// Jobs maps a scrape job name of the committed config to the target that replaces its
	// targets; every job of the config must be listed.
	Jobs map[string]string
	// Alertmanager is host:port of the Alertmanager.
	Alertmanager string
	// RuleFiles replace rule_files (names relative to the config's folder, or absolute).
	RuleFiles []string
	// Interval is the scrape and evaluation interval (and scrape timeout).
	Interval time.Duration
}

// PrometheusConfigForTest rewrites a prometheus.yml for a test: intervals, targets, the
// Alertmanager and the rule files.
func PrometheusConfigForTest(base []byte, tg PrometheusTargets) ([]byte, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(base, &cfg); err != nil {
		return nil, err
	}
	iv := model.Duration(tg.Interval).String()
	global, _ := cfg["global"].(map[string]any)
	if global == nil {
		global = map[string]any{}
	}
	global["scrape_interval"], global["evaluation_interval"], global["scrape_timeout"] = iv, iv, iv
	cfg["global"] = global
	cfg["rule_files"] = tg.RuleFiles
	cfg["alerting"] = map[string]any{"alertmanagers": []any{
		map[string]any{"static_configs": []any{map[string]any{"targets": []string{tg.Alertmanager}}}},
	}}
	scrapes, _ := cfg["scrape_configs"].([]any)
	seen := map[string]bool{}
	for _, s := range scrapes {
		sc, ok := s.(map[string]any)
		if !ok {
			return nil, errors.New("scrape_configs: entry is not a map")
		}
		job, _ := sc["job_name"].(string)
		target, ok := tg.Jobs[job]
		if !ok {
			return nil, fmt.Errorf("scrape job %q has no test target", job)
		}
		seen[job] = true
		for _, k := range []string{"scrape_interval", "scrape_timeout"} {
			if _, ok := sc[k]; ok {
				sc[k] = iv
			}
		}
		sc["static_configs"] = []any{map[string]any{"targets": []string{target}}}
	}
	for job := range tg.Jobs {
		if !seen[job] {
			return nil, fmt.Errorf("scrape job %q is not in the config", job)
		}
	}
	return yaml.Marshal(cfg)
}

// AlertmanagerConfigForTest rewrites an alertmanager.yml for a test: every webhook URL keeps its
// path but goes to webhookBase (scheme://host:port), and every route's group_wait and
// group_interval become wait.
func AlertmanagerConfigForTest(base []byte, webhookBase string, wait time.Duration) ([]byte, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(base, &cfg); err != nil {
		return nil, err
	}
	wb, err := url.Parse(webhookBase)
	if err != nil {
		return nil, err
	}
	var walk func(r map[string]any)
	walk = func(r map[string]any) {
		r["group_wait"] = model.Duration(wait).String()
		r["group_interval"] = model.Duration(wait).String()
		if subs, ok := r["routes"].([]any); ok {
			for _, s := range subs {
				if m, ok := s.(map[string]any); ok {
					walk(m)
				}
			}
		}
	}
	route, ok := cfg["route"].(map[string]any)
	if !ok {
		return nil, errors.New("no route")
	}
	walk(route)
	receivers, _ := cfg["receivers"].([]any)
	hooks := 0
	for _, r := range receivers {
		rm, _ := r.(map[string]any)
		whs, _ := rm["webhook_configs"].([]any)
		for _, w := range whs {
			wm, _ := w.(map[string]any)
			u, err := url.Parse(fmt.Sprint(wm["url"]))
			if err != nil {
				return nil, err
			}
			u.Scheme, u.Host = wb.Scheme, wb.Host
			wm["url"] = u.String()
			hooks++
		}
	}
	if hooks == 0 {
		return nil, errors.New("no webhook receiver")
	}
	return yaml.Marshal(cfg)
}

// RulesForTest rewrites a Prometheus rule file for a test that cannot wait for production
// windows: every range (of a range selector or subquery) longer than window becomes window, and
// every `for` longer than forDur becomes forDur. Expressions are parsed and printed again by
// the PromQL parser; everything else is kept.
func RulesForTest(src []byte, window, forDur time.Duration) ([]byte, error) {
	groups, err := ParseRules(src)
	if err != nil {
		return nil, err
	}
	p := parser.NewParser(parser.Options{})
	for gi := range groups.Groups {
		g := &groups.Groups[gi]
		for ri := range g.Rules {
			r := &g.Rules[ri]
			expr, err := p.ParseExpr(r.Expr)
			if err != nil {
				return nil, fmt.Errorf("%s/%s%s: %w", g.Name, r.Alert, r.Record, err)
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				switch n := n.(type) {
				case *parser.MatrixSelector:
					if n.Range > window {
						n.Range = window
					}
				case *parser.SubqueryExpr:
					if n.Range > window {
						n.Range = window
					}
				}
				return nil
			})
			r.Expr = expr.String()
			if time.Duration(r.For) > forDur {
				r.For = model.Duration(forDur)
			}
		}
	}
	return yaml.Marshal(groups)
}

// RuleGroups is a Prometheus rule file (the fields orphanwatch's rules use; unknown fields are
// an error, so nothing is dropped silently).
type RuleGroups struct {
	Groups []RuleGroup `yaml:"groups"`
}

// RuleGroup is a group of a rule file.
type RuleGroup struct {
	Name     string         `yaml:"name"`
	Interval model.Duration `yaml:"interval,omitempty"`
	Rules    []Rule         `yaml:"rules"`
}

// Rule is a recording or alerting rule.
type Rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         model.Duration    `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// ParseRules reads a rule file strictly (unknown fields are an error).
func ParseRules(src []byte) (RuleGroups, error) {
	var groups RuleGroups
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&groups); err != nil {
		return RuleGroups{}, err
	}
	return groups, nil
}
