package distribution

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.yaml.in/yaml/v3"
)

// manifest is the part of an OCB manifest this test reads.
type manifest struct {
	Receivers  []module `yaml:"receivers"`
	Processors []module `yaml:"processors"`
	Exporters  []module `yaml:"exporters"`
	Extensions []module `yaml:"extensions"`
	Connectors []module `yaml:"connectors"`
	Providers  []module `yaml:"providers"`
	Replaces   []string `yaml:"replaces"`
}

// module is one OCB manifest entry: "gomod" is "module version", "import" the package when it
// is not the module's root.
type module struct {
	GoMod  string `yaml:"gomod"`
	Import string `yaml:"import"`
}

func (m module) importPath() string {
	if m.Import != "" {
		return m.Import
	}
	return strings.Fields(m.GoMod)[0]
}

func readManifest(t *testing.T) manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "cmd", "otelcol-orphanwatch", "builder-config.yaml"))
	require.NoError(t, err)
	var m manifest
	require.NoError(t, yaml.Unmarshal(b, &m))
	return m
}

// TestManifestMatchesComponents: the OCB manifest and Components() list the same components of
// each kind from the same Go modules at the same versions, and components.go imports exactly
// the manifest's packages. It fails when a component is added to one and not the other.
func TestManifestMatchesComponents(t *testing.T) {
	m := readManifest(t)
	f, err := Components()
	require.NoError(t, err)

	modulesOf := func(entries []module) []string {
		var out []string
		for _, e := range entries {
			out = append(out, e.GoMod)
		}
		sort.Strings(out)
		return out
	}
	// values lists a modules map by component, without the entries of deprecated aliases
	// (otlp for otlp_grpc, otlphttp for otlp_http), which repeat their component's module.
	values := func(mods map[component.Type]string, canonical func(component.Type) bool) []string {
		var out []string
		for typ, v := range mods {
			if canonical(typ) {
				out = append(out, v)
			}
		}
		sort.Strings(out)
		return out
	}
	isType := func(typ component.Type, f component.Factory) bool { return f != nil && f.Type() == typ }
	assert.Equal(t, modulesOf(m.Receivers), values(f.ReceiverModules, func(t component.Type) bool { return isType(t, f.Receivers[t]) }), "receivers")
	assert.Equal(t, modulesOf(m.Processors), values(f.ProcessorModules, func(t component.Type) bool { return isType(t, f.Processors[t]) }), "processors")
	assert.Equal(t, modulesOf(m.Exporters), values(f.ExporterModules, func(t component.Type) bool { return isType(t, f.Exporters[t]) }), "exporters")
	assert.Equal(t, modulesOf(m.Extensions), values(f.ExtensionModules, func(t component.Type) bool { return isType(t, f.Extensions[t]) }), "extensions")
	assert.Equal(t, modulesOf(m.Connectors), values(f.ConnectorModules, func(t component.Type) bool { return isType(t, f.Connectors[t]) }), "connectors")

	// components.go imports exactly the manifest's packages (besides the collector's API and
	// the telemetry factory OCB always adds).
	file, err := parser.ParseFile(token.NewFileSet(), "components.go", nil, parser.ImportsOnly)
	require.NoError(t, err)
	var imported []string
	for _, is := range file.Imports {
		p, _ := strconv.Unquote(is.Path.Value)
		if is.Name != nil && p != "go.opentelemetry.io/collector/service/telemetry/otelconftelemetry" {
			imported = append(imported, p)
		}
	}
	var listed []string
	for _, l := range [][]module{m.Receivers, m.Processors, m.Exporters, m.Extensions, m.Connectors} {
		for _, e := range l {
			listed = append(listed, e.importPath())
		}
	}
	sort.Strings(imported)
	sort.Strings(listed)
	assert.Equal(t, listed, imported, "components.go is stale: go generate ./distribution")
}

// TestManifestVersionsMatchGoMod: every module the manifest names is required by the root
// go.mod at the manifest's version (or is this repository, replaced by the manifest), so that
// OCB builds the same code the tests run.
func TestManifestVersionsMatchGoMod(t *testing.T) {
	m := readManifest(t)
	b, err := os.ReadFile(filepath.Join("..", "go.mod"))
	require.NoError(t, err)
	required := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		fs := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(fs) >= 2 && strings.Contains(fs[0], ".") {
			required[fs[0]] = fs[1]
		}
	}
	require.Contains(t, m.Replaces, "github.com/orphanwatch/orphanwatch => ../")
	for _, l := range [][]module{m.Receivers, m.Processors, m.Exporters, m.Extensions, m.Connectors, m.Providers} {
		for _, e := range l {
			fs := strings.Fields(e.GoMod)
			require.Len(t, fs, 2, "gomod %q: want \"module version\"", e.GoMod)
			if fs[0] == "github.com/orphanwatch/orphanwatch" {
				continue
			}
			assert.Equal(t, required[fs[0]], fs[1], "%s: manifest version differs from go.mod", fs[0])
		}
	}
}
