package main

import (
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"
)

// TestComponentsScaleOut: the distribution carries what README "Scale" uses (kafka exporter in
// the front tier, kafka receiver in the orphanwatch tier) and the jaeger receiver DESIGN.md
// lists, each at its default.
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
