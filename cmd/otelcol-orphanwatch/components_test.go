package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/otelcol"
	"go.yaml.in/yaml/v3"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/listenhost"
)

// TestComponentsScaleOut: the distribution carries what README "Scale" uses (kafka exporter in
// the front tier, kafka receiver and the orphan_keys extension in the orphanwatch tier) and the
// jaeger receiver DESIGN.md lists, each at its default.
func TestComponentsScaleOut(t *testing.T) {
	f, err := components()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"otlp", "zipkin", "jaeger", "kafka"} {
		if _, ok := f.Receivers[component.MustNewType(r)]; !ok {
			t.Errorf("receiver %q missing", r)
		}
	}
	for _, e := range []string{"orphanmetrics", "otlp", "otlphttp", "debug", "kafka"} {
		if _, ok := f.Exporters[component.MustNewType(e)]; !ok {
			t.Errorf("exporter %q missing", e)
		}
	}
	// orphan_keys: the members of a tier share idempotency keys (config/scaleout/member.yaml);
	// pprof: profiles of a running collector (bench/e2e.sh PPROF=1).
	for _, e := range []string{"health_check", "orphan_keys", "pprof"} {
		if _, ok := f.Extensions[component.MustNewType(e)]; !ok {
			t.Errorf("extension %q missing", e)
		}
	}
}

// TestComponentsPush: the distribution carries what README "Push the metrics" uses: the
// orphanmetrics connector, and otlp_http and prometheusremotewrite to push its metrics.
func TestComponentsPush(t *testing.T) {
	f, err := components()
	if err != nil {
		t.Fatal(err)
	}
	c, ok := f.Connectors[component.MustNewType("orphanmetrics")]
	if !ok {
		t.Fatal("connector orphanmetrics missing")
	}
	if got := c.TracesToMetricsStability(); got == component.StabilityLevelUndefined {
		t.Error("connector orphanmetrics does not connect traces to metrics")
	}
	for _, e := range []string{"otlp_http", "prometheusremotewrite"} {
		fac, ok := f.Exporters[component.MustNewType(e)]
		if !ok {
			t.Errorf("exporter %q missing", e)
			continue
		}
		if fac.MetricsStability() == component.StabilityLevelUndefined {
			t.Errorf("exporter %q does not export metrics", e)
		}
	}
}

// TestListenersDefaultToLocalhost: no receiver of the distribution listens on every interface
// unless configured to: every endpoint in a receiver's default config names localhost.
func TestListenersDefaultToLocalhost(t *testing.T) {
	f, err := components()
	if err != nil {
		t.Fatal(err)
	}
	for typ, fac := range f.Receivers {
		n := 0
		walkEndpoints(reflect.ValueOf(fac.CreateDefaultConfig()), func(field, v string) {
			n++
			if v != "" && !strings.HasPrefix(v, "localhost:") && !strings.HasPrefix(v, "127.0.0.1:") {
				t.Errorf("receiver %s: default %s %q does not bind localhost", typ, field, v)
			}
		})
		t.Logf("receiver %s: %d endpoint fields checked", typ, n)
	}
}

// walkEndpoints calls fn for every string field named Endpoint (or NetAddr.Endpoint) reachable
// from v through structs, pointers and configoptional values.
func walkEndpoints(v reflect.Value, fn func(field, value string)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkEndpoints(v.Elem(), fn)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			fv := v.Field(i)
			if f.Name == "Endpoint" && fv.Kind() == reflect.String {
				fn(v.Type().String()+"."+f.Name, fv.String())
				continue
			}
			walkEndpoints(fv, fn)
		}
	}
}

// TestScaleOutConfigs: the configs README "Scale" tells users to copy are valid for this
// distribution as shipped (with the environment a member is started with), and every
// listener in them binds LISTEN_HOST, localhost when the environment sets nothing.
func TestScaleOutConfigs(t *testing.T) {
	t.Setenv("ORPHANWATCH_MEMBER", "1")
	t.Setenv("ORPHANWATCH_KEY_SECRET", "a-secret-of-at-least-16-bytes")
	for _, f := range []string{"front.yaml", "member.yaml"} {
		b := validShipped(t, "scaleout", f)
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		// The trace store is a client endpoint: it may be anywhere. The orphanmetrics exporter
		// listens.
		n := listenhost.Check(t, f, m, func(p string) bool {
			return !strings.Contains(p, "exporters") || strings.Contains(p, "orphanmetrics")
		})
		if want := map[string]int{"front.yaml": 7, "member.yaml": 3}[f]; n != want {
			t.Errorf("%s: %d listeners found, want %d", f, n, want)
		}
	}
}

// validShipped returns the text of the shipped config config/<dir>/<name>, reporting an error
// of t when it does not validate for this distribution (dryRun).
func validShipped(t *testing.T, dir, name string) []byte {
	t.Helper()
	path := filepath.Join("..", "..", "config", dir, name)
	if err := dryRun(t, "file:"+path); err != nil {
		t.Errorf("%s: %v", name, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dryRun creates the distribution's collector (its components and config providers) on the
// config at uri ("file:...", "yaml:...") and returns its DryRun's error: nil when the config
// resolves and validates.
func dryRun(t *testing.T, uri string) error {
	t.Helper()
	col, err := otelcol.NewCollector(otelcol.CollectorSettings{
		BuildInfo: component.NewDefaultBuildInfo(),
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			URIs: []string{uri}, ProviderFactories: providerFactories(),
		}},
	})
	require.NoError(t, err)
	return col.DryRun(context.Background())
}
