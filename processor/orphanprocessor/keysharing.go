package orphanprocessor

import (
	"context"

	"go.opentelemetry.io/collector/processor"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor/internal/keyshare"
)

// Key sharing across a tier (README "Key sharing across a tier"): the processor's side is these
// helpers, each called from one marked line of processor.go; the logic is in internal/keyshare.

// keySharing is the processor's key-sharing state; the zero value is off.
type keySharing struct {
	share *keyshare.Sharer
	gate  *keyshare.Gate[*heldTrace]
}

// keyShareNew sets key sharing up when configured: keys are hashed with the shared HMAC from
// now on, and the correlator publishes to and looks up in the shared table.
func (p *orphanProcessor) keyShareNew(set processor.Settings) error {
	if !p.cfg.KeySharing.Enabled() {
		return nil
	}
	kc, err := p.cfg.KeySharing.keyshareConfig(context.Background())
	if err != nil {
		return err
	}
	s, err := keyshare.New(kc, set.TelemetrySettings)
	if err != nil {
		return err
	}
	p.ks.share = s
	p.reader.SetKeyHash(s.Hash)
	s.Attach(p.corr)
	return nil
}

// keyShareStart connects to the brokers and starts the gate that holds traces back for
// key_sharing.wait.
func (p *orphanProcessor) keyShareStart(ctx context.Context) error {
	if p.ks.share == nil {
		return nil
	}
	if err := p.ks.share.Start(ctx); err != nil {
		return err
	}
	p.ks.gate = keyshare.NewGate(p.ks.share,
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

// keyShareShutdown flushes what is being published and disconnects.
func (p *orphanProcessor) keyShareShutdown(ctx context.Context) error {
	if p.ks.share == nil {
		return nil
	}
	return p.ks.share.Shutdown(ctx)
}
