package orphanprocessor

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/processor"

	"github.com/orphanwatch/orphanwatch/extension/orphankeysextension"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/keyshare"
)

// Key sharing across a tier (README "Key sharing across a tier"): the processor's side is these
// helpers, each called from one marked line of processor.go; the Kafka client and the records
// table are the orphan_keys extension's (extension/orphankeysextension), named by `keys`; the
// per-trace state and the gate are in internal/keyshare.

// keySharing is the processor's key-sharing state; the zero value is off.
type keySharing struct {
	set         component.TelemetrySettings
	share       *keyshare.Sharer
	gate        *keyshare.Gate[*heldTrace]
	unsubscribe func()
}

// keyShareNew keeps what Start needs to set key sharing up.
func (p *orphanProcessor) keyShareNew(set processor.Settings) error {
	p.ks.set = set.TelemetrySettings
	return nil
}

// findKeys returns the orphan_keys extension named id among host's extensions.
func findKeys(host component.Host, id component.ID) (orphankeysextension.Keys, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("keys: extension %q is not configured: add it under extensions: and service::extensions", id)
	}
	k, ok := ext.(orphankeysextension.Keys)
	if !ok {
		return nil, fmt.Errorf("keys: extension %q is not an orphan_keys extension (type %q)", id, id.Type())
	}
	return k, nil
}

// keyShareStart finds the extension named by `keys`: from now on keys are hashed with its
// HMAC, the correlator publishes to and looks up in its table, and a gate holds traces back
// for its wait.
func (p *orphanProcessor) keyShareStart(_ context.Context, host component.Host) error {
	if p.cfg.Keys == nil {
		return nil
	}
	k, err := findKeys(host, *p.cfg.Keys)
	if err != nil {
		return err
	}
	s, err := keyshare.New(keyshare.Config{Wait: k.Wait(), MaxRecords: k.MaxRecords(), MaxWaiting: k.MaxWaiting()}, k, p.ks.set)
	if err != nil {
		return err
	}
	p.ks.share = s
	p.reader.SetKeyHash(k.Hash)
	s.Attach(p.corr)
	p.ks.unsubscribe = k.Subscribe(s.Received)
	p.ks.gate = keyshare.NewGate(s,
		func(h *heldTrace) verdict.TraceID { return h.id },
		func(ready []*heldTrace) { _ = p.release(context.Background(), ready) })
	return nil
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
	return p.ks.share.Shutdown()
}
