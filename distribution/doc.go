// Package distribution is the component list of the orphanwatch collector distribution
// (cmd/otelcol-orphanwatch), for the command and for the tests that build the same collector
// in-process (test/scaleout): one list, so that they cannot drift apart.
//
// The list is the OCB manifest cmd/otelcol-orphanwatch/builder-config.yaml; components.go is
// what OCB (go.opentelemetry.io/collector/cmd/builder) generates from it, renamed into this
// package by gen.sh. To add a component, add it to the manifest and run
//
//	go generate ./distribution && go mod tidy
//
// TestManifestMatchesComponents fails while the manifest and components.go differ.
//
// Every component that listens binds localhost by default (the contrib jaeger receiver's
// defaults are localhost:14250, 14268, 6831 and 6832); the kafka receiver and exporter are
// clients of the brokers configured.
package distribution

//go:generate bash gen.sh
