// Command otelcol-orphanwatch is the orphanwatch collector distribution: OTLP and Zipkin
// receivers, memory_limiter, batch, the orphan processor, the orphanmetrics exporter, OTLP and
// debug exporters, and the health_check extension. Started without --config it runs the
// embedded default pipeline (config/collector.yaml) on localhost ports: OTLP 4317/4318,
// Zipkin 9411, orphan metrics 9464, health 13133, own telemetry 8888.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/httpprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/otelcol"
	"go.yaml.in/yaml/v3"

	"github.com/orphanwatch/orphanwatch/config"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	def, err := defaultConfigURI()
	if err != nil {
		return err
	}
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol-orphanwatch",
			Description: "orphanwatch: an OpenTelemetry Collector that finds work delivered to nobody",
			Version:     version,
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				// A default, replaced by any --config flag.
				URIs: []string{def},
				ProviderFactories: []confmap.ProviderFactory{
					fileprovider.NewFactory(), envprovider.NewFactory(),
					yamlprovider.NewFactory(), httpprovider.NewFactory(),
				},
			},
		},
	}
	cmd := otelcol.NewCommand(set)
	// Without --config, the embedded default is passed as one, so that --set flags apply on
	// top of it instead of replacing it.
	args := os.Args[1:]
	if !hasConfigFlag(args) && (len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == "validate") {
		args = append(args, "--config="+def)
	}
	cmd.SetArgs(args)
	return cmd.Execute()
}

// hasConfigFlag reports whether the command line names a config.
func hasConfigFlag(args []string) bool {
	for _, a := range args {
		if a == "--config" || strings.HasPrefix(a, "--config=") {
			return true
		}
	}
	return false
}

// defaultConfigURI turns the embedded YAML into a one-line `yaml:` URI (JSON is YAML).
func defaultConfigURI() (string, error) {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(config.Collector), &m); err != nil {
		return "", fmt.Errorf("embedded config: %w", err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("embedded config: %w", err)
	}
	return "yaml:" + string(b), nil
}
