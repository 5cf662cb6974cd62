// Package metadata holds the identity of the orphanmetrics exporter: its
// component type, stability and instrumentation scope. It is written by hand
// in the shape that mdatagen would generate.
package metadata // import "github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"

import "go.opentelemetry.io/collector/component"

var (
	// Type is the component type of the exporter as used in collector
	// configuration files ("orphanmetrics").
	Type = component.MustNewType("orphanmetrics")
	// ScopeName is the instrumentation scope of the exporter's own telemetry.
	ScopeName = "github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"
)

const (
	// TracesStability is the stability level of the traces exporter.
	TracesStability = component.StabilityLevelAlpha
)
