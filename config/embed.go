// Package config holds orphanwatch's shipped configuration files. The collector's default
// pipeline is embedded so that cmd/otelcol-orphanwatch runs without --config.
package config

import _ "embed"

// Collector is config/collector.yaml: the default pipeline of the orphanwatch distribution.
//
//go:embed collector.yaml
var Collector string
