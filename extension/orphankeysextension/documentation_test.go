package orphankeysextension

import (
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/orphanwatch/orphanwatch/extension/orphankeysextension/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/telemetrydoc"
)

// TestDocumentationMatchesTelemetry keeps documentation.md in step with the instruments the
// extension creates: names, descriptions, units and types.
func TestDocumentationMatchesTelemetry(t *testing.T) {
	prov := &telemetrydoc.Provider{}
	set := componenttest.NewNopTelemetrySettings()
	set.MeterProvider = prov
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	if _, err := newKeys(cfg, component.NewID(metadata.Type), set); err != nil {
		t.Fatal(err)
	}
	insts := prov.Instruments()
	if len(insts) == 0 {
		t.Fatal("no instruments recorded")
	}
	for _, p := range telemetrydoc.Check("documentation.md", insts) {
		t.Error(p)
	}
}
