// Package testsupport holds what the tests share and nothing else ships: the scenario builders
// and their expected verdicts (scenarios), the end-to-end harness that builds and starts the
// distribution (e2e), and the reader of documentation.md and metadata.yaml that the telemetry
// documentation tests use (telemetrydoc). No component imports it.
package testsupport
