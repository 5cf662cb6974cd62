package observe

import (
	"github.com/orphanwatch/orphanwatch/internal/keyshare"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Key sharing across a tier (processor README, "Key sharing across a tier"), observing: the
// same Sharer and Gate as the orphan processor's (internal/keyshare), on the records of a trace
// instead of its spans. Each helper is called from one marked line of observe.go.

// ShareKeys makes the Observer share idempotency keys through s: from now on keys are read
// hashed with hash (the orphan_keys extension's HMAC), s is the correlator's key directory
// (look-ups in and publications to the extension's table), and a trace whose decision is due
// while a key it carries binds nowhere yet is held back by a keyshare.Gate for s's wait before
// it is decided. Call it once, before the first Consume and Tick.
func (o *Observer) ShareKeys(s *keyshare.Sharer, hash func(key string) uint64) {
	o.reader.SetKeyHash(hash)
	s.Attach(o.corr)
	o.gate = keyshare.NewGate(s,
		func(w *waiting) verdict.TraceID { return w.id },
		func(ready []*waiting) { o.decide(o.now(), ready) })
}

// keyHold returns the traces of ready to decide now; the gate decides the others later.
func (o *Observer) keyHold(ready []*waiting) []*waiting {
	if o.gate == nil || len(ready) == 0 {
		return ready
	}
	return o.gate.Hold(ready)
}

// keyClose decides every trace still held by the gate (Shutdown); the gate passes everything
// afterwards.
func (o *Observer) keyClose() {
	if o.gate != nil {
		o.gate.Close()
	}
}

// keyOwed is the number of traces the gate holds or is releasing (keyshare.Gate.Owed).
func (o *Observer) keyOwed() int {
	if o.gate == nil {
		return 0
	}
	return o.gate.Owed()
}
