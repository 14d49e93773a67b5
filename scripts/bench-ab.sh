#!/usr/bin/env bash
# Benchmark (not a test): two builds of the authentication service side by side under the
# sign-in ceremony load, in alternating runs on one release stack. For a change to the
# service's request path: build main's binary and the branch's, then
#
#   PAIRS=3 DURATION=10 bash scripts/bench-ab.sh A/signet-authentication B/signet-authentication
#
# Each run restarts the authentication service from the named binary (the environment
# stack.sh gave it is kept), warms it up, then runs `signet-bench ceremonies` (16 workers) and
# prints its figures: CPU ms and context switches per ceremony of the authentication process
# (read from /proc by signet-bench), ceremonies/s, p50/p99, with the load average. The order
# within a pair swaps every other pair. Anchor: issue #14's goal of 0.25 ms per ceremony.
# CPU per ceremony is the figure that load disturbs least; ceremonies/s moves with the load.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
[ $# = 2 ] && [ -x "$1" ] && [ -x "$2" ] || { echo "usage: bench-ab.sh BINARY_A BINARY_B (two signet-authentication executables)" >&2; exit 2; }
# signet-bench finds the service by its process name: name each binary signet-authentication
# (e.g. A/signet-authentication and B/signet-authentication).
A="$(realpath "$1")" B="$(realpath "$2")"
pairs="${PAIRS:-3}" duration="${DURATION:-10}" workers="${CONNECTIONS:-16}"
BIN="$ROOT/.build/release"
export SIGNET_LOG_LEVEL="${SIGNET_LOG_LEVEL:-warning}" SIGNET_OTLP_ENDPOINT="${SIGNET_OTLP_ENDPOINT:-}"
trap 'bash "${SIGNET_STACK_SCRIPT:-scripts/stack.sh}" down >/dev/null 2>&1' EXIT
bash "${SIGNET_STACK_SCRIPT:-scripts/stack.sh}" up release >/dev/null 2>&1 || { echo "stack failed to start; see .data/logs" >&2; exit 1; }
pidfile="$ROOT/.data/run/authentication.pid" envfile="$ROOT/.data/run/authentication.env"
# The environment stack.sh gave the service (keys, broker, database), kept for restarts.
cat "/proc/$(cat "$pidfile")/environ" >"$envfile"
restart_auth() { # binary
    local pid vars deadline=$((SECONDS + 60))
    pid=$(cat "$pidfile")
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    mapfile -d '' vars <"$envfile"
    env -i "${vars[@]}" "$1" >>"$ROOT/.data/logs/authentication.log" 2>&1 &
    echo $! >"$pidfile"
    until curl -fsS http://127.0.0.1:8082/metrics 2>/dev/null | grep -qE '^signet_kafka_consumer_assigned_partitions\{group="signet-authentication"\} [1-9]'; do
        [ $SECONDS -lt $deadline ] || { echo "authentication did not come back from $1" >&2; exit 1; }
        sleep 0.2
    done
}
one() { # label binary
    restart_auth "$2"
    "$BIN/signet-bench" ceremonies http://127.0.0.1:8080 "${SIGNET_DEMO_RP_API_KEY:-dev-demo-rp-key}" 2 "$workers" >/dev/null 2>&1 || true
    local out load
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    out=$("$BIN/signet-bench" ceremonies http://127.0.0.1:8080 "${SIGNET_DEMO_RP_API_KEY:-dev-demo-rp-key}" "$duration" "$workers" 2>>"$ROOT/.data/logs/bench-ceremonies.log")
    printf '%s\n' "$out" | awk -v m="$1" -v l="$load" '
        /^ceremonies_per_s/ { c = $2 } /^ceremonies_failed/ { f = $2 } /^latency_ms/ { p50 = $3; p99 = $7 }
        /^cpu_ms_per_ceremony/ { for (i = 2; i < NF; i += 2) if ($i == "authentication") a = $(i + 1); t = $NF }
        /^context_switches_per_ceremony/ { for (i = 2; i < NF; i += 2) if ($i == "authentication") s = $(i + 1) }
        END { printf "%s  auth CPU ms/ceremony %6s (goal 0.25)  switches/ceremony %6s  ceremonies/s %8s (failed %s)  p50/p99 %s/%s ms  stack CPU ms %s  load %s\n", m, a, s, c, f, p50, p99, t, l }'
}
echo "authentication A = $A"
echo "authentication B = $B"
echo "($pairs pairs, ${duration} s, $workers workers)"
for p in $(seq "$pairs"); do
    if [ $((p % 2)) = 1 ]; then one A "$A"; one B "$B"; else one B "$B"; one A "$A"; fi
done
