//go:build !race

package orphanprocessor

// heldSpansAtShutdown is TestShutdownFlushFitsADefaultCollector's size: issue 30's 500,000 spans
// held at shutdown (about 165 MB of OTLP). Under the race detector: race_test.go.
const heldSpansAtShutdown = 500_000

// flushCompression is the exporter's compression in TestShutdownFlushFitsADefaultCollector:
// its default (gzip). Under the race detector: race_test.go.
const flushCompression = ""
