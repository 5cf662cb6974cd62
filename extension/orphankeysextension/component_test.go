package orphankeysextension

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/componentcheck"
)

// TestComponent runs the checks mdatagen generates for an extension
// (internal/testsupport/componentcheck). Nothing listens on the brokers: start-up goes on
// after topic.check_timeout.
func TestComponent(t *testing.T) {
	componentcheck.Check(t, NewFactory(), "orphan_keys", componentcheck.Lifecycle{
		Configure: func(cfg component.Config) {
			c := cfg.(*Config)
			c.Brokers = []string{"127.0.0.1:1"}
			c.Topic.CheckTimeout = 200 * time.Millisecond
			c.DialTimeout = 100 * time.Millisecond
		},
	})
}
