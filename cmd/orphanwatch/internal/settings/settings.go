// Package settings loads the CLI's optional configuration: the rule settings (from the
// processor's own keys, or from the processors.orphan section of a collector configuration, or,
// for an observing collector without it, from exporters.orphanmetrics, which carries the same
// keys), the orphanmetrics exporter's metric settings (exporters.orphanmetrics of a
// collector configuration), and a price table file. Files are YAML (JSON is YAML too) and are
// decoded with confmap, as the collector decodes its configuration: unknown keys are errors.
package settings

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.yaml.in/yaml/v3"

	"github.com/orphanwatch/orphanwatch/cmd/orphanwatch/internal/analyze"
	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor"
)

// Settings is what the analysis runs with.
type Settings struct {
	Processor *orphanprocessor.Config
	Exporter  *orphanmetricsexporter.Config
}

// Default returns the processor defaults (the collector's, waits and limits included) with the
// default price table, and the exporter defaults.
func Default() *Settings {
	return &Settings{Processor: analyze.DefaultConfig(), Exporter: orphanmetricsexporter.NewDefaultConfig()}
}

// Load reads the optional configuration file and price table file ("" for none). A price
// table file replaces the configuration's prices; without either, the default table applies.
func Load(configPath, pricesPath string) (*Settings, error) {
	s := Default()
	if configPath != "" {
		m, err := readYAML(configPath)
		if err != nil {
			return nil, err
		}
		procSection, expSection, err := sections(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", configPath, err)
		}
		cfg := orphanprocessor.NewFactory().CreateDefaultConfig().(*orphanprocessor.Config)
		if procSection != nil {
			if err := confmap.NewFromStringMap(procSection).Unmarshal(cfg); err != nil {
				return nil, fmt.Errorf("%s: orphan processor settings: %w", configPath, err)
			}
		}
		if _, ok := procSection["prices"]; !ok {
			cfg.Prices = analyze.DefaultPrices()
		}
		s.Processor = cfg
		if expSection != nil {
			if err := confmap.NewFromStringMap(expSection).Unmarshal(s.Exporter); err != nil {
				return nil, fmt.Errorf("%s: orphanmetrics exporter settings: %w", configPath, err)
			}
			if procSection == nil && s.Exporter.Mode == orphanmetrics.ModeObserve {
				// An observing collector (the shipped default): the rules are the exporter's,
				// under the processor's keys.
				cfg.Config = s.Exporter.Config
				cfg.Limits.LimitsConfig = s.Exporter.Limits
				if _, ok := expSection["prices"]; !ok {
					cfg.Prices = analyze.DefaultPrices()
				}
			}
		}
	}
	if pricesPath != "" {
		prices, err := LoadPrices(pricesPath)
		if err != nil {
			return nil, err
		}
		s.Processor.Prices = prices
	}
	if err := s.Processor.Validate(); err != nil {
		return nil, fmt.Errorf("invalid settings: %w", err)
	}
	if err := s.Exporter.Validate(); err != nil {
		return nil, fmt.Errorf("invalid exporter settings: %w", err)
	}
	return s, nil
}

// LoadPrices reads a price table: a map from model name to input_per_million and
// output_per_million (USD per million tokens), at the top level or under a "prices" key.
func LoadPrices(path string) (map[string]orphanprocessor.PriceConfig, error) {
	m, err := readYAML(path)
	if err != nil {
		return nil, err
	}
	if p, ok := m["prices"].(map[string]any); ok && len(m) == 1 {
		m = p
	}
	prices := map[string]orphanprocessor.PriceConfig{}
	if err := confmap.NewFromStringMap(map[string]any{"prices": m}).Unmarshal(&struct {
		Prices *map[string]orphanprocessor.PriceConfig `mapstructure:"prices"`
	}{&prices}); err != nil {
		return nil, fmt.Errorf("%s: price table: %w", path, err)
	}
	for model, p := range prices {
		if strings.TrimSpace(model) == "" {
			return nil, fmt.Errorf("%s: price table: empty model name", path)
		}
		if p.InputPerMillion < 0 || p.OutputPerMillion < 0 {
			return nil, fmt.Errorf("%s: price table: %s: prices must not be negative", path, model)
		}
	}
	return prices, nil
}

func readYAML(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: not YAML or JSON: %w", path, err)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// sections finds the orphan processor's settings and the orphanmetrics exporter's settings. A
// collector configuration (a top-level "processors" key) gives processors.orphan (or the only
// processors.orphan/<name>) and exporters.orphanmetrics; any other file is the processor's
// settings themselves.
func sections(m map[string]any) (proc, exp map[string]any, err error) {
	procs, isCollector := m["processors"].(map[string]any)
	if !isCollector {
		if _, ok := m["processors"]; ok {
			return nil, nil, fmt.Errorf("processors: not a map")
		}
		return m, nil, nil
	}
	proc, err = component(procs, "orphan", "processors")
	if err != nil {
		return nil, nil, err
	}
	if exps, ok := m["exporters"].(map[string]any); ok {
		exp, err = component(exps, "orphanmetrics", "exporters")
		if err != nil {
			return nil, nil, err
		}
	}
	return proc, exp, nil
}

// component returns the settings of the component of type typ in a collector config section:
// "typ", else the only "typ/<name>".
func component(section map[string]any, typ, where string) (map[string]any, error) {
	pick := func(v any) (map[string]any, error) {
		if v == nil {
			return map[string]any{}, nil
		}
		c, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s.%s: not a map", where, typ)
		}
		return c, nil
	}
	if v, ok := section[typ]; ok {
		return pick(v)
	}
	var named []string
	for k := range section {
		if strings.HasPrefix(k, typ+"/") {
			named = append(named, k)
		}
	}
	sort.Strings(named)
	switch len(named) {
	case 0:
		return nil, nil
	case 1:
		return pick(section[named[0]])
	}
	return nil, fmt.Errorf("%s: several %s components (%s): keep one in the file given to --config", where, typ, strings.Join(named, ", "))
}
