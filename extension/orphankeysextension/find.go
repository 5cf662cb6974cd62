package orphankeysextension

import (
	"fmt"

	"go.opentelemetry.io/collector/component"
)

// Find returns the orphan_keys extension named id among host's extensions: the one a
// component's `keys` setting names (the orphan processor's, the observing orphanmetrics
// exporter's). The error names the `keys` field: the extension is not configured, or is of
// another type.
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
