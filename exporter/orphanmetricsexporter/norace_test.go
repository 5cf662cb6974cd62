//go:build !race

package orphanmetricsexporter

// raceEnabled is set when the tests run under the race detector.
const raceEnabled = false
