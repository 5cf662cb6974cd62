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
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/exporter/orphanmetricsexporter/internal/metadata"
	"github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
)

// metricsExporter serves a Recorder's metrics over HTTP for the collector.
type metricsExporter struct {
	cfg      *Config
	settings component.TelemetrySettings
	id       component.ID
	recorder *orphanmetrics.Recorder
	tel      *metadata.TelemetryBuilder
	obs      *orphanmetrics.Observing // observe mode; nil in annotate mode

	mu       sync.Mutex
	server   *http.Server
	serveErr chan error // receives the result of Serve, then is closed
}

func newMetricsExporter(cfg *Config, set exporter.Settings) (*metricsExporter, error) {
	rec, err := orphanmetrics.NewRecorder(&cfg.Settings)
	if err != nil {
		return nil, err
	}
	rec.LogSkips(set.Logger)
	tel, err := newTelemetry(set, rec)
	if err != nil {
		return nil, err
	}
	e := &metricsExporter{cfg: cfg, settings: set.TelemetrySettings, id: set.ID, recorder: rec, tel: tel}
	if cfg.Mode == orphanmetrics.ModeObserve {
		id := attribute.String(exporterAttribute, set.ID.String())
		latency := func(s float64) {
			tel.ExporterOrphanmetricsVerdictLatency.Record(context.Background(), s, metric.WithAttributes(id))
		}
		if e.obs, err = orphanmetrics.NewObserving(&cfg.Settings, rec, set.Logger, latency, nil); err == nil {
			err = e.obs.RegisterTelemetry(observeTelemetry(tel), id)
		}
		if err != nil {
			tel.Shutdown()
			return nil, err
		}
	}
	return e, nil
}

// consumeTraces counts td: in observe mode the verdicts decided here, in annotate mode the
// attributes the orphan processor wrote. td is only read.
func (e *metricsExporter) consumeTraces(_ context.Context, td ptrace.Traces) error {
	if e.obs != nil {
		e.obs.Consume(td)
		return nil
	}
	e.recorder.Record(td)
	return nil
}

// handler serves the metrics at exactly cfg.Path and 404 elsewhere.
func (e *metricsExporter) handler() http.Handler {
	metrics := e.recorder.Handler()
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
	if e.obs != nil && e.cfg.Keys != nil {
		if err := e.shareKeys(host); err != nil {
			_ = ln.Close()
			return err
		}
	}
	e.server = srv
	e.serveErr = make(chan error, 1)
	if e.obs != nil {
		e.obs.Start()
	}
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
	if e.obs != nil {
		e.obs.Shutdown() // what is still owed is counted before the last scrape
	}
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
