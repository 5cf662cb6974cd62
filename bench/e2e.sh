#!/usr/bin/env bash
# End-to-end cost of orphanwatch inside the collector, both ways to run it (DESIGN.md "Two ways
# to run").
#
# Builds cmd/otelcol-orphanwatch and runs it with three configurations that differ only in
# orphanwatch:
#   baseline  otlp -> memory_limiter, batch -> debug (the collector without orphanwatch);
#   observe   otlp -> memory_limiter, batch -> orphanmetrics (mode: observe, the shipped
#             default: the exporter decides), debug;
#   annotate  otlp -> memory_limiter, orphan, batch -> orphanmetrics (mode: annotate: it counts
#             the attributes the processor wrote), debug.
# Each is loaded with telemetrygen sending the same fixed number of spans over OTLP/gRPC to
# 127.0.0.1 only. For each run it reports the collector's CPU seconds (utime+stime from
# /proc/<pid>/stat, from the end of start-up until every span has left the pipeline and, in
# observe, every waiting record was decided) per million spans and its peak RSS (VmHWM), then
# the ratios observe/baseline and annotate/baseline. Runs alternate (baseline, observe,
# annotate, baseline, ...) ROUNDS times so that all see the same machine; a ratio is taken over
# the sums (CPU) and the peaks (RSS).
#
# Environment: WORKERS (20) x TRACES (1250) traces of 1 + CHILD_SPANS (39) spans = 1,000,000
# spans a run, RATE (4000) spans/s per worker; ROUNDS (3); CONFIGS ("baseline observe
# annotate": which to run, baseline first); DECISION_WAIT (30s, the shipped default, for the
# processor and the observing exporter alike); PORT_BASE (24000);
# PPROF (empty; 1: the pprof extension, on 127.0.0.1, writes a CPU profile of each run, from
# start to shut-down, to bench/e2e-NAME-ROUND.cpu.pprof: `go tool pprof -top` it; and the heap
# profile as the load ends, when the most records wait, to bench/e2e-NAME-ROUND.heap.pprof:
# `go tool pprof -sample_index=inuse_space -top` it);
# TELEMETRYGEN (path; default: installed with go install at TELEMETRYGEN_VERSION, v0.161.0, the
# newest the module proxy serves: v0.165.x is not published there).
set -euo pipefail
cd "$(dirname "$0")/.."

WORKERS=${WORKERS:-20}
TRACES=${TRACES:-1250}
CHILD_SPANS=${CHILD_SPANS:-39}
ROUNDS=${ROUNDS:-3}
# Spans per second per worker. Unthrottled, telemetrygen's SDK batch processor drops spans
# (its queue holds 2,048) whenever the collector falls behind; one worker's limiter manages a
# few thousand spans a second, hence many workers.
RATE=${RATE:-4000}
CONFIGS=${CONFIGS:-baseline observe annotate}
DECISION_WAIT=${DECISION_WAIT:-30s}
PORT_BASE=${PORT_BASE:-24000}
TELEMETRYGEN_VERSION=${TELEMETRYGEN_VERSION:-v0.161.0}
EXPECTED=$((WORKERS * TRACES * (CHILD_SPANS + 1)))

OTLP=127.0.0.1:$((PORT_BASE + 317))
TELEMETRY_PORT=$((PORT_BASE + 888))
METRICS=127.0.0.1:$((PORT_BASE + 464))
HEALTH=127.0.0.1:$((PORT_BASE + 133))
PPROF_ADDR=127.0.0.1:$((PORT_BASE + 777))
PPROF=${PPROF:-}
CLK_TCK=$(getconf CLK_TCK)

