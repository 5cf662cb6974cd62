package telemetrydoc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/metric"
	embeddedmetric "go.opentelemetry.io/otel/metric/embedded"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	embeddedtrace "go.opentelemetry.io/otel/trace/embedded"
	nooptrace "go.opentelemetry.io/otel/trace/noop"
)

// Builder is a component's telemetry builder (metadata.TelemetryBuilder).
type Builder interface{ Shutdown() }

// NewBuilder creates a component's telemetry builder (metadata.NewTelemetryBuilder).
type NewBuilder func(component.TelemetrySettings) (Builder, error)

// Instruments creates the telemetry builder on a recording provider and returns the
// instruments it created; creating it must not fail.
func Instruments(t *testing.T, newBuilder NewBuilder) []Instrument {
	t.Helper()
	prov := &Provider{}
	set := componenttest.NewNopTelemetrySettings()
	set.MeterProvider = prov
	tb, err := newBuilder(set)
	require.NoError(t, err)
	tb.Shutdown()
	insts := prov.Instruments()
	require.NotEmpty(t, insts, "no instruments recorded")
	return insts
}

// CheckComponent keeps a component's documentation.md and metadata.yaml (in the test's
// folder, the component's) in step with the instruments its builder creates: documentation.md
// documents each instrument with its name, description, unit and type ([Check]), and every
// metric of metadata.yaml is created with the name, description, unit, type, value type and
// monotonicity mdatagen would generate from it, and no other ([FromMetadata]).
func CheckComponent(t *testing.T, newBuilder NewBuilder) {
	t.Helper()
	insts := Instruments(t, newBuilder)
	for _, p := range Check("documentation.md", insts) {
		t.Error(p)
	}
	want, err := FromMetadata("metadata.yaml")
	require.NoError(t, err)
	assert.Equal(t, want, insts)
}

// CheckScope requires meter and tracer (a metadata package's Meter and Tracer) to take their
// meter and tracer from the settings' providers under the instrumentation scope scope.
func CheckScope(t *testing.T, meter func(component.TelemetrySettings) metric.Meter, tracer func(component.TelemetrySettings) trace.Tracer, scope string) {
	t.Helper()
	asked := &scopes{}
	set := component.TelemetrySettings{MeterProvider: asked, TracerProvider: asked}
	meter(set)
	tracer(set)
	require.Equal(t, scope, asked.meter, "the meter's scope")
	require.Equal(t, scope, asked.tracer, "the tracer's scope")
}

// scopes is a meter and tracer provider that records the scope it is asked for.
type scopes struct {
	embeddedmetric.MeterProvider
	embeddedtrace.TracerProvider
	meter, tracer string
}

func (s *scopes) Meter(name string, _ ...metric.MeterOption) metric.Meter {
	s.meter = name
	return noopmetric.Meter{}
}

func (s *scopes) Tracer(name string, _ ...trace.TracerOption) trace.Tracer {
	s.tracer = name
	return nooptrace.Tracer{}
}
