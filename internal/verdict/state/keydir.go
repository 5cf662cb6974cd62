package state

import (
	"github.com/orphanwatch/orphanwatch/internal/bounded"
	"github.com/orphanwatch/orphanwatch/internal/verdict/record"
	"github.com/orphanwatch/orphanwatch/internal/verdict/rules"
)

// Key sharing across a tier of collectors (README "Scale"; processor README "Key sharing across
// a tier"). Routing by trace ID puts a trace that carries idempotency key K (a queue
// redelivery, a client re-sending) on another collector than the request whose root K binds it
// to. A KeyDirectory, set with SetKeyDirectory, shares what the members know of keys: the
// Correlator publishes each key it sees in a trace whose root is known and not detached, and
// asks the directory when its own index does not bind a key.
//
// The hooks in tables.go are four calls (keyDirRootLocked, keyDirKeyLocked, keyDirLinksLocked
// and the fallback in lookupKeyLocked); with no directory set they return at once.

// RootRef is what a directory holds of a root request: what judging work bound to it needs,
// and which trace and root span it is, so that work linked to one of two requests that sent
// the same key binds to its own.
type RootRef struct {
	Gone    int64 // unix ns: the earliest of the root's end and its deadline
	Service string
	Reason  record.EndReason
	Trace   record.TraceID // the trace whose root this is
	Root    record.SpanID  // the root span
}

// KeyDirectory shares idempotency-key bindings beyond one Correlator. Key hashes are the
// Correlator's KeyHash values: a directory that shares them beyond the process must make them
// a keyed hash (the processor does: HMAC-SHA256 under a configured secret).
//
// Every method is called with the Correlator's lock held: none may block or call back into
// the Correlator.
type KeyDirectory interface {
	// Lookup returns the root that key hash h binds to, as another member published it. When
	// several requests (traces) published h, it returns the record of a trace in linked if
	// there is one (linked may be nil), else the first record it holds.
	Lookup(h uint64, linked []record.TraceID) (RootRef, bool)
	// Publish tells the directory that key hash h was carried by a trace whose root is known
	// and is not detached work. It may be called more than once for a key.
	Publish(h uint64, root RootRef)
	// Carried tells the directory that trace t carried key hash h (every key-carrying span that
	// Observe sees), so that a trace can wait for a binding that has not come yet.
	Carried(t record.TraceID, h uint64)
	// Linked tells the directory that a span of trace t links to the traces in to (other traces
	// only; every linking span that Observe sees), so that a trace can wait for the binding of
	// the request it links to rather than take another request's that sent the same key.
	Linked(t record.TraceID, to []record.TraceID)
}

// Binding says where a key hash binds.
type Binding uint8

// Where a key binds: nowhere (yet), in this Correlator's own index, or through the directory.
const (
	BindingNone Binding = iota
	BindingLocal
	BindingRemote
)

// keyDir is the Correlator's side of key sharing: the directory and, for keys seen before
// their trace's root, the traces waiting for their root to publish their keys.
type keyDir struct {
	d       KeyDirectory
	pending *bounded.Table[record.TraceID, []uint64] // within MaxKeys traces, the oldest forgotten first
}

// maxPendingKeysPerTrace bounds the keys remembered for one trace whose root has not come.
const maxPendingKeysPerTrace = 8

// SetKeyDirectory is the Correlator's SetKeyDirectory, under mu.
func (c *Tables) SetKeyDirectory(d KeyDirectory) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d == nil {
		c.dir = nil
		return
	}
	c.dir = &keyDir{d: d, pending: bounded.New[record.TraceID, []uint64](c.cfg.MaxKeys, nil)}
}