WORK=$(mktemp -d)
COLLECTOR_PID=
cleanup() {
	if [ -n "$COLLECTOR_PID" ] && kill -0 "$COLLECTOR_PID" 2>/dev/null; then
		kill "$COLLECTOR_PID" 2>/dev/null || true
		wait "$COLLECTOR_PID" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

echo "== building the distribution"
go build -o "$WORK/otelcol" ./cmd/otelcol-orphanwatch

if [ -z "${TELEMETRYGEN:-}" ]; then
	TELEMETRYGEN=$(go env GOPATH)/bin/telemetrygen
	if [ ! -x "$TELEMETRYGEN" ]; then
		echo "== installing telemetrygen $TELEMETRYGEN_VERSION"
		go install "github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen@$TELEMETRYGEN_VERSION"
	fi
fi

# config NAME PROCESSORS EXPORTERS MODE writes $WORK/NAME.yaml; MODE is the orphanmetrics
# exporter's mode (observe: it decides, with the processor's rules; annotate: it reads them).
config() {
	local rules=
	if [ "$4" = observe ]; then
		rules="    decision_wait: $DECISION_WAIT
    prices:
      gpt-4o: {input_per_million: 2.50, output_per_million: 10.00}
      gpt-4o-mini: {input_per_million: 0.15, output_per_million: 0.60}"
	fi
	cat >"$WORK/$1.yaml" <<EOF
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: $OTLP
processors:
  memory_limiter:
    check_interval: 1s
    limit_percentage: 80
    spike_limit_percentage: 20
  orphan:
    decision_wait: $DECISION_WAIT
    prices:
      gpt-4o: {input_per_million: 2.50, output_per_million: 10.00}
      gpt-4o-mini: {input_per_million: 0.15, output_per_million: 0.60}
  batch:
    timeout: 200ms
exporters:
  orphanmetrics:
    endpoint: $METRICS
    mode: $4
$rules
  debug:
    verbosity: basic
extensions:
  health_check:
    endpoint: $HEALTH
  pprof:
    endpoint: $PPROF_ADDR
    save_to_file: $PWD/bench/e2e-$1-ROUND.cpu.pprof
service:
  extensions: [health_check$([ -n "$PPROF" ] && echo ", pprof")]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [$2]
      exporters: [$3]
  telemetry:
    logs:
      level: warn
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: $TELEMETRY_PORT
EOF
}
config baseline "memory_limiter, batch" "debug" observe
config observe "memory_limiter, batch" "orphanmetrics, debug" observe
config annotate "memory_limiter, orphan, batch" "orphanmetrics, debug" annotate

# metric NAME [LABEL] prints the sum of the collector's own counter or gauge NAME (with or
# without the _total suffix) over the label sets that contain LABEL (e.g. exporter="debug"), or 0.
metric() {
	curl -sf "http://127.0.0.1:$TELEMETRY_PORT/metrics" 2>/dev/null |
		awk -v n="$1" -v l="${2:-}" '(index($1, n "{") == 1 || index($1, n "_total{") == 1) && index($0, l) { s += $NF } END { printf "%d\n", s }'
}

cpu_ticks() { # utime + stime of a process, in clock ticks
	sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# run NAME ROUND writes "cpu_seconds spans vmhwm_kb" of one loaded run of configuration NAME to
# $WORK/result.
run() {
	sed "s/-ROUND\./-$2./" "$WORK/$1.yaml" >"$WORK/$1-$2.yaml"
	"$WORK/otelcol" --config="file:$WORK/$1-$2.yaml" >"$WORK/$1.log" 2>&1 &
	COLLECTOR_PID=$!
	for _ in $(seq 1 300); do
		curl -sf "http://$HEALTH/" >/dev/null 2>&1 && break
		sleep 0.1
	done
	curl -sf "http://$HEALTH/" >/dev/null || { cat "$WORK/$1.log" >&2; echo "collector did not start" >&2; exit 1; }
	local t0
	t0=$(cpu_ticks "$COLLECTOR_PID")
	"$TELEMETRYGEN" traces --otlp-endpoint "$OTLP" --otlp-insecure --rate "$RATE" \
		--workers "$WORKERS" --traces "$TRACES" --child-spans "$CHILD_SPANS" --batch-size 512 \
		--service researcher \
		--telemetry-attributes 'http.request.method="GET"' \
		--telemetry-attributes 'server.address="search-tool"' \
		--telemetry-attributes 'server.port=8080' \
		--telemetry-attributes 'http.response.status_code=200' >"$WORK/telemetrygen.log" 2>&1 ||
		{ cat "$WORK/telemetrygen.log" >&2; exit 1; }
	if [ -n "$PPROF" ]; then
		curl -sf "http://$PPROF_ADDR/debug/pprof/heap" -o "bench/e2e-$1-$2.heap.pprof" ||
			echo "$1: no heap profile" >&2
	fi
	# Wait (bounded) until every accepted span has left through the debug exporter and, in
	# observe, the exporter decided every record waiting for its trace's decision (about
	# decision_wait_after_root, 2 s, after the last root): its work is counted as the processor's
	# is, whose spans leave only once decided.
	local accepted sent waiting last=-1 deadline=$((SECONDS + 300))
	while :; do
		accepted=$(metric otelcol_receiver_accepted_spans)
		sent=$(metric otelcol_exporter_sent_spans 'exporter="debug"')
		waiting=$(metric otelcol_exporter_orphanmetrics_records 'state="waiting"')
		if [ "$accepted" -eq "$last" ] && [ "$sent" -ge "$accepted" ] && [ "$waiting" -eq 0 ]; then break; fi
		last=$accepted
		if [ $SECONDS -gt $deadline ]; then
			echo "$1: timed out: $accepted accepted, $sent sent of $EXPECTED, $waiting records waiting" >&2
			exit 1
		fi
		sleep 0.5
	done
	if [ "$accepted" -lt "$EXPECTED" ]; then
		echo "$1: only $accepted of $EXPECTED spans arrived (telemetrygen's SDK queue dropped some: lower RATE)" >&2
	fi
	local t1 hwm
	t1=$(cpu_ticks "$COLLECTOR_PID")
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$COLLECTOR_PID/status")
	kill "$COLLECTOR_PID"
	wait "$COLLECTOR_PID" 2>/dev/null || true
	COLLECTOR_PID=
	awk -v a="$t0" -v b="$t1" -v hz="$CLK_TCK" -v n="$accepted" -v h="$hwm" \
		'BEGIN { printf "%.2f %d %d\n", (b - a) / hz, n, h }' >"$WORK/result"
}

echo "== $ROUNDS rounds of $EXPECTED spans ($WORKERS workers x $TRACES traces x $((CHILD_SPANS + 1)) spans), decision_wait $DECISION_WAIT, OTLP on $OTLP"
printf '%-12s %6s %10s %8s %14s %10s\n' config round spans cpu_s cpu_s/Mspans vmhwm_MB
declare -A CPU SPANS HWM
for r in $(seq 1 "$ROUNDS"); do
	for name in $CONFIGS; do
		run "$name" "$r"
		read -r cpu spans hwm <"$WORK/result"
		CPU[$name]=$(awk -v a="${CPU[$name]:-0}" -v b="$cpu" 'BEGIN { print a + b }')
		SPANS[$name]=$(( ${SPANS[$name]:-0} + spans ))
		if [ "$hwm" -gt "${HWM[$name]:-0}" ]; then HWM[$name]=$hwm; fi
		awk -v n="$name" -v r="$r" -v s="$spans" -v c="$cpu" -v h="$hwm" \
			'BEGIN { printf "%-12s %6d %10d %8.2f %14.3f %10.1f\n", n, r, s, c, c / s * 1e6, h / 1024 }'
	done
done
echo "== totals"
for name in $CONFIGS; do
	awk -v n="$name" -v s="${SPANS[$name]}" -v c="${CPU[$name]}" -v h="${HWM[$name]}" \
		'BEGIN { printf "%-12s cpu_s/Mspans %.3f  peak VmHWM %.1f MB\n", n, c / s * 1e6, h / 1024 }'
done
if [ -n "${CPU[baseline]:-}" ]; then
	for name in $CONFIGS; do
		[ "$name" = baseline ] && continue
		awk -v n="$name" -v bc="${CPU[baseline]}" -v bs="${SPANS[baseline]}" -v oc="${CPU[$name]}" -v os="${SPANS[$name]}" \
			-v bh="${HWM[baseline]}" -v oh="${HWM[$name]}" \
			'BEGIN { printf "ratio %s/baseline: CPU per span %.3f, peak RSS %.3f\n", n, (oc / os) / (bc / bs), oh / bh }'
	done
fi
