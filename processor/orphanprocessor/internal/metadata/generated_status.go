// Package metadata holds the orphan processor's component metadata and internal telemetry,
// written by hand in the shape mdatagen generates.
package metadata

import "go.opentelemetry.io/collector/component"

// Type is the processor's component type, `orphan`.
var Type = component.MustNewType("orphan")

// ScopeName is the instrumentation scope of the processor's internal telemetry.
const ScopeName = "github.com/orphanwatch/orphanwatch/processor/orphanprocessor"

// TracesStability is the stability level of the traces pipeline support.
const TracesStability = component.StabilityLevelAlpha
