// Package testsupport holds what the tests share and nothing else ships: the scenario builders
// and their expected verdicts (scenarios), the end-to-end harness that builds and starts the
// distribution (e2e), the reader of documentation.md and metadata.yaml that the telemetry
// documentation tests use (telemetrydoc), the orphan_keys extension made through its factory
// for the tests of the components that name it (keystest), the checks mdatagen generates for
// every component (componentcheck), the walk over a Traces' spans (tdwalk), the scenarios'
// price table (prices), a certificate authority for TLS on loopback (testpki), batches through
// the orphan processor (judged), hand-made spans (spanbuild), the generated shapes of the
// arrival properties (shapegen), the key look-up counter (lookupcount), promtool and amtool
// (tooltest), the listeners of a config (listenhost), a GET's body (httpbody), an OTLP receiver on loopback (otlprecv), and what the
// recorder's and the key-sharing tests share (recordertest, keytier, owntelemetry). No
// component imports it.
package testsupport
