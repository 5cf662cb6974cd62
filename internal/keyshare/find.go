package keyshare

import (
	"fmt"

	"go.opentelemetry.io/collector/component"

	"github.com/orphanwatch/orphanwatch/extension/orphankeysextension"
)

// Find returns the orphan_keys extension named id among host's extensions: the one a
// component's `keys` setting names. The error names the `keys` field: the extension is not
// configured, or is of another type.
func Find(host component.Host, id component.ID) (orphankeysextension.Keys, error) {
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

// ConfigOf is the Sharer configuration of the extension k (its wait, max_records and
// max_waiting).
func ConfigOf(k orphankeysextension.Keys) Config {
	return Config{Wait: k.Wait(), MaxRecords: k.MaxRecords(), MaxWaiting: k.MaxWaiting()}
}
