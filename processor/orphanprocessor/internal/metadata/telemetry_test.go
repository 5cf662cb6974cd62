package metadata

import (
	"testing"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/telemetrydoc"
)

// TestProviders: the processor's meter and tracer are of its instrumentation scope. That the
// builder creates its instruments without an error, as metadata.yaml declares them, is
// TestMetadataMatchesTelemetry of the processor.
func TestProviders(t *testing.T) {
	telemetrydoc.CheckScope(t, Meter, Tracer, "github.com/orphanwatch/orphanwatch/processor/orphanprocessor")
}
