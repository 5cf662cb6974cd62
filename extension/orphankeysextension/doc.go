// Package orphankeysextension provides the `orphan_keys` extension: it shares what the members
// of a tier of orphan processors know of idempotency keys through a compacted Kafka topic
// (README, and the orphan processor's README "Key sharing across a tier").
//
// Routing by trace ID puts trace B (a queue redelivery, a client re-sending with key K) on
// another member than trace A whose root K binds it to. Each member publishes a small record
// per key carried by a trace whose root is known and not detached, and reads the topic whole
// from its earliest offset (no consumer group: every member needs every record, and a restart
// rebuilds the table). Keys are hashed with HMAC-SHA256 under a configured secret, truncated to
// 64 bits, never sent or kept in clear. A record names the trace and root span it came from, so
// that two requests that sent one key each bind their own work.
//
// The extension owns the Kafka client (configured with contrib's configkafka.ClientConfig) and
// the table of records; each orphan processor or observing orphanmetrics exporter that names it
// (`keys: orphan_keys`) finds it through component.Host as an internal/keyshare.Keys (the
// interface the extension implements, declared there so that no component imports this package)
// and keeps its own per-trace state (internal/keyshare).
package orphankeysextension
