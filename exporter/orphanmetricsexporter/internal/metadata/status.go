// Package metadata holds the orphanmetrics exporter's component metadata, written by hand from its
// metadata.yaml (mdatagen's schema) in the shape mdatagen generates: the component type,
// stability and instrumentation scope (status.go) and the instruments of the telemetry section
// (telemetry.go, built with internal/telemetrybuilder). TestMetadataMatchesTelemetry checks the
// instruments against metadata.yaml and documentation.md.
package metadata

import "go.opentelemetry.io/collector/component"

// Type is the exporter's component type, `orphanmetrics`.
var Type = component.MustNewType("orphanmetrics")

// ScopeName is the instrumentation scope of the exporter's internal telemetry.
const ScopeName = "github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"

// TracesStability is the stability level of the exporter's traces component.
const TracesStability = component.StabilityLevelAlpha
