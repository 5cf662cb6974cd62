// Command otelcol-orphanwatch is the orphanwatch collector distribution: OTLP and Zipkin
// receivers, memory_limiter, batch, the orphan processor, the orphanmetrics exporter, OTLP and
// debug exporters, and the health_check extension. Started without --config it runs the
// embedded default pipeline (config/collector.yaml) on localhost ports (LISTEN_HOST moves
// them): OTLP 4317/4318, Zipkin 9411, orphan metrics 9464, health 13133, own telemetry 8888.
// `--version` prints the version it was built as (see buildVersion); a config that references
// an orphanwatch variable (ORPHANWATCH_...) left unset does not resolve (providerFactories).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/otelcol"
	"go.yaml.in/yaml/v3"

	"github.com/orphanwatch/orphanwatch/config"
)

// Version is the release this source tree is on its way to, reported by a binary that was
// built with neither -ldflags nor a module version (`go run`, `go build -buildvcs=false`).
// RELEASING.md says when to bump it.
const Version = "0.1.0-dev"

// version, when not empty, is the version the distribution reports (`--version`, and
// component.BuildInfo.Version in its logs and telemetry): set at build time with
// `go build -ldflags "-X main.version=0.2.0"`.
var version string

// buildVersion is the version the distribution reports: -ldflags' version; else the main
// module's version in the build info (`v0.2.0` when installed with
// `go install github.com/orphanwatch/orphanwatch/cmd/otelcol-orphanwatch@v0.2.0`, a
// pseudo-version like `v0.0.0-20261202084609-3011ee878998` when built by `go build` in a git
// clone, "+dirty" added with uncommitted changes); else [Version]. A leading "v" is dropped, as the collector's distributions write
// theirs (`0.165.0`).
func buildVersion() string {
	module := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		module = bi.Main.Version
	}
	return resolveVersion(version, module)
}

// resolveVersion picks the reported version from the -ldflags value and the main module's
// version in the build info ("" or "(devel)" when there is none).
func resolveVersion(ldflags, module string) string {
	v := ldflags
	if v == "" && module != "" && module != "(devel)" {
		v = module
	}
	if v == "" {
		v = Version
	}
	return strings.TrimPrefix(v, "v")
}

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
			Version:     buildVersion(),
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				// A default, replaced by any --config flag.
				URIs:              []string{def},
				ProviderFactories: providerFactories(),
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
