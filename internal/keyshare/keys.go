package keyshare

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
)

// Keys is what the orphan_keys extension (extension/orphankeysextension) offers the components
// whose `keys` setting names it (the orphan processor, the observing orphanmetrics exporter).
// It is declared here, not in the extension's package, so that no component imports another
// component's package: the extension implements it, the components find it with Find.
type Keys interface {
	extension.Extension
	// Table: Lookup returns the root that key hash h binds to, from the records read (the
	// record of a trace in linked if one was read, else the first kept; verdict.KeyDirectory).
	// Publish hands a record to the producer without waiting (a full buffer drops it,
	// counted); a record is published once per key, trace and gone time.
	Table
	// Hash returns the keyed hash of an idempotency key: HMAC-SHA256 under the extension's
	// secret, its first 64 bits, never 0. Components hash keys with it as they read them: what
	// leaves the process cannot be reversed by hashing guessed keys without the secret.
	Hash(key string) uint64
	// Subscribe calls fn with the key hashes of each batch of records read, from the reading
	// goroutine (fn must not block), until the returned function is called.
	Subscribe(fn func(hashes []uint64)) (unsubscribe func())
	// Wait, MaxWaiting and MaxRecords are the extension's wait, max_waiting and max_records,
	// which the components apply to their own per-trace state (Config).
	Wait() time.Duration
	MaxWaiting() int
	MaxRecords() int
}

// Find returns the orphan_keys extension named id among host's extensions: the one a
// component's `keys` setting names. The error names the `keys` field: the extension is not
// configured, or is of another type.
func Find(host component.Host, id component.ID) (Keys, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("keys: extension %q is not configured: add it under extensions: and service::extensions", id)
	}
	k, ok := ext.(Keys)
	if !ok {
		return nil, fmt.Errorf("keys: extension %q is not an orphan_keys extension (type %q)", id, id.Type())
	}
	return k, nil
}
