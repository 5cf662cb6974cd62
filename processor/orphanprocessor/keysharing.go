package orphanprocessor

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"

	"github.com/orphanwatch/orphanwatch/internal/keyshare"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Key sharing across a tier (README "Key sharing across a tier"): the processor's side is these
// helpers, each called from one marked line of processor.go; the Kafka client and the records
// table are the orphan_keys extension's (extension/orphankeysextension), named by `keys` and
// found through internal/keyshare (Keys, Find), as is the per-trace state and the gate: the
// processor does not import the extension's package.

// keySharing is the processor's key-sharing state; the zero value is off.
type keySharing struct {
	share       *keyshare.Sharer
	gate        *keyshare.Gate[*heldTrace]
	unsubscribe func()
}

// keyShareStart finds the extension named by `keys`: from now on keys are hashed with its
// HMAC, the correlator publishes to and looks up in its table, and a gate holds traces back
// for its wait.
func (p *orphanProcessor) keyShareStart(_ context.Context, host component.Host) error {
	if p.cfg.Keys == nil {
		return nil
	}
	k, err := keyshare.Find(host, *p.cfg.Keys)
	if err != nil {
		return err
	}
	s := keyshare.New(keyshare.Config{Wait: k.Wait(), MaxRecords: k.MaxRecords(), MaxWaiting: k.MaxWaiting()}, k,
		func(ctx context.Context, outcome string, n int64) {
			p.tel.ProcessorOrphanKeyLookups.Add(ctx, n, p.tel.With("outcome", outcome))
		})
	p.ks.share = s
	p.reader.SetKeyHash(k.Hash)
	s.Attach(p.corr)
	p.ks.unsubscribe = k.Subscribe(s.Received)
	p.ks.gate = keyshare.NewGate(s,
		func(h *heldTrace) verdict.TraceID { return h.id },
		func(ready []*heldTrace) { _ = p.release(context.Background(), ready) })
	// Registered with the processor's other instruments: unregistered by their Shutdown.
	return p.tel.RegisterProcessorOrphanKeyTracesWaitingCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(int64(s.Waiting()), p.tel.ID)
		return nil
	})
}

// keyShareHold returns the traces of ready to decide now; the gate releases the others later.
func (p *orphanProcessor) keyShareHold(ready []*heldTrace) []*heldTrace {
	if p.ks.gate == nil || len(ready) == 0 {
		return ready
	}
	return p.ks.gate.Hold(ready)
}

// keyShareClose releases every trace still waiting (Shutdown: no span is lost).
func (p *orphanProcessor) keyShareClose() {
	if p.ks.gate != nil {
		p.ks.gate.Close()
	}
}

// keyShareShutdown stops listening to the extension (which outlives the processor: extensions
// shut down after the pipelines).
func (p *orphanProcessor) keyShareShutdown(context.Context) error {
	if p.ks.share == nil {
		return nil
	}
	if p.ks.unsubscribe != nil {
		p.ks.unsubscribe()
	}
	return nil
}
