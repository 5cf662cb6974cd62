package main

import (
	"go.opentelemetry.io/collector/otelcol"

	"github.com/orphanwatch/orphanwatch/internal/distribution"
)

// components lists the factories of the orphanwatch distribution (internal/distribution).
func components() (otelcol.Factories, error) { return distribution.Components() }
