package orphanmetricsexporter // import "github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"

import (
	"io"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
)

// Recorder turns spans annotated with orphanwatch.* verdicts into the exporter's Prometheus
// metrics, without the collector or HTTP: the recorder the exporter and the orphanmetrics
// connector run (internal/orphanmetrics). Safe for concurrent use; its counters only grow.
type Recorder = orphanmetrics.Recorder

// NewRecorder returns a Recorder for the metric settings of cfg (namespace, label limits,
// series limit, buckets, constant labels, dimensions; the HTTP settings are ignored). A nil cfg
// means [NewDefaultConfig]. It returns an error, naming the field, if those settings are
// invalid.
func NewRecorder(cfg *Config) (*Recorder, error) {
	if cfg == nil {
		return orphanmetrics.NewRecorder(nil)
	}
	return orphanmetrics.NewRecorder(&cfg.Settings)
}

// WriteText is a shortcut for programs that want the metrics of some traces as Prometheus text
// without running the exporter: it records every td into a new [Recorder] for cfg (nil means
// defaults) and writes the result to w.
func WriteText(w io.Writer, cfg *Config, td ...ptrace.Traces) error {
	if cfg == nil {
		return orphanmetrics.WriteText(w, nil, td...)
	}
	return orphanmetrics.WriteText(w, &cfg.Settings, td...)
}
