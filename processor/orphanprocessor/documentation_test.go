package orphanprocessor

import (
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/orphanwatch/orphanwatch/internal/telemetrydoc"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/metadata"
)

// TestDocumentationMatchesTelemetry keeps documentation.md in step with the instruments the
// processor creates: names, descriptions, units and types.
func TestDocumentationMatchesTelemetry(t *testing.T) {
	prov := &telemetrydoc.Provider{}
	set := componenttest.NewNopTelemetrySettings()
	set.MeterProvider = prov
	tb, err := metadata.NewTelemetryBuilder(set, component.NewID(metadata.Type), nil)
	if err != nil {
		t.Fatal(err)
	}
	tb.Shutdown()
	insts := prov.Instruments()
	if len(insts) == 0 {
		t.Fatal("no instruments recorded")
	}
	for _, p := range telemetrydoc.Check("documentation.md", insts) {
		t.Error(p)
	}
}
