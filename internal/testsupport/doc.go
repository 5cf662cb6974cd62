// Package testsupport holds what the tests share and nothing else ships: the scenario builders
// and their expected verdicts (scenarios), the end-to-end harness that builds and starts the
// distribution (e2e), the reader of documentation.md and metadata.yaml that the telemetry
// documentation tests use (telemetrydoc), the orphan_keys extension made through its factory
// for the tests of the components that name it (keystest), the checks mdatagen generates for
// every component (componentcheck), the walk over a Traces' spans (tdwalk), the reading of
// verdicts carried as orphanwatch.verdict events (carried), the scenarios' price table (prices)
// and a certificate authority for TLS on loopback (testpki). No component imports it.
package testsupport
