// Package metadata holds the orphan processor's component metadata, written by hand from its
// metadata.yaml (mdatagen's schema) in the shape mdatagen generates: the component type,
// stability and instrumentation scope (status.go) and the instruments of the telemetry section
// (telemetry.go, built with internal/telemetrybuilder). TestMetadataMatchesTelemetry checks the
// instruments against metadata.yaml and documentation.md.
package metadata

import "go.opentelemetry.io/collector/component"

// Type is the processor's component type, `orphan`.
var Type = component.MustNewType("orphan")

// ScopeName is the instrumentation scope of the processor's internal telemetry.
const ScopeName = "github.com/orphanwatch/orphanwatch/processor/orphanprocessor"

// TracesStability is the stability level of the processor's traces component.
const TracesStability = component.StabilityLevelAlpha
