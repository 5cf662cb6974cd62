//go:build race

package orphanprocessor

// heldSpansAtShutdown is TestShutdownFlushFitsADefaultCollector's size under the race detector,
// which makes pdata's encoding, gzip and the processor's span path several times slower: 70,000
// spans (about 23 MB, still over a default receiver's 20 MiB). Without it: 500,000
// (norace_test.go).
const heldSpansAtShutdown = 70_000

// flushCompression is the exporter's compression in TestShutdownFlushFitsADefaultCollector:
// none under the race detector, which makes gzip most of the test's time (the receiver bounds
// the body it reads either way).
const flushCompression = "none"
