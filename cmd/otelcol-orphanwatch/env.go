package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/httpprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
)

// ownEnvPrefix names orphanwatch's own environment variables (ORPHANWATCH_MEMBER,
// ORPHANWATCH_KEY_SECRET, ...).
const ownEnvPrefix = "ORPHANWATCH_"

// providerFactories are the config providers of the distribution: file, env, yaml and http,
// the env provider being [newEnvProviderFactory]'s.
func providerFactories() []confmap.ProviderFactory {
	return []confmap.ProviderFactory{
		fileprovider.NewFactory(), newEnvProviderFactory(),
		yamlprovider.NewFactory(), httpprovider.NewFactory(),
	}
}

// newEnvProviderFactory returns the collector's env provider (`${env:NAME}`,
// `${env:NAME:-default}`) with one rule added: a variable of orphanwatch's own (named
// ORPHANWATCH_...) referenced without a default must be set and not empty, or the config does
// not resolve and the collector does not start (`validate` fails too), naming the variable.
// The collector's provider reads an unset variable as empty and only logs a warning: a tier
// member started without ORPHANWATCH_MEMBER would join its consumer group as
// `orphanwatch-`, the static identity of every other member started the same way. Other
// variables keep the collector's behaviour.
func newEnvProviderFactory() confmap.ProviderFactory {
	return confmap.NewProviderFactory(func(ps confmap.ProviderSettings) confmap.Provider {
		return ownEnvProvider{Provider: envprovider.NewFactory().Create(ps)}
	})
}

// ownEnvProvider is the collector's env provider, refusing orphanwatch's own variables unset.
type ownEnvProvider struct{ confmap.Provider }

// Retrieve fails for `${env:ORPHANWATCH_...}` (no default) when the variable is unset or
// empty; it retrieves everything else as the collector's env provider does.
func (p ownEnvProvider) Retrieve(ctx context.Context, uri string, watcher confmap.WatcherFunc) (*confmap.Retrieved, error) {
	name, _, hasDefault := strings.Cut(strings.TrimPrefix(uri, "env:"), ":-")
	if !hasDefault && strings.HasPrefix(name, ownEnvPrefix) {
		if v, ok := os.LookupEnv(name); !ok || v == "" {
			return nil, fmt.Errorf("environment variable %s is unset or empty, and ${env:%s} has no default: set it (the config's header says what it is)", name, name)
		}
	}
	return p.Provider.Retrieve(ctx, uri, watcher)
}
