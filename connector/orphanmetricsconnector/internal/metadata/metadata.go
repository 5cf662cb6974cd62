// Package metadata holds the identity of the orphanmetrics connector: its component type,
// stability and instrumentation scope. It is written by hand in the shape that mdatagen would
// generate.
package metadata // import "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector/internal/metadata"

import "go.opentelemetry.io/collector/component"

var (
	// Type is the component type of the connector as used in collector configuration files
	// ("orphanmetrics", the same as the exporter's: connectors and exporters are configured in
	// sections of their own).
	Type = component.MustNewType("orphanmetrics")
	// ScopeName is the instrumentation scope of the connector's own telemetry and of the
	// metrics it emits.
	ScopeName = "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"
)

const (
	// TracesToMetricsStability is the stability level of the traces-to-metrics connector.
	TracesToMetricsStability = component.StabilityLevelAlpha
)
