// Package prices holds the price table the scenarios' expected costs are computed with, apart
// from package scenarios so that the scenarios do not bring the rule settings (internal/rulesconfig)
// to every test that builds them.
package prices

import "github.com/orphanwatch/orphanwatch/internal/rulesconfig"

// Scenarios returns the price table of SCENARIOS.md (USD per million tokens), which the
// scenarios' expected costs are computed with: a new map each call, for a config to own.
func Scenarios() map[string]rulesconfig.PriceConfig {
	return map[string]rulesconfig.PriceConfig{
		"gpt-4o":      {InputPerMillion: 2.50, OutputPerMillion: 10.00},
		"gpt-4o-mini": {InputPerMillion: 0.15, OutputPerMillion: 0.60},
	}
}
