// Package orphanmetrics is the recorder shared by the orphanmetrics exporter and the
// orphanmetrics connector: the [Settings] both squash into their configuration (same YAML keys,
// defaults and validation), the [Recorder] that turns spans into the Prometheus series, and
// [Observing], observe mode's decision core feeding it. Neither component imports the other;
// both import this package, so their series cannot drift apart.
//
// Programs other than the collector (the orphanwatch CLI, the benchmarks) use it to obtain the
// same metrics in-process: [NewRecorder] and [WriteText].
package orphanmetrics // import "github.com/orphanwatch/orphanwatch/internal/orphanmetrics"
