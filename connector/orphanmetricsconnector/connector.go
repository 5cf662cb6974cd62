package orphanmetricsconnector // import "github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/metricsrecording"
)

// metricsConnector records spans as the orphanmetrics exporter does ([metricsrecording.Recording])
// and, every metrics_flush_interval and once more at shutdown, sends everything it has
// accumulated to the metrics pipeline as OTLP metrics: cumulative, or with
// aggregation_temporality delta what changed since the last flush that went.
type metricsConnector struct {
	cfg    *Config
	logger *zap.Logger
	rec    metricsrecording.Recording
	next   consumer.Metrics
	tel    *telemetry
	conv   converter

	flushMu sync.Mutex // one flush at a time

	mu      sync.Mutex
	started bool
	stop    chan struct{}
	stopped chan struct{}
}

func newConnector(cfg *Config, set connector.Settings, next consumer.Metrics) (*metricsConnector, error) {
	tel, rec, err := newTelemetry(set, &cfg.Settings)
	if err != nil {
		return nil, err
	}
	conv := newConverter(cfg.Namespace, set.BuildInfo.Version, pcommon.NewTimestampFromTime(time.Now()), set.Resource)
	conv.delta = cfg.temporality() == TemporalityDelta
	return &metricsConnector{
		cfg:    cfg,
		logger: set.Logger,
		rec:    rec,
		next:   next,
		tel:    tel,
		conv:   conv,
	}, nil
}

func (c *metricsConnector) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeTraces counts td: in observe mode the verdicts decided here, in annotate mode the
// attributes the orphan processor wrote. It never fails (malformed attributes are counted in
// <namespace>.spans_skipped, as by the exporter). td is only read.
func (c *metricsConnector) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	c.rec.Consume(td)
	return nil
}

func (c *metricsConnector) Start(context.Context, component.Host) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("orphanmetrics: already started")
	}
	c.started = true
	c.rec.Start()
	c.stop, c.stopped = make(chan struct{}), make(chan struct{})
	go c.loop(c.stop, c.stopped)
	return nil
}

func (c *metricsConnector) loop(stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	t := time.NewTicker(c.cfg.MetricsFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := c.flush(context.Background()); err != nil {
				c.logger.Warn("Sending orphanwatch metrics failed; the next flush sends them again", zap.Error(err))
			}
		}
	}
}

// Shutdown stops the flush loop and sends the metrics once more: the collector shuts the
// metrics pipeline's exporters down after its connectors, so the last spans are not lost.
func (c *metricsConnector) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.tel.Shutdown()
	if !c.started {
		return nil
	}
	c.started = false
	close(c.stop)
	<-c.stopped
	c.rec.Stop() // what is still owed is counted, then flushed below
	if err := c.flush(ctx); err != nil {
		return fmt.Errorf("orphanmetrics: final flush: %w", err)
	}
	return nil
}

// flush sends the recorder's current state to the next consumer.
func (c *metricsConnector) flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	began := time.Now()
	mfs, err := c.rec.Recorder.Gatherer().Gather()
	if err != nil {
		c.tel.flushed(ctx, false)
		return fmt.Errorf("gathering metrics: %w", err)
	}
	md := c.conv.convert(mfs, pcommon.NewTimestampFromTime(began))
	if md.DataPointCount() == 0 {
		c.conv.commit() // nothing gained since the last flush: the next deltas start here
		return nil
	}
	err = c.next.ConsumeMetrics(ctx, md)
	c.tel.flushed(ctx, err == nil)
	if err == nil {
		// Exemplars taken before this flush began have been sent: the next flush leaves them
		// out (a failed flush sends them again). So have the deltas: the next start here (a
		// failed flush's are sent again, with the next ones, from the last flush that went).
		c.conv.exemplarsSince = began
		c.conv.commit()
	}
	return err
}
