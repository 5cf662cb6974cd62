// Package metadata holds the orphanmetrics connector's component metadata, written by hand from its
// metadata.yaml (mdatagen's schema) in the shape mdatagen generates: the component type,
// stability and instrumentation scope (status.go) and the instruments of the telemetry section
// (telemetry.go, built with internal/telemetrybuilder). TestMetadataMatchesTelemetry checks the
// instruments against metadata.yaml and documentation.md.
package metadata

import "go.opentelemetry.io/collector/component"

// Type is the connector's component type, `orphanmetrics`.
var Type = component.MustNewType("orphanmetrics")

// ScopeName is the instrumentation scope of the connector's internal telemetry.
const ScopeName = "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"

// TracesToMetricsStability is the stability level of the connector's traces-to-metrics component.
const TracesToMetricsStability = component.StabilityLevelAlpha
