package orphanmetricsexporter // import "github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter"

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/metricsrecording"
)

// metricsExporter serves a Recorder's metrics over HTTP for the collector.
type metricsExporter struct {
	cfg      *Config
	settings component.TelemetrySettings
	id       component.ID
	rec      metricsrecording.Recording
	tel      *metadata.TelemetryBuilder

	mu       sync.Mutex
	server   *http.Server
	serveErr chan error // receives the result of Serve, then is closed
}

func newMetricsExporter(cfg *Config, set exporter.Settings) (*metricsExporter, error) {
	tel, rec, err := newTelemetry(set, &cfg.Settings)
	if err != nil {
		return nil, err
	}
	return &metricsExporter{cfg: cfg, settings: set.TelemetrySettings, id: set.ID, rec: rec, tel: tel}, nil
}

// consumeTraces counts td: in observe mode the verdicts decided here, in annotate mode the
// attributes the orphan processor wrote. td is only read.
func (e *metricsExporter) consumeTraces(_ context.Context, td ptrace.Traces) error {
	e.rec.Consume(td)
	return nil
}

// handler serves the metrics at exactly cfg.Path and 404 elsewhere.
func (e *metricsExporter) handler() http.Handler {
	metrics := e.rec.Recorder.Handler()
	path := e.cfg.Path
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		metrics.ServeHTTP(w, r)
	})
}

func (e *metricsExporter) start(ctx context.Context, host component.Host) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.server != nil {
		return errors.New("orphanmetrics: already started")
	}
	ln, err := e.cfg.ToListener(ctx)
	if err != nil {
		return fmt.Errorf("orphanmetrics: listening on %q: %w", e.cfg.NetAddr.Endpoint, err)
	}
	srv, err := e.cfg.ToServer(ctx, host.GetExtensions(), e.settings, e.handler())
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("orphanmetrics: creating HTTP server: %w", err)
	}
	if e.rec.Observing != nil && e.cfg.Keys != nil {
		if err := e.shareKeys(host); err != nil {
			_ = ln.Close()
			return err
		}
	}
	e.server = srv
	e.serveErr = make(chan error, 1)
	e.rec.Start()
	e.settings.Logger.Info("Serving orphanwatch metrics",
		zap.String("endpoint", ln.Addr().String()), zap.String("path", e.cfg.Path))
	go func(done chan<- error) {
		defer close(done)
		err := srv.Serve(ln)
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.settings.Logger.Error("Metrics server failed", zap.Error(err))
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
			done <- err
		}
	}(e.serveErr)
	return nil
}

func (e *metricsExporter) shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rec.Stop() // what is still owed is counted before the last scrape
	e.tel.Shutdown()
	if e.server == nil {
		return nil
	}
	err := e.server.Shutdown(ctx)
	if err != nil {
		// ctx expired with scrapes still in flight: cut them.
		err = errors.Join(err, e.server.Close())
	}
	<-e.serveErr
	e.server = nil
	return err
}
