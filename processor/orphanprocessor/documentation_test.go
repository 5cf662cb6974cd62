package orphanprocessor

import (
	"testing"

	"go.opentelemetry.io/collector/component"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/telemetrydoc"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// TestMetadataMatchesTelemetry keeps documentation.md and metadata.yaml in step with the
// instruments the processor creates: every metric of metadata.yaml is created by the builder,
// without an error, with the name, description, unit, type, value type and monotonicity
// mdatagen would generate from it, the builder creates no other, and documentation.md
// documents each with its name, description, unit and type.
func TestMetadataMatchesTelemetry(t *testing.T) {
	telemetrydoc.CheckComponent(t, func(set component.TelemetrySettings) (telemetrydoc.Builder, error) {
		return metadata.NewTelemetryBuilder(set)
	})
}
