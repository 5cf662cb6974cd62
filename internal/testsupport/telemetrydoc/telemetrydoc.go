// Package telemetrydoc keeps a component's documentation.md in step with the internal
// telemetry its code creates, the way mdatagen's generated documentation is: a test creates
// the component's instruments on a [Provider], which records each instrument's name, kind,
// unit and description, and [Check] requires documentation.md to hold exactly those
// instruments, each with the block [Block] renders. The attributes under each block are
// written by hand.
package telemetrydoc

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
	"go.opentelemetry.io/otel/metric/noop"
	"go.yaml.in/yaml/v3"
)

// Instrument is what documentation.md says of one instrument.
type Instrument struct {
	Name, Description, Unit string
	Type                    string // Sum, Gauge, Histogram
	ValueType               string // Int, Double
	Monotonic               string // true, false, or empty for gauges and histograms
}

// Block is the documentation block of an instrument, in mdatagen's layout.
func (i Instrument) Block() string {
	return fmt.Sprintf("### %s\n\n%s\n\n| Unit | Metric Type | Value Type | Monotonic |\n| ---- | ----------- | ---------- | --------- |\n| %s | %s | %s | %s |\n",
		i.Name, i.Description, i.Unit, i.Type, i.ValueType, i.Monotonic)
}

// Provider is a metric.MeterProvider whose meters record the instruments created on them and
// otherwise do nothing.
type Provider struct {
	embedded.MeterProvider
	mu    sync.Mutex
	insts []Instrument
}

// Meter returns a recording meter.
func (p *Provider) Meter(string, ...metric.MeterOption) metric.Meter { return &meter{p: p} }

// Instruments returns the instruments created so far, by name.
func (p *Provider) Instruments() []Instrument {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := slices.Clone(p.insts)
	slices.SortFunc(out, func(a, b Instrument) int { return strings.Compare(a.Name, b.Name) })
	return slices.CompactFunc(out, func(a, b Instrument) bool { return a.Name == b.Name })
}

func (p *Provider) add(i Instrument) {
	p.mu.Lock()
	p.insts = append(p.insts, i)
	p.mu.Unlock()
}

type meter struct {
	noop.Meter
	p *Provider
}

func (m *meter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	c := metric.NewInt64CounterConfig(opts...)
	m.p.add(Instrument{name, c.Description(), c.Unit(), "Sum", "Int", "true"})
	return m.Meter.Int64Counter(name, opts...)
}

func (m *meter) Float64Counter(name string, opts ...metric.Float64CounterOption) (metric.Float64Counter, error) {
	c := metric.NewFloat64CounterConfig(opts...)
	m.p.add(Instrument{name, c.Description(), c.Unit(), "Sum", "Double", "true"})
	return m.Meter.Float64Counter(name, opts...)
}

func (m *meter) Int64UpDownCounter(name string, opts ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	c := metric.NewInt64UpDownCounterConfig(opts...)
	m.p.add(Instrument{name, c.Description(), c.Unit(), "Sum", "Int", "false"})
	return m.Meter.Int64UpDownCounter(name, opts...)
}

func (m *meter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	c := metric.NewFloat64HistogramConfig(opts...)
	m.p.add(Instrument{name, c.Description(), c.Unit(), "Histogram", "Double", ""})
	return m.Meter.Float64Histogram(name, opts...)
}

func (m *meter) Int64ObservableGauge(name string, opts ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	c := metric.NewInt64ObservableGaugeConfig(opts...)
	m.p.add(Instrument{name, c.Description(), c.Unit(), "Gauge", "Int", ""})
	return m.Meter.Int64ObservableGauge(name, opts...)
}

func (m *meter) Int64ObservableCounter(name string, opts ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	c := metric.NewInt64ObservableCounterConfig(opts...)
	m.p.add(Instrument{name, c.Description(), c.Unit(), "Sum", "Int", "true"})
	return m.Meter.Int64ObservableCounter(name, opts...)
}

var heading = regexp.MustCompile(`(?m)^### (\S+)\s*$`)

// Check reports how the documentation file at path differs from insts: instruments without
// their block (or with a stale one), and documented instruments the code does not create.
func Check(path string, insts []Instrument) []string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return []string{err.Error()}
	}
	doc := string(raw)
	var problems []string
	created := map[string]bool{}
	for _, i := range insts {
		created[i.Name] = true
		if !strings.Contains(doc, i.Block()) {
			problems = append(problems, fmt.Sprintf("%s: missing or stale; want the block\n%s", i.Name, i.Block()))
		}
	}
	for _, m := range heading.FindAllStringSubmatch(doc, -1) {
		if !created[m[1]] {
			problems = append(problems, fmt.Sprintf("%s: documented but not created by the code", m[1]))
		}
	}
	return problems
}

// stabilitySuffix is what mdatagen appends to a telemetry metric's description for its
// stability level.
var stabilitySuffix = map[string]string{
	"development": " [Development]", "alpha": " [Alpha]", "beta": " [Beta]", "deprecated": " [Deprecated]", "stable": "",
}

// FromMetadata reads the telemetry metrics of an mdatagen metadata.yaml as the instruments
// mdatagen would generate from it: name otelcol_<key>, the description with its stability
// suffix, unit, type, value type and monotonicity. Sorted by name.
func FromMetadata(path string) ([]Instrument, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	type data struct {
		ValueType string `yaml:"value_type"`
		Monotonic *bool  `yaml:"monotonic"`
	}
	var md struct {
		Telemetry struct {
			Metrics map[string]struct {
				Enabled     bool   `yaml:"enabled"`
				Stability   string `yaml:"stability"`
				Description string `yaml:"description"`
				Unit        string `yaml:"unit"`
				Sum         *data  `yaml:"sum"`
				Gauge       *data  `yaml:"gauge"`
				Histogram   *data  `yaml:"histogram"`
			} `yaml:"metrics"`
		} `yaml:"telemetry"`
	}
	if err := yaml.Unmarshal(raw, &md); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	valueType := map[string]string{"int": "Int", "double": "Double"}
	var out []Instrument
	for key, m := range md.Telemetry.Metrics {
		suffix, ok := stabilitySuffix[m.Stability]
		if !ok {
			return nil, fmt.Errorf("%s: %s: unknown stability %q", path, key, m.Stability)
		}
		i := Instrument{Name: "otelcol_" + key, Description: m.Description + suffix, Unit: m.Unit}
		var d *data
		switch {
		case m.Sum != nil:
			i.Type, d = "Sum", m.Sum
			i.Monotonic = "false"
			if d.Monotonic != nil && *d.Monotonic {
				i.Monotonic = "true"
			}
		case m.Gauge != nil:
			i.Type, d = "Gauge", m.Gauge
		case m.Histogram != nil:
			i.Type, d = "Histogram", m.Histogram
		default:
			return nil, fmt.Errorf("%s: %s: no sum, gauge or histogram", path, key)
		}
		if i.ValueType = valueType[d.ValueType]; i.ValueType == "" {
			return nil, fmt.Errorf("%s: %s: value_type %q", path, key, d.ValueType)
		}
		if !m.Enabled {
			return nil, fmt.Errorf("%s: %s: not enabled (the builder creates every instrument)", path, key)
		}
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b Instrument) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
