// Package metadata holds the orphan_keys extension's component metadata, written by hand in the
// shape mdatagen generates.
package metadata

import "go.opentelemetry.io/collector/component"

// Type is the extension's component type, `orphan_keys`.
var Type = component.MustNewType("orphan_keys")

// ScopeName is the instrumentation scope of the extension's internal telemetry.
const ScopeName = "github.com/orphanwatch/orphanwatch/extension/orphankeysextension"

// ExtensionStability is the stability level of the extension.
const ExtensionStability = component.StabilityLevelAlpha
