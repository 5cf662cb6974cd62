//go:build !race

package orphanmetrics

// raceEnabled is set when the tests run under the race detector.
const raceEnabled = false
