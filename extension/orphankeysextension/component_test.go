package orphankeysextension

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/orphanwatch/orphanwatch/extension/orphankeysextension/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
)

// The checks mdatagen generates for an extension (internal/testsupport/componentcheck).

func TestComponentFactory(t *testing.T) {
	componentcheck.Factory(t, NewFactory(), "orphan_keys")
}

func TestComponentLifecycle(t *testing.T) {
	factory := NewFactory()
	cfg := componentcheck.Config(t, factory, "orphan_keys")
	// Nothing listens there: start-up goes on after topic.check_timeout.
	cfg.(*Config).Brokers = []string{"127.0.0.1:1"}
	cfg.(*Config).Topic.CheckTimeout = 200 * time.Millisecond
	cfg.(*Config).DialTimeout = 100 * time.Millisecond
	componentcheck.Lifecycle{
		Create: func() (component.Component, error) {
			return factory.Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
		},
	}.Run(t)
}
