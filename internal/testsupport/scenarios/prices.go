package scenarios

import "github.com/orphanwatch/orphanwatch/internal/rules"

// Prices returns the price table of SCENARIOS.md (USD per million tokens), which the
// scenarios' expected costs are computed with: a new map each call, for a config to own.
func Prices() map[string]rules.PriceConfig {
	return map[string]rules.PriceConfig{
		"gpt-4o":      {InputPerMillion: 2.50, OutputPerMillion: 10.00},
		"gpt-4o-mini": {InputPerMillion: 0.15, OutputPerMillion: 0.60},
	}
}
