#!/usr/bin/env bash
# Builds the orphanwatch collector's container image (deploy/image/Containerfile) with podman,
# or buildah, from Debian's packages (`apt-get install podman`): the static binary is built
# here with the host's Go (CGO_ENABLED=0), copied into an image FROM scratch with the host's CA
# bundle, and nothing is pulled from a registry.
#
#   deploy/image/build.sh            build IMAGE:<version> and IMAGE:latest
#   deploy/image/build.sh --run      build, then start it in the background as container NAME,
#                                    every port published on PUBLISH_HOST
#   deploy/image/build.sh --check    build, start it with its health port on a free loopback
#                                    port, wait (at most CHECK_TIMEOUT seconds) for the health
#                                    check to answer 200, then remove it (what CI runs)
#
# Environment:
#   VERSION       the version the binary reports and the image's tag (default: what the binary
#                 reports without -ldflags, see RELEASING.md)
#   IMAGE         the image's name (default localhost/otelcol-orphanwatch)
#   NAME          the container's name with --run (default otelcol-orphanwatch)
#   PUBLISH_HOST  the host address --run publishes on (default 127.0.0.1; 0.0.0.0 for every
#                 interface)
#   OTLP_GRPC_PORT, OTLP_HTTP_PORT, ZIPKIN_PORT, JAEGER_GRPC_PORT, JAEGER_THRIFT_HTTP_PORT,
#   METRICS_PORT, HEALTH_PORT, TELEMETRY_PORT
#                 with --run: the ports, the same inside the container (the embedded config
#                 reads them) and on PUBLISH_HOST; defaults 4317 4318 9411 14250 14268 9464
#                 13133 8888
#   CHECK_TIMEOUT --check's bound on the wait for the health check (default 60)
#   PODMAN_OPTS, RUN_OPTS
#                 options for podman itself and for `podman run` (--run, --check). When they
#                 are unset and the image does not start with podman's defaults, the script
#                 tries once more with `--runtime runc` and lower ulimits (nofile and nproc
#                 4096), and says so: crun refuses hosts with hybrid cgroups ("cgroups in hybrid
#                 mode not supported") and its default ulimits need CAP_SYS_RESOURCE ("setrlimit
#                 RLIMIT_NOFILE: Operation not permitted"), as on this project's CI VM
#                 (Debian's runc package: apt-get install runc).
set -euo pipefail

mode=build
case "${1:-}" in
  "") ;;
  --run) mode=run ;;
  --check) mode=check ;;
  *) echo "usage: $0 [--run | --check]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/../.." && pwd)
image=${IMAGE:-localhost/otelcol-orphanwatch}
if command -v podman >/dev/null; then
  engine=podman
elif command -v buildah >/dev/null && [ "$mode" = build ]; then
  engine=buildah
else
  echo "$0: podman is not installed (Debian: apt-get install podman)" >&2
  exit 1
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/rootfs/etc/ssl/certs"

echo "== go build (static, CGO_ENABLED=0)"
ldflags="-s -w"
if [ -n "${VERSION:-}" ]; then
  ldflags="$ldflags -X main.version=$VERSION"
fi
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$ctx/rootfs/otelcol-orphanwatch" ./cmd/otelcol-orphanwatch)
version=$("$ctx/rootfs/otelcol-orphanwatch" --version | awk '{print $NF}')
# An image tag is [A-Za-z0-9_.-]: a pseudo-version's "+dirty" becomes "-dirty".
tag=$(printf '%s' "$version" | tr -c 'A-Za-z0-9_.-' '-')
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/rootfs/etc/ssl/certs/"
else
  echo "no /etc/ssl/certs/ca-certificates.crt on this host: the image has no CA bundle (TLS needs a ca_file)" >&2
fi

echo "== $engine build $image:$tag"
if [ "$engine" = podman ]; then
  podman build --build-arg "VERSION=$version" -f "$root/deploy/image/Containerfile" -t "$image:$tag" -t "$image:latest" "$ctx"
