package orphanmetricsexporter // import "github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"

import (
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/config/confighttp"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
)

// Defaults of the configuration, see [Config]; the metric settings' defaults are
// internal/orphanmetrics' (orphanmetrics.NewDefaultSettings).
const (
	// DefaultEndpoint is where the metrics are served unless configured
	// otherwise: loopback only.
	DefaultEndpoint = "localhost:9464"
	// DefaultPath is the HTTP path of the metrics.
	DefaultPath = "/metrics"
)

// Config is the configuration of the orphanmetrics exporter.
type Config struct {
	// ServerConfig configures the HTTP server that serves the metrics
	// (endpoint, TLS, auth, CORS, timeouts...). Endpoint defaults to
	// [DefaultEndpoint].
	confighttp.ServerConfig `mapstructure:",squash"`

	// Path is the HTTP path the metrics are served at. It must start with
	// "/". Default [DefaultPath].
	Path string `mapstructure:"path"`

	// Settings are the metric settings (namespace, label_limits, series_limit,
	// outlive_buckets, hop_buckets, const_labels, dimensions), mode and, for observe mode, the
	// orphan processor's rule settings and limits, under the same keys as the orphanmetrics
	// connector's: internal/orphanmetrics.
	orphanmetrics.Settings `mapstructure:",squash"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Validate checks the configuration. Every problem is reported, each error
// naming its field (for example `path: must start with "/"`).
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if strings.TrimSpace(c.NetAddr.Endpoint) == "" {
		add("endpoint: must not be empty")
	}

	switch {
	case !strings.HasPrefix(c.Path, "/"):
		add("path: must start with %q, got %q", "/", c.Path)
	case strings.ContainsAny(c.Path, "?# \t\r\n"):
		add("path: must be a plain URL path without query, fragment or whitespace, got %q", c.Path)
	}

	return errors.Join(append(errs, c.ValidateMetrics(), c.ValidateMode())...)
}
