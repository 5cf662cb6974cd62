package metadata

import (
	"testing"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/telemetrydoc"
)

// TestProviders: the connector's meter and tracer are of its instrumentation scope. That the
// builder creates its instruments without an error, as metadata.yaml declares them, is
// TestMetadataMatchesTelemetry of the connector.
func TestProviders(t *testing.T) {
	telemetrydoc.CheckScope(t, Meter, Tracer, "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector")
}
