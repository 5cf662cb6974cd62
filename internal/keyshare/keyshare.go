// Package keyshare is a deciding component's side of key sharing across a tier (processor
// README, "Key sharing across a tier"): the orphan processor's (annotate) and the orphanmetrics
// exporter's (observe, through internal/observe). It is the verdict.KeyDirectory of the
// component's Correlator over the records table of the orphan_keys extension
// (extension/orphankeysextension), which owns the Kafka client and the table; the Gate that
// holds a trace back while a key it carries binds nowhere yet. The component finds the
// extension that its `keys` names with Find, as a Keys: the interface is declared here and
// implemented by the extension, so neither component imports the extension's package.
//
// The Sharer remembers the keys each trace carried, waits up to Config.Wait for a binding
// (Gate), counts the look-ups as local, remote or missed, and a record that arrives for a key
// already decided as missed as late. Keys are the extension's keyed hashes (HMAC-SHA256 under
// its secret): the component's reader hashes with it, so no key leaves or stays in clear.
package keyshare

import (
	"context"
	"sync"
	"time"

	"github.com/orphanwatch/orphanwatch/internal/bounded"
	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// Config configures a component's side of key sharing (the orphan_keys extension's wait,
// max_waiting and max_records).
type Config struct {
	// Wait is how long a trace whose key binds nowhere yet waits for another member's record.
	Wait time.Duration
	// MaxRecords bounds the keys remembered per trace carried and missed (FIFO).
	MaxRecords int
	// MaxWaiting bounds the traces waiting; when full, a trace is decided without waiting.
	MaxWaiting int
}

// Table is the records table the Sharer looks keys up in and publishes to: the orphan_keys
// extension.
type Table interface {
	Lookup(h uint64, linked []verdict.TraceID) (verdict.RootRef, bool)
	Publish(h uint64, ref verdict.RootRef)
}

// Sharer is one component's side of key sharing: the verdict.KeyDirectory of its Correlator
// over the extension's Table, with what it remembers of its own traces' keys.
type Sharer struct {
	cfg Config
	tab Table

	carMu   sync.Mutex
	carried *bounded.Table[verdict.TraceID, carried] // MaxRecords traces, the oldest evicted first

	missMu  sync.Mutex
	missed  *bounded.Table[uint64, struct{}] // MaxRecords keys, the oldest evicted first
	updated chan struct{}                    // buffered 1: records arrived
	corr    *verdict.Correlator

	lookups  Counter
	waitingN func() int
}

// carried is what a trace carried: its keys, and the other traces it links to.
type carried struct {
	keys   []uint64
	linked []verdict.TraceID
}

// maxCarriedKeys bounds the keys, and the linked traces, remembered for one trace.
const maxCarriedKeys = 8

// Look-up outcomes, the `outcome` attribute of otelcol_processor_orphan_key_lookups and
// otelcol_exporter_orphanmetrics_key_lookups.
const (
	OutcomeLocal  = "local"
	OutcomeRemote = "remote"
	OutcomeMissed = "missed"
	OutcomeLate   = "late"
)

// Counter counts n look-ups with outcome (OutcomeLocal and the others): the processor's
// otelcol_processor_orphan_key_lookups or the exporter's
// otelcol_exporter_orphanmetrics_key_lookups, with the component's attribute (metadata.yaml).
type Counter func(ctx context.Context, outcome string, n int64)

// New returns a Sharer over tab, counting its look-ups with lookups.
func New(cfg Config, tab Table, lookups Counter) *Sharer {
	return &Sharer{
		cfg:     cfg,
		tab:     tab,
		carried: bounded.New[verdict.TraceID, carried](cfg.MaxRecords, nil),
		missed:  bounded.New[uint64, struct{}](cfg.MaxRecords, nil),
		updated: make(chan struct{}, 1),
		lookups: lookups,
	}
}

// Waiting returns how many traces wait for a key record (the gate's; 0 before a Gate is made):
// the processor's otelcol_processor_orphan_key_traces_waiting, the exporter's
// otelcol_exporter_orphanmetrics_key_traces_waiting.
func (s *Sharer) Waiting() int {
	if f := s.waitingN; f != nil {
		return f()
	}
	return 0
}

// Attach makes s the key directory of c.
func (s *Sharer) Attach(c *verdict.Correlator) {
	s.corr = c
	c.SetKeyDirectory(s)
}

// Received is told the key hashes of records read from the topic (the extension's Subscribe):
// a key already decided as missed counts as late, and the gate looks again at its waiting
// traces. It does not block.
func (s *Sharer) Received(hashes []uint64) {
	var late int64
	s.missMu.Lock()
	for _, h := range hashes {
		if _, ok := s.missed.Get(h); ok {
			s.missed.Delete(h)
			late++
		}
	}
	s.missMu.Unlock()
	if late > 0 {
		s.lookups(context.Background(), OutcomeLate, late)
	}
	select {
	case s.updated <- struct{}{}:
	default:
	}
}

// Lookup implements verdict.KeyDirectory.
func (s *Sharer) Lookup(h uint64, linked []verdict.TraceID) (verdict.RootRef, bool) {
	return s.tab.Lookup(h, linked)
}

// Publish implements verdict.KeyDirectory.
func (s *Sharer) Publish(h uint64, ref verdict.RootRef) { s.tab.Publish(h, ref) }

// Carried implements verdict.KeyDirectory: trace t carried key hash h.
func (s *Sharer) Carried(t verdict.TraceID, h uint64) {
	s.carMu.Lock()
	defer s.carMu.Unlock()
	c := s.entryLocked(t)
	for _, k := range c.keys {
		if k == h {
			return
		}
	}
	if len(c.keys) < maxCarriedKeys {
		c.keys = append(c.keys, h)
		s.carried.Put(t, c)
	}
}

// Linked implements verdict.KeyDirectory: a span of trace t links to the traces in to.
func (s *Sharer) Linked(t verdict.TraceID, to []verdict.TraceID) {
	s.carMu.Lock()
	defer s.carMu.Unlock()
	c := s.entryLocked(t)
next:
	for _, u := range to {
		for _, l := range c.linked {
			if l == u {
				continue next
			}
		}
		if len(c.linked) < maxCarriedKeys {
			c.linked = append(c.linked, u)
		}
	}
	s.carried.Put(t, c)
}

// entryLocked returns what is kept of trace t (nothing yet when it is new: put, it evicts the
// oldest trace at MaxRecords).
func (s *Sharer) entryLocked(t verdict.TraceID) carried {
	c, _ := s.carried.Get(t)
	return c
}

// keysOf returns the keys trace t carried and the traces it links to.
func (s *Sharer) keysOf(t verdict.TraceID) ([]uint64, []verdict.TraceID) {
	s.carMu.Lock()
	defer s.carMu.Unlock()
	c, _ := s.carried.Get(t)
	return c.keys, c.linked
}

// forget drops what is kept of trace t's keys once it is decided.
func (s *Sharer) forget(t verdict.TraceID) {
	s.carMu.Lock()
	s.carried.Delete(t)
	s.carMu.Unlock()
}

// bound reports whether every key binds: to a trace in linked, when the trace links to others
// (it waits for the request it links to rather than take another request's that sent the same
// key), else anywhere. When final is set, it counts the look-ups, each key by where it binds
// now (the decision falls back to any binding when the linked request's never came).
func (s *Sharer) bound(keys []uint64, linked []verdict.TraceID, final bool) bool {
	all := true
	var local, remote, missed int64
	for _, k := range keys {
		if !final {
			if s.corr.KeyBindingLinked(k, linked) == verdict.BindingNone {
				return false
			}
			continue
		}
		switch s.corr.KeyBinding(k) {
		case verdict.BindingLocal:
			local++
		case verdict.BindingRemote:
			remote++
		default:
			all = false
			missed++
			s.noteMissed(k)
		}
	}
	if final {
		ctx := context.Background()
		if local > 0 {
			s.lookups(ctx, OutcomeLocal, local)
		}
		if remote > 0 {
			s.lookups(ctx, OutcomeRemote, remote)
		}
		if missed > 0 {
			s.lookups(ctx, OutcomeMissed, missed)
		}
	}
	return all
}

func (s *Sharer) noteMissed(k uint64) {
	s.missMu.Lock()
	defer s.missMu.Unlock()
	if _, ok := s.missed.Get(k); ok {
		return
	}
	s.missed.Put(k, struct{}{}) // a new key evicts the oldest at MaxRecords
}
