#!/usr/bin/env bash
# Generates components.go from the OCB manifest cmd/otelcol-orphanwatch/builder-config.yaml:
# OCB's own components.go (go.opentelemetry.io/collector/cmd/builder v0.165.0, generation only,
# no network), with package main renamed distribution and components() exported as
# Components(), gofmt'ed. `go generate ./distribution` runs it.
#
#   bash distribution/gen.sh          write distribution/components.go
#   bash distribution/gen.sh -check   fail (and show the diff) when components.go is not what
#                                     the manifest generates (.ci/run)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
ocb=${OCB:-go run go.opentelemetry.io/collector/cmd/builder@v0.165.0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The same manifest with the output in a temporary folder.
sed "s#^\(  output_path:\).*#\1 $tmp/out#" "$root/cmd/otelcol-orphanwatch/builder-config.yaml" >"$tmp/manifest.yaml"
mkdir "$tmp/out"
(cd "$root" && $ocb --config "$tmp/manifest.yaml" --skip-compilation --skip-get-modules >"$tmp/ocb.log" 2>&1) || {
  cat "$tmp/ocb.log" >&2
  exit 1
}
sed -e 's/^package main$/package distribution/' \
  -e 's#^func components() (otelcol.Factories, error) {$#// Components returns the factories of the orphanwatch distribution, with the Go module of each\
// (the `components` command prints them), as OCB builds them from\
// cmd/otelcol-orphanwatch/builder-config.yaml.\
func Components() (otelcol.Factories, error) {#' \
  "$tmp/out/components.go" | gofmt >"$tmp/components.go"
grep -q '^func Components()' "$tmp/components.go" || { echo "gen.sh: OCB's components.go changed shape" >&2; exit 1; }

if [ "${1:-}" = "-check" ]; then
  diff -u "$here/components.go" "$tmp/components.go" || {
    echo "distribution/components.go differs from what cmd/otelcol-orphanwatch/builder-config.yaml generates: run go generate ./distribution" >&2
    exit 1
  }
  echo "distribution/components.go is OCB's output for the manifest"
else
  cp "$tmp/components.go" "$here/components.go"
fi
