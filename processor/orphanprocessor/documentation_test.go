package orphanprocessor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/telemetrydoc"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// builderInstruments creates the telemetry builder on a recording provider and returns the
// instruments it created.
func builderInstruments(t *testing.T) []telemetrydoc.Instrument {
	t.Helper()
	prov := &telemetrydoc.Provider{}
	set := componenttest.NewNopTelemetrySettings()
	set.MeterProvider = prov
	tb, err := metadata.NewTelemetryBuilder(set)
	require.NoError(t, err)
	tb.Shutdown()
	insts := prov.Instruments()
	require.NotEmpty(t, insts, "no instruments recorded")
	return insts
}

// TestDocumentationMatchesTelemetry keeps documentation.md in step with the instruments the
// processor creates: names, descriptions, units and types.
func TestDocumentationMatchesTelemetry(t *testing.T) {
	for _, p := range telemetrydoc.Check("documentation.md", builderInstruments(t)) {
		t.Error(p)
	}
}

// TestMetadataMatchesTelemetry: every metric of metadata.yaml is created by the builder, with
// the name, description, unit, type, value type and monotonicity mdatagen would generate from
// it, and the builder creates no other.
func TestMetadataMatchesTelemetry(t *testing.T) {
	want, err := telemetrydoc.FromMetadata("metadata.yaml")
	require.NoError(t, err)
	assert.Equal(t, want, builderInstruments(t))
}