// KeyBinding is the Correlator's KeyBinding, under mu.
func (c *Tables) KeyBinding(h uint64) Binding {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kt, ok := c.keys.get(h); ok {
		for i := uint8(0); i < kt.n; i++ {
			if rec, ok := c.roots.Get(kt.traces[i]); ok && !rec.Detached {
				return BindingLocal
			}
		}
	}
	if c.dir != nil {
		if _, ok := c.dir.d.Lookup(h, nil); ok {
			return BindingRemote
		}
	}
	return BindingNone
}

// KeyBindingLinked is the Correlator's KeyBindingLinked, under mu.
func (c *Tables) KeyBindingLinked(h uint64, linked []record.TraceID) Binding {
	if len(linked) == 0 {
		return c.KeyBinding(h)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kt, ok := c.keys.get(h); ok {
		for i := uint8(0); i < kt.n; i++ {
			if !rules.ContainsTrace(linked, kt.traces[i]) {
				continue
			}
			if rec, ok := c.roots.Get(kt.traces[i]); ok && !rec.Detached {
				return BindingLocal
			}
		}
	}
	if c.dir != nil {
		if ref, ok := c.dir.d.Lookup(h, linked); ok && rules.ContainsTrace(linked, ref.Trace) {
			return BindingRemote
		}
	}
	return BindingNone
}

// keyDirLinksLocked: span s links to other traces; the directory is told which.
func (c *Tables) keyDirLinksLocked(s *record.Span) {
	if c.dir == nil || len(s.Links) == 0 {
		return
	}
	var to []record.TraceID
	for _, l := range s.Links {
		if !l.TraceID.IsZero() && l.TraceID != s.TraceID && !rules.ContainsTrace(to, l.TraceID) {
			to = append(to, l.TraceID)
		}
	}
	if len(to) > 0 {
		c.dir.d.Linked(s.TraceID, to)
	}
}

func refOf(t record.TraceID, rec rules.RootRecord) RootRef {
	return RootRef{Gone: rec.Gone, Service: rec.Service, Reason: rec.Reason, Trace: t, Root: rec.ID}
}

// keyDirKeyLocked: span s carries a key. Published at once when its trace's root is known and
// not detached; remembered until the root comes otherwise.
func (c *Tables) keyDirKeyLocked(s *record.Span) {
	kd := c.dir
	if kd == nil {
		return
	}
	kd.d.Carried(s.TraceID, s.KeyHash)
	if rec, ok := c.roots.Get(s.TraceID); ok {
		if !rec.Detached {
			kd.d.Publish(s.KeyHash, refOf(s.TraceID, rec))
		}
		return
	}
	keys, _ := kd.pending.Get(s.TraceID)
	for _, k := range keys {
		if k == s.KeyHash {
			return
		}
	}
	if len(keys) < maxPendingKeysPerTrace {
		kd.pending.Put(s.TraceID, append(keys, s.KeyHash)) // a new trace evicts the oldest when full
	}
}

// keyDirRootLocked: trace t's root record is known (or changed): the keys its trace carried
// before are published, unless the root is detached work.
func (c *Tables) keyDirRootLocked(t record.TraceID) {
	kd := c.dir
	if kd == nil {
		return
	}
	keys, ok := kd.pending.Get(t)
	if !ok {
		return
	}
	kd.pending.Delete(t)
	if rec, ok := c.roots.Get(t); ok && !rec.Detached {
		for _, k := range keys {
			kd.d.Publish(k, refOf(t, rec))
		}
	}
}

// keyDirLookupLocked asks the directory for a key the local index does not bind; it returns the
// record's root and trace.
func (c *Tables) keyDirLookupLocked(h uint64, linked []record.TraceID) (rules.RootRecord, record.TraceID, bool) {
	if c.dir == nil {
		return rules.RootRecord{}, record.TraceID{}, false
	}
	ref, ok := c.dir.d.Lookup(h, linked)
	if !ok {
		return rules.RootRecord{}, record.TraceID{}, false
	}
	return rules.RootRecord{Gone: ref.Gone, Service: ref.Service, Reason: ref.Reason, ID: ref.Root}, ref.Trace, true
}