else
  buildah bud --build-arg "VERSION=$version" -f "$root/deploy/image/Containerfile" -t "$image:$tag" -t "$image:latest" "$ctx"
fi

# prun runs `podman run` with PODMAN_OPTS and RUN_OPTS (word-split on purpose).
prun() {
  # shellcheck disable=SC2086
  podman ${PODMAN_OPTS:-} run ${RUN_OPTS:-} "$@"
}
# pick_runtime checks that the image starts (its --version), falling back to runc when podman's
# default runtime cannot start containers on this host.
pick_runtime() {
  local out
  if out=$(prun --rm "$image:$tag" --version 2>&1); then
    return 0
  fi
  if [ -z "${PODMAN_OPTS:-}${RUN_OPTS:-}" ] && command -v runc >/dev/null; then
    echo "podman's default runtime cannot start the image here ($out);" >&2
    echo "using PODMAN_OPTS='--runtime runc' RUN_OPTS='--ulimit nofile=4096:4096 --ulimit nproc=4096:4096'" >&2
    PODMAN_OPTS="--runtime runc"
    RUN_OPTS="--ulimit nofile=4096:4096 --ulimit nproc=4096:4096"
    if out=$(prun --rm "$image:$tag" --version 2>&1); then
      return 0
    fi
  fi
  echo "FAIL: the image does not start: $out" >&2
  exit 1
}

case "$mode" in
build)
  echo "built $image:$tag"
  ;;
run)
  pick_runtime
  pub=${PUBLISH_HOST:-127.0.0.1}
  args=()
  for v in OTLP_GRPC_PORT:4317 OTLP_HTTP_PORT:4318 ZIPKIN_PORT:9411 JAEGER_GRPC_PORT:14250 \
    JAEGER_THRIFT_HTTP_PORT:14268 METRICS_PORT:9464 HEALTH_PORT:13133 TELEMETRY_PORT:8888; do
    name=${v%%:*}
    port=${!name:-${v##*:}}
    args+=(-e "$name=$port" -p "$pub:$port:$port")
  done
  prun -d --rm --name "${NAME:-otelcol-orphanwatch}" "${args[@]}" "$image:$tag"
  echo "started ${NAME:-otelcol-orphanwatch}: health http://$pub:${HEALTH_PORT:-13133}/, metrics http://$pub:${METRICS_PORT:-9464}/metrics"
  echo "stop it with: podman stop ${NAME:-otelcol-orphanwatch}"
  ;;
check)
  user=$(podman image inspect --format '{{.Config.User}}' "$image:$tag")
  if [ "$user" != "65532:65532" ]; then
    echo "FAIL: the image runs as '$user', not 65532:65532" >&2
    exit 1
  fi
  pick_runtime
  got=$(prun --rm "$image:$tag" --version)
  if [ "$got" != "otelcol-orphanwatch version $version" ]; then
    echo "FAIL: the image's --version says '$got', not '$version'" >&2
    exit 1
  fi
  cid=$(prun -d -p 127.0.0.1::13133 "$image:$tag")
  trap 'podman rm -f "$cid" >/dev/null 2>&1 || true; rm -rf "$ctx"' EXIT
  addr=$(podman port "$cid" 13133/tcp | head -n1)
  echo "== health check on http://$addr/ (at most ${CHECK_TIMEOUT:-60}s)"
  deadline=$((SECONDS + ${CHECK_TIMEOUT:-60}))
  until body=$(curl -fsS --max-time 2 "http://$addr/" 2>/dev/null); do
    if [ "$SECONDS" -ge "$deadline" ] || [ "$(podman inspect --format '{{.State.Running}}' "$cid")" != true ]; then
      echo "FAIL: no healthy answer from the container; its log:" >&2
      podman logs "$cid" >&2 || true
      exit 1
    fi
    sleep 1
  done
  echo "healthy: $body"
  ;;
esac
