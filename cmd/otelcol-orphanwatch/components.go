package main

import (
	"go.opentelemetry.io/collector/otelcol"

	"github.com/orphanwatch/orphanwatch/distribution"
)

// components lists the factories of the orphanwatch distribution: OCB's components for
// builder-config.yaml (package distribution).
func components() (otelcol.Factories, error) { return distribution.Components() }
