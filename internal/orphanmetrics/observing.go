package orphanmetrics // import "github.com/orphanwatch/orphanwatch/internal/orphanmetrics"

import (
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/orphanwatch/orphanwatch/internal/keyshare"
	"github.com/orphanwatch/orphanwatch/internal/observe"
	"github.com/orphanwatch/orphanwatch/internal/rulesconfig"
)

// Observing is observe mode for a [Recorder]: an internal/observe Observer deciding the
// verdicts of the spans given to Consume, counted by the recorder, and the loop that counts
// what becomes due later (Tick, every observe.TickInterval). The exporter and the connector
// run one each in observe mode.
type Observing struct {
	obs   *observe.Observer
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	keys  *keyshare.Sharer // key sharing; nil when off
	unsub func()
}

// NewObserving returns observe mode for rec with cfg's rules and limits (cfg.Mode must be
// observe). logger says once when spans arrive with verdicts already written; latency, when
// set, receives each request's verdict latency in seconds. Now, when set, is the clock.
func NewObserving(cfg *Settings, rec *Recorder, logger *zap.Logger, latency func(float64), now func() time.Time) (*Observing, error) {
	sink := newObserveSink(rec, func() {
		logger.Warn("Spans arrive with orphanwatch.* verdicts already written (an orphan processor before this component?). "+
			"In mode: observe the verdicts are decided here and those attributes are ignored. "+
			"To count the processor's verdicts set mode: annotate; to observe, remove the orphan processor from the pipeline.",
			zap.String("mode", cfg.Mode))
	})
	obs, err := observe.New(cfg.Config, cfg.Limits, sink, observe.Settings{
		Now: now, Latency: latency, PrefixPriced: rulesconfig.PrefixPricedLogger(logger),
	})
	if err != nil {
		return nil, err
	}
	rulesconfig.LogAttributes(logger, cfg.Attributes.Effective())
	return &Observing{obs: obs}, nil
}

// Observer is the decision core's driver (for telemetry and tests).
func (o *Observing) Observer() *observe.Observer { return o.obs }

// Consume decides and counts td's spans; td is only read.
func (o *Observing) Consume(td ptrace.Traces) { o.obs.Consume(td) }

// ShareKeys shares idempotency keys across a tier through the orphan_keys extension named id,
// found among host's extensions (processor README, "Key sharing across a tier"): keys are read
// as its HMAC, looked up in and published to its table, and a trace whose key binds nowhere yet
// waits up to its wait before it is decided. lookups counts each key's look-up by outcome.
// Call it before Start; the error names the `keys` field.
func (o *Observing) ShareKeys(host component.Host, id component.ID, lookups keyshare.Counter) error {
	k, err := keyshare.Find(host, id)
	if err != nil {
		return err
	}
	s := keyshare.New(keyshare.Config{Wait: k.Wait(), MaxRecords: k.MaxRecords(), MaxWaiting: k.MaxWaiting()}, k, lookups)
	o.obs.ShareKeys(s, k.Hash)
	o.keys = s
	o.unsub = k.Subscribe(s.Received)
	return nil
}

// KeyTracesWaiting is the number of traces waiting for a key record (0 without key sharing).
func (o *Observing) KeyTracesWaiting() int {
	if o.keys == nil {
		return 0
	}
	return o.keys.Waiting()
}

// Start launches the loop that counts what becomes due (held roots, runs closed by their
// timeout, spans whose root never came).
func (o *Observing) Start() {
	o.stop, o.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(o.done)
		t := time.NewTicker(observe.TickInterval)
		defer t.Stop()
		for {
			select {
			case <-o.stop:
				return
			case <-t.C:
				o.obs.Tick()
			}
		}
	}()
}

// Shutdown stops the loop and counts everything still owed (open runs closed with the
// outcome they have, spans whose root never came judged without it).
func (o *Observing) Shutdown() {
	o.once.Do(func() {
		if o.stop != nil {
			close(o.stop)
			<-o.done
		}
		o.obs.Shutdown()
		if o.unsub != nil {
			// The extension outlives the exporter (extensions shut down after the pipelines).
			o.unsub()
		}
	})
}
