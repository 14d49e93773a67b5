#!/usr/bin/env bash
# Benchmark (not a test): HTTP requests/s of a trivial route and of a route doing one
# PostgreSQL transaction with an outbox row, beside pgbench running the same transaction,
# in one run on this machine; sign-in ceremonies beside the Python peer (../shared/peer) in
# alternating pairs, with CPU per ceremony and latency at half the peak rate. Starts the
# release stack (and the peer) itself and stops them afterwards.
#
#   DURATION=10 CONNECTIONS=16 RUNS=3 bash scripts/bench.sh
#   PEER=0 bash scripts/bench.sh        without the peer (skipped anyway when ../shared/peer is absent)
#   COLD_PAIRS=3 bash scripts/bench.sh cache  only the sign-ins with the credential cache missed
#                                        and hit (see credential_cache_pairs below)
#   PAIRS=3 bash scripts/bench.sh modes  only the A/B of SIGNET_HTTP_MODE (pool, loop) on the
#                                        authentication service: see http_modes below
#   PAIRS=2 [BIN_A=…] bash scripts/bench.sh allocs  allocations per sign-in and per /healthz in
#                                        the authentication process, counted exactly: see http_allocs
#   PAIRS=3 bash scripts/bench.sh healthz  GET /healthz through the HTTP layer alone (no stack,
#                                        no lock), both modes, beside nginx: see http_healthz
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# wrk (2 threads, 64 connections) on URL for SECONDS against the server process PID; prints its
# requests/s and the server's CPU per request in µs (user + system from /proc over the run: the
# figure that other work on the machine disturbs least).
wrk_with_cpu() { # pid url seconds
    local t0 t1 out
    t0=$(awk '{print $14 + $15}' "/proc/$1/stat")
    out=$(wrk -t2 -c64 -d"$3s" "$2")
    t1=$(awk '{print $14 + $15}' "/proc/$1/stat")
    printf '%s\n' "$out" | awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" '/requests in/ { n = $1 } /Requests\/sec/ { r = $2 } END { printf "%s %.1f\n", r, t / hz * 1e6 / n }'
}

# The request path's two modes side by side (README "The request path"): one release stack; the
# authentication service is restarted in each mode in turn (alternating, PAIRS pairs, the order
# swapped every other pair), and each run prints the sign-in ceremonies' figures for it: CPU ms
# and context switches per ceremony of the authentication process (signet-bench reads /proc),
# ceremonies/s, threads, then the p50/p99 of a run paced at half that rate with each http-loop
# thread's CPU ticks and connections during it (`signet_http_loop_connections`, loop mode), then
# `GET /healthz` on it (wrk, 64 connections), with the load average.
# BIN_A=<folder of another release build> compares binaries instead of modes: A is that build's
# signet-authentication, B this one's, both in SIGNET_HTTP_MODE (loop by default).
# The release stack for an A/B on the authentication service (modes, allocs): started here and
# stopped on exit; sets BIN, pidfile and envfile, and defines restart_auth.
auth_ab_stack() {
    BIN="$(swift build -c release --show-bin-path)"
    export SIGNET_LOG_LEVEL="${SIGNET_LOG_LEVEL:-warning}" SIGNET_OTLP_ENDPOINT="${SIGNET_OTLP_ENDPOINT:-}"
    trap 'bash scripts/stack.sh down >/dev/null 2>&1' EXIT
    bash scripts/stack.sh up release >/dev/null 2>&1 || { echo "stack failed to start; see .data/logs" >&2; exit 1; }
    pidfile="$ROOT/.data/run/authentication.pid" envfile="$ROOT/.data/run/authentication.env"
    # The environment stack.sh gave the service (keys, broker, database), kept for restarts.
    grep -zv '^SIGNET_HTTP_MODE=' "/proc/$(cat "$pidfile")/environ" >"$envfile"
    restart_auth() { # mode binary-folder
        local pid
        pid=$(cat "$pidfile")
        kill -TERM "$pid" 2>/dev/null || true
        while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
        local vars
        mapfile -d '' vars <"$envfile"
        env -i "${vars[@]}" SIGNET_HTTP_MODE="$1" "$2/signet-authentication" >>"$ROOT/.data/logs/authentication.log" 2>&1 &
        echo $! >"$pidfile"
        local deadline=$((SECONDS + 60))
        until curl -fsS http://127.0.0.1:8082/metrics 2>/dev/null | grep -qE '^signet_kafka_consumer_assigned_partitions\{group="signet-authentication"\} [1-9]'; do
            [ $SECONDS -lt $deadline ] || { echo "authentication did not come back in mode $1" >&2; exit 1; }
            sleep 0.2
        done
    }
}
http_modes() {
    local BIN pidfile envfile pairs="${PAIRS:-3}" duration="${DURATION:-10}" workers="${CONNECTIONS:-16}"
    command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
    auth_ab_stack
    # CPU ticks (user + system) of each http-loop thread of a process: "0:123 1:98".
    loop_ticks() {
        local t out=""
        for t in /proc/"$1"/task/*; do
            case "$(cat "$t/comm" 2>/dev/null)" in
            http-loop-*) out="$out $(sed 's/^.*) //' "$t/stat" | awk -v n="$(sed 's/http-loop-//' "$t/comm")" '{print n ":" $12 + $13}')" ;;
            esac
        done
        printf '%s\n' "$out" | tr ' ' '\n' | sed '/^$/d' | sort | tr '\n' ' '
    }
    one() { # label mode binary-folder
        restart_auth "$2" "$3"
        "$BIN/signet-bench" ceremonies http://127.0.0.1:8080 "${SIGNET_DEMO_RP_API_KEY:-dev-demo-rp-key}" 2 "$workers" >/dev/null 2>&1 || true
        local out load rps half_out before after conns pid
        pid=$(cat "$pidfile")
        load=$(cut -d' ' -f1-3 /proc/loadavg)
        out=$("$BIN/signet-bench" ceremonies http://127.0.0.1:8080 "${SIGNET_DEMO_RP_API_KEY:-dev-demo-rp-key}" "$duration" "$workers" 2>>"$ROOT/.data/logs/bench-ceremonies.log")
        local rate
        rate=$(printf '%s\n' "$out" | awk '/^ceremonies_per_s/ { printf "%.0f", $2 / 2 }')
        before=$(loop_ticks "$pid")
        half_out=$("$BIN/signet-bench" ceremonies http://127.0.0.1:8080 "${SIGNET_DEMO_RP_API_KEY:-dev-demo-rp-key}" "$duration" "$workers" "$rate" 2>>"$ROOT/.data/logs/bench-ceremonies.log")
        after=$(loop_ticks "$pid")
        conns=$(curl -fsS http://127.0.0.1:8082/metrics 2>/dev/null | awk -F'[" ]' '/^signet_http_loop_connections\{/ { printf "%s:%s ", $2, $NF }')
        rps=$(wrk -t2 -c64 -d5s http://127.0.0.1:8082/healthz | awk '/Requests\/sec/ {print $2}')
        printf '%s\n' "$out" | awk -v m="$1" -v l="$load" -v h="$rps" '
            /^ceremonies_per_s/ { c = $2 } /^ceremonies_failed/ { f = $2 } /^latency_ms/ { p50 = $3; p99 = $7 }
            /^cpu_ms_per_ceremony/ { for (i = 2; i < NF; i += 2) if ($i == "authentication") a = $(i + 1); t = $NF }
            /^context_switches_per_ceremony/ { for (i = 2; i < NF; i += 2) if ($i == "authentication") s = $(i + 1) }
            /^threads/ { for (i = 2; i < NF; i += 2) if ($i == "authentication") th = $(i + 1) }
            END { printf "%-5s auth CPU ms/ceremony %6s  switches/ceremony %6s  ceremonies/s %8s (failed %s)  p50/p99 %s/%s ms  stack CPU ms %s  threads %s  /healthz %s/s  load %s\n", m, a, s, c, f, p50, p99, t, th, h, l }'
        printf '%s\n' "$half_out" | awk -v m="$1" -v r="$rate" -v b="$before" -v e="$after" -v k="$conns" '
            /^latency_ms/ { p50 = $3; p99 = $7 } /^ceremonies_per_s/ { c = $2 }
            END {
                nb = split(b, B, " "); ne = split(e, E, " "); d = ""
                for (i = 1; i <= ne; i++) { split(E[i], x, ":"); v = x[2]; for (j = 1; j <= nb; j++) { split(B[j], y, ":"); if (y[1] == x[1]) v -= y[2] } d = d x[1] ":" v " " }
                printf "%-5s   at half the peak (%s/s asked, %s/s done): p50/p99 %s/%s ms  http-loop CPU ticks %s connections per loop %s\n", m, r, c, p50, p99, d, (k == "" ? "n/a" : k) }'
    }
    if [ -n "${BIN_A:-}" ]; then
        local mode="${SIGNET_HTTP_MODE:-loop}"
        echo "A/B of binaries on the authentication service, $mode mode (A: $BIN_A, B: $BIN; $pairs pairs, ${duration} s, $workers workers; anchors: issue #14 goal 0.25 ms/ceremony; p50/p99 at half the peak 7.38/43.79 ms beside the peer's 4.89/23.13 ms in stop 18's make bench)"
        for p in $(seq "$pairs"); do
            if [ $((p % 2)) = 1 ]; then one A "$mode" "$BIN_A"; one B "$mode" "$BIN"; else one B "$mode" "$BIN"; one A "$mode" "$BIN_A"; fi
        done
        return
    fi
    echo "SIGNET_HTTP_MODE A/B on the authentication service ($pairs pairs, ${duration} s, $workers workers; anchors: issue #14 goal 0.25 ms/ceremony; main's pool mode 0.55-1.28 ms in earlier stops)"
    for p in $(seq "$pairs"); do
        if [ $((p % 2)) = 1 ]; then one pool pool "$BIN"; one loop loop "$BIN"; else one loop loop "$BIN"; one pool pool "$BIN"; fi
    done
}
# WebAuthn sign-in with the credential cache missed (issue #14): the authentication service
# restarted with SIGNET_CREDENTIAL_CACHE_SIZE=0 keeps no credential, so every sign-in reads its
# credential from the read model (one more query) and parses the stored COSE key, as nearly
# every sign-in does for users who sign in once a day (the 16 workers' credentials otherwise stay
# cached: the figures above are the cache's hit path). Then restarted with the default cache and
# run again, and once more at the services' default log level (info) with span export on:
# COLD_PAIRS rounds (1), each run after a 2 s warm-up, same client.
# `bash scripts/bench.sh cache` runs only this, on its own release stack. Needs BIN, DURATION,
# CONNECTIONS; sets cold_runs, cold_cpu_runs, warm_runs, warm_cpu_runs, obs_runs, obs_cpu_runs,
# cache_loads, and adds failed ceremonies to cer_failed.
auth_pidfile="$ROOT/.data/run/authentication.pid"
restart_auth_cache() { # the cache size, or "" for the service's default; then VAR=value… to add
    local pid vars deadline=$((SECONDS + 60))
    pid=$(cat "$auth_pidfile")
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    mapfile -d '' vars <"$ROOT/.data/run/authentication.bench.env"
    if [ -n "$1" ]; then vars+=("SIGNET_CREDENTIAL_CACHE_SIZE=$1"); fi
    vars+=("${@:2}")
    env -i "${vars[@]}" "$BIN/signet-authentication" >>"$ROOT/.data/logs/authentication.log" 2>&1 &
    echo $! >"$auth_pidfile"
    until curl -fsS http://127.0.0.1:8082/metrics 2>/dev/null | grep -qE '^signet_kafka_consumer_assigned_partitions\{group="signet-authentication"\} [1-9]'; do
        [ $SECONDS -lt $deadline ] || { echo "authentication did not come back (credential cache ${1:-default})" >&2; exit 1; }
        sleep 0.2
    done
}
cache_run() { # prints: ceremonies/s, authentication CPU ms per ceremony, failed
    "$BIN/signet-bench" ceremonies http://127.0.0.1:8080 "${SIGNET_DEMO_RP_API_KEY:-dev-demo-rp-key}" 2 "$CONNECTIONS" >/dev/null 2>&1 || true
    "$BIN/signet-bench" ceremonies http://127.0.0.1:8080 "${SIGNET_DEMO_RP_API_KEY:-dev-demo-rp-key}" "$DURATION" "$CONNECTIONS" 2>>"$ROOT/.data/logs/bench-ceremonies.log" |
        awk '/^ceremonies_per_s/ { c = $2 } /^ceremonies_failed/ { f = $2 }
            /^cpu_ms_per_ceremony/ { for (i = 2; i < NF; i += 2) if ($i == "authentication") a = $(i + 1) }
            END { print c, a, f }'
}
credential_cache_pairs() {
    # The environment stack.sh gave the service (keys, broker, database), kept for restarts.
    grep -zv '^SIGNET_CREDENTIAL_CACHE_SIZE=' "/proc/$(cat "$auth_pidfile")/environ" >"$ROOT/.data/run/authentication.bench.env"
    cold_runs=""; cold_cpu_runs=""; warm_runs=""; warm_cpu_runs=""; obs_runs=""; obs_cpu_runs=""; cache_loads=""
    local c a f
    for _ in $(seq "${COLD_PAIRS:-1}"); do
        cache_loads="$cache_loads $(cut -d' ' -f1 /proc/loadavg)"
        restart_auth_cache 0
        read -r c a f < <(cache_run)
        cold_runs="$cold_runs $c"; cold_cpu_runs="$cold_cpu_runs $a"; cer_failed=$((cer_failed + ${f:-1}))
        restart_auth_cache ""
        read -r c a f < <(cache_run)
        warm_runs="$warm_runs $c"; warm_cpu_runs="$warm_cpu_runs $a"; cer_failed=$((cer_failed + ${f:-1}))
        # The same with the services' own defaults for what they report: a log line per request
        # (info) and every span exported to the stack's OTLP collector. The figures above, like
        # the rest of this benchmark, are at SIGNET_LOG_LEVEL=warning without span export.
        restart_auth_cache "" SIGNET_LOG_LEVEL=info SIGNET_OTLP_ENDPOINT=http://127.0.0.1:4318
        read -r c a f < <(cache_run)
        obs_runs="$obs_runs $c"; obs_cpu_runs="$obs_cpu_runs $a"; cer_failed=$((cer_failed + ${f:-1}))
    done
    restart_auth_cache ""
}
credential_cache_lines() {
    printf '%-58s %12s   runs:%s  (auth CPU ms/ceremony %s; load%s)\n' "sign-in ceremonies, credential cache missed (cache size 0)" \
        "$(printf '%s' "$cold_runs" | median)" "$cold_runs" "$(printf '%s' "$cold_cpu_runs" | median)" "$cache_loads"
    printf '%-58s %12s   runs:%s  (auth CPU ms/ceremony %s; paired with the line above)\n' "sign-in ceremonies, credential cache hit (default)" \
        "$(printf '%s' "$warm_runs" | median)" "$warm_runs" "$(printf '%s' "$warm_cpu_runs" | median)"
    printf '%-58s %12s   runs:%s  (auth CPU ms/ceremony %s; after the line above)\n' "  the same, log level info and spans exported (defaults)" \
        "$(printf '%s' "$obs_runs" | median)" "$obs_runs" "$(printf '%s' "$obs_cpu_runs" | median)"
}
if [ "${1:-}" = cache ]; then
    BIN="$(swift build -c release --show-bin-path)"
    DURATION="${DURATION:-10}" CONNECTIONS="${CONNECTIONS:-16}" cer_failed=0
    export SIGNET_LOG_LEVEL="${SIGNET_LOG_LEVEL:-warning}" SIGNET_OTLP_ENDPOINT="${SIGNET_OTLP_ENDPOINT:-}"
    trap 'bash scripts/stack.sh down >/dev/null 2>&1' EXIT
    bash scripts/stack.sh up release >/dev/null 2>&1 || { echo "stack failed to start; see .data/logs" >&2; exit 1; }
    credential_cache_pairs
    echo "WebAuthn sign-in, credential cache missed and hit (${COLD_PAIRS:-1} pairs, ${DURATION} s, $CONNECTIONS workers)"
    credential_cache_lines
    [ "$cer_failed" = 0 ] || printf 'note: %s ceremonies failed\n' "$cer_failed"
    exit 0
fi
# GET /healthz through the HTTP layer alone, without the stack (so without the stack lock):
# `signet-bench serve-healthz` serves the services' own /healthz handler through HTTPServer and
# HTTPApplication on a private port; wrk (2 threads, 64 connections, as make bench runs it)
# measures it in each SIGNET_HTTP_MODE, alternating, PAIRS pairs (the order swapped every other
# pair), beside nginx answering `return 200` itself (two workers: the ceiling on these cores).
http_healthz() {
    local BIN pairs="${PAIRS:-3}" duration="${DURATION:-5}" port="${HEALTHZ_PORT:-18181}" nport="${BENCH_NGINX_PORT:-18099}"
    swift build -c release --product signet-bench >/dev/null 2>&1 || { echo "signet-bench did not build" >&2; exit 1; }
    BIN="$(swift build -c release --show-bin-path)"
    command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
    local dir="$ROOT/.data/bench-nginx"
    mkdir -p "$dir" "$ROOT/.data/logs"
    cat >"$dir/nginx.conf" <<NGINX
user $(id -un) $(id -gn);
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $dir/tmp;
    proxy_temp_path $dir/tmp;
    fastcgi_temp_path $dir/tmp;
    uwsgi_temp_path $dir/tmp;
    scgi_temp_path $dir/tmp;
    server { listen 127.0.0.1:$nport; location = /healthz { return 200; } }
}
NGINX
    one() { # mode [label binary-folder]
        SIGNET_HTTP_MODE="$1" "${3:-$BIN}/signet-bench" serve-healthz "$port" $((duration + 20)) >>"$ROOT/.data/logs/bench-healthz.log" 2>&1 &
        local s=$! load
        until curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do sleep 0.1; done
        wrk -t2 -c64 -d2s "http://127.0.0.1:$port/healthz" >/dev/null
        load=$(cut -d' ' -f1-3 /proc/loadavg)
        local rps us
        read -r rps us < <(wrk_with_cpu "$s" "http://127.0.0.1:$port/healthz" "$duration")
        kill -TERM "$s" 2>/dev/null; wait "$s" 2>/dev/null || true
        printf '%-5s GET /healthz %10s/s   server CPU %5s µs/request   load %s\n' "${2:-$1}" "$rps" "$us" "$load"
    }
    # BIN_A=<folder of another release build>: that build's signet-bench (A) against this one's
    # (B), both in SIGNET_HTTP_MODE (loop by default), instead of the two modes.
    if [ -n "${BIN_A:-}" ]; then
        local mode="${SIGNET_HTTP_MODE:-loop}"
        echo "GET /healthz, HTTP layer alone, $mode mode, A: $BIN_A, B: $BIN (wrk -t2 -c64 -d${duration}s; $pairs pairs; goal 80,000/s, issue #14)"
        for p in $(seq "$pairs"); do
            if [ $((p % 2)) = 1 ]; then one "$mode" A "$BIN_A"; one "$mode" B "$BIN"; else one "$mode" B "$BIN"; one "$mode" A "$BIN_A"; fi
        done
        return
    fi
    echo "GET /healthz, HTTP layer alone (signet-bench serve-healthz; wrk -t2 -c64 -d${duration}s; $pairs pairs; goal 80,000/s, issue #14)"
    for p in $(seq "$pairs"); do
        if [ $((p % 2)) = 1 ]; then one loop; one pool; else one pool; one loop; fi
    done
    if nginx -c "$dir/nginx.conf" -p "$dir" 2>>"$ROOT/.data/logs/bench-nginx.log"; then
        sleep 0.5
        printf '%-5s GET /healthz %10s/s   load %s  (nginx return 200: the ceiling)\n' nginx \
            "$(wrk -t2 -c64 -d"${duration}s" "http://127.0.0.1:$nport/healthz" | awk '/Requests\/sec/ {print $2}')" "$(cut -d' ' -f1-3 /proc/loadavg)"
        kill -QUIT "$(cat "$dir/nginx.pid")" 2>/dev/null || true
    fi
}
# Allocations on the request path, counted exactly (README "Allocations on every request"): a
# uprobe on jemalloc's malloc (perf, Debian's linux-perf) counts the calls the authentication
# process makes during a run of sign-in ceremonies (4 workers, DURATION s, after a 1 s warm-up;
# the count includes the workers' set-up, the same on both sides) and during wrk's GET /healthz
# (64 connections, 3 s, on the service's own port). Unlike CPU time, the count does not move
# with the machine, so it resolves changes a paired run of ceremonies cannot. BIN_A=<folder of
# another release build> alternates that build's signet-authentication (A) with this one's (B),
# PAIRS pairs; without it, PAIRS runs of this build. The probe slows every allocation, so the
# rates printed are not the service's.
http_allocs() {
    local BIN pidfile envfile pairs="${PAIRS:-2}" duration="${DURATION:-3}"
    local lib=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
    command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
    command -v perf >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null; }
    [ -e "$lib" ] || lib=$(ldconfig -p | awk '/libjemalloc\.so\.2 / { print $NF; exit }')
    auth_ab_stack
    perf probe -q -d 'probe_libjemalloc:signet_malloc' 2>/dev/null || true
    perf probe -q -x "$lib" -a "signet_malloc=0x$(nm -D --defined-only "$lib" | awk '$3 == "malloc" { print $1; exit }')" ||
        { echo "could not place a uprobe on $lib's malloc (perf probe)" >&2; exit 1; }
    trap 'perf probe -q -d "probe_libjemalloc:signet_malloc" 2>/dev/null; bash scripts/stack.sh down >/dev/null 2>&1' EXIT
    count() { # pid command...: the probe's count in pid while the command runs; the command's output to $count_out
        perf stat -x, -e probe_libjemalloc:signet_malloc -p "$1" -o "$ROOT/.data/logs/bench-allocs.stat" -- "${@:2}" >"$ROOT/.data/logs/bench-allocs.out" 2>>"$ROOT/.data/logs/bench-allocs.log"
        awk -F, '/signet_malloc/ { print $1 }' "$ROOT/.data/logs/bench-allocs.stat"
    }
    one() { # label binary-folder
        restart_auth "${SIGNET_HTTP_MODE:-loop}" "$2"
        local pid n h rate failed requests
        pid=$(cat "$pidfile")
        "$BIN/signet-bench" ceremonies http://127.0.0.1:8080 "${SIGNET_DEMO_RP_API_KEY:-dev-demo-rp-key}" 1 4 >/dev/null 2>&1 || true
        n=$(count "$pid" "$BIN/signet-bench" ceremonies http://127.0.0.1:8080 "${SIGNET_DEMO_RP_API_KEY:-dev-demo-rp-key}" "$duration" 4)
        rate=$(awk '/^ceremonies_per_s/ { print $2 }' "$ROOT/.data/logs/bench-allocs.out")
        failed=$(awk '/^ceremonies_failed/ { print $2 }' "$ROOT/.data/logs/bench-allocs.out")
        h=$(count "$pid" wrk -t2 -c64 -d3s http://127.0.0.1:8082/healthz)
        requests=$(awk '/requests in/ { print $1 }' "$ROOT/.data/logs/bench-allocs.out")
        awk -v m="$1" -v n="$n" -v r="$rate" -v f="$failed" -v d="$duration" -v h="$h" -v q="$requests" 'BEGIN {
            printf "%-2s mallocs per sign-in ceremony %7.1f  (%d in %.0f ceremonies, %s failed)   per GET /healthz %5.1f  (%d in %d requests)\n",
                m, n / (r * d), n, r * d, f, h / q, h, q }'
    }
    if [ -n "${BIN_A:-}" ]; then
        echo "allocations in the authentication process, A: $BIN_A, B: $BIN ($pairs pairs; anchors: 437 a ceremony and 18 a /healthz before stop 37, 338 and 11 after it)"
        for p in $(seq "$pairs"); do
            if [ $((p % 2)) = 1 ]; then one A "$BIN_A"; one B "$BIN"; else one B "$BIN"; one A "$BIN_A"; fi
        done
    else
        echo "allocations in the authentication process, $BIN ($pairs runs; anchors: 437 a ceremony and 18 a /healthz before stop 37, 338 and 11 after it)"
        for p in $(seq "$pairs"); do one "$p" "$BIN"; done
    fi
}
if [ "${1:-}" = modes ]; then
    http_modes
    exit 0
fi
if [ "${1:-}" = allocs ]; then
    http_allocs
    exit 0
fi
if [ "${1:-}" = healthz ]; then
    http_healthz
    exit 0
fi
DURATION="${DURATION:-10}"
CONNECTIONS="${CONNECTIONS:-16}"
PG_PORT="${SIGNET_PG_PORT:-54329}"
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
PGBENCH="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/pgbench"

# Request logs at info would measure the logger; the figures below are for warning level.
export SIGNET_LOG_LEVEL="${SIGNET_LOG_LEVEL:-warning}"
# The local stack exports every span to a Python OTLP sink: that would measure the exporter and
# the sink, so span export is off here unless a collector is named (SIGNET_OTLP_ENDPOINT=url).
export SIGNET_OTLP_ENDPOINT="${SIGNET_OTLP_ENDPOINT:-}"
trap 'bash scripts/stack.sh down' EXIT
bash scripts/stack.sh up release >/dev/null 2>&1 || { echo "stack failed to start; see .data/logs" >&2; exit 1; }

# The Python peer (../shared/peer: Starlette/uvicorn, py_webauthn, asyncpg; same API, same SQL
# function per sign-in), started from its own start.sh and stopped by its stop.sh.
PEER_DIR="${SIGNET_PEER_DIR:-$ROOT/../shared/peer}"
PEER_URL="http://127.0.0.1:${PEER_PORT:-9090}"
peer=0
if [ "${PEER:-1}" = 0 ]; then
    peer_note="skipped (PEER=0)"
elif [ ! -x "$PEER_DIR/start.sh" ]; then
    peer_note="skipped: no Python peer at $PEER_DIR"
elif bash "$PEER_DIR/start.sh" >"$ROOT/.data/logs/bench-peer.log" 2>&1; then
    peer=1
    trap 'bash "$PEER_DIR/stop.sh" >>"$ROOT/.data/logs/bench-peer.log" 2>&1; bash scripts/stack.sh down' EXIT
    peer_note="$PEER_URL"
else
    peer_note="skipped: the peer did not start (see .data/logs/bench-peer.log)"
    bash "$PEER_DIR/stop.sh" >>"$ROOT/.data/logs/bench-peer.log" 2>&1 || true
fi
echo "peer: $peer_note" >&2

# Idle footprint of each service process, before any load: resident memory (and what of it
# is anonymous, file-backed, and the proportional share), and threads grouped by name, each
# group with its reason (scripts/footprint.py; README "Benchmark").
sleep 3
footprint=$(python3 scripts/footprint.py "$ROOT/.data" 2>&1 || true)

rps() { awk '/Requests\/sec/ {print $2}'; }
non2xx() { awk '/Non-2xx/ {print $5} END {}' ; }

echo "warming up…" >&2
wrk -t2 -c"$CONNECTIONS" -d2s http://127.0.0.1:8081/healthz >/dev/null
RUNS="${RUNS:-3}"
# GET /healthz on the registration service, beside its ceiling: nginx answering `return 200`
# itself (its own instance, two workers, no upstream), and the peer's /healthz. One run of
# each moves by 15-25 % on this machine (64k-83k/s for one build within minutes), so they
# alternate RUNS times and the medians are printed with every run; and the service's CPU per
# request (from /proc), which other work disturbs least.
mkdir -p "$ROOT/.data/bench-nginx"
cat >"$ROOT/.data/bench-nginx/nginx.conf" <<NGINX
user $(id -un) $(id -gn);
worker_processes 2;
pid $ROOT/.data/bench-nginx/nginx.pid;
error_log $ROOT/.data/bench-nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $ROOT/.data/bench-nginx/tmp;
    proxy_temp_path $ROOT/.data/bench-nginx/tmp;
    fastcgi_temp_path $ROOT/.data/bench-nginx/tmp;
    uwsgi_temp_path $ROOT/.data/bench-nginx/tmp;
    scgi_temp_path $ROOT/.data/bench-nginx/tmp;
    server { listen 127.0.0.1:${BENCH_NGINX_PORT:-18099}; location = /healthz { return 200; } }
}
NGINX
nginx_up=0
nginx -c "$ROOT/.data/bench-nginx/nginx.conf" -p "$ROOT/.data/bench-nginx" 2>>"$ROOT/.data/logs/bench-nginx.log" && nginx_up=1 && sleep 0.5
trivial_runs="" trivial_cpu_runs="" nginx_runs="" peer_healthz_runs=""
registration_pid=$(cat "$ROOT/.data/run/registration.pid")
for _ in $(seq "$RUNS"); do
    read -r rps us < <(wrk_with_cpu "$registration_pid" http://127.0.0.1:8081/healthz "$DURATION")
    trivial_runs="$trivial_runs $rps" trivial_cpu_runs="$trivial_cpu_runs $us"
    [ "$nginx_up" = 0 ] || nginx_runs="$nginx_runs $(wrk -t2 -c64 -d"${DURATION}s" "http://127.0.0.1:${BENCH_NGINX_PORT:-18099}/healthz" | rps)"
    [ "$peer" = 0 ] || peer_healthz_runs="$peer_healthz_runs $(wrk -t2 -c64 -d"${DURATION}s" "$PEER_URL/healthz" | rps)"
done
[ "$nginx_up" = 0 ] || kill -QUIT "$(cat "$ROOT/.data/bench-nginx/nginx.pid")" 2>/dev/null || true
tx=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s bench/put-tenant.lua http://127.0.0.1:8081)
# WebAuthn: full sign-in ceremonies (options + verify) over HTTP through the gateway, each
# worker with its own credential (a software authenticator signing on the client side).
BIN="$(swift build -c release --show-bin-path)"
# pgbench for the sign-in's durable work, on a copy of the authentication schema: read the
# credential and the challenge's use, then record the challenge and bump the counter.
psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -qAt -c "DROP DATABASE IF EXISTS signet_bench_auth" -c "CREATE DATABASE signet_bench_auth OWNER signet" >/dev/null
pg_dump -h 127.0.0.1 -p "$PG_PORT" -U signet -s signet_authentication | psql -h 127.0.0.1 -p "$PG_PORT" -U signet -q signet_bench_auth >/dev/null
psql -h 127.0.0.1 -p "$PG_PORT" -U signet -q signet_bench_auth -c "INSERT INTO credentials (tenant_id, credential_id, subject_ref, user_handle, public_key_cose, algorithm, sign_count, backup_eligible, backup_state, transports, registered_at) SELECT 'demo', int4send(g), 'bench-' || g, int4send(g), '\\x00', -7, 0, true, true, ARRAY['internal'], now() FROM generate_series(1, 64) g" >/dev/null
# CPU time (from /proc: user + system, with exited children's, so that PostgreSQL backends
# that came and went are counted in the postmaster) of PostgreSQL, and of pgbench as a child
# of this shell (`times` must run in this shell, not in a $(…) subshell, to see it).
TICKS=$(getconf CLK_TCK)
postgres_ticks() { { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk '/^[0-9]+ \(postgres\)/ { t += $14 + $15 + $16 + $17 } END { print t + 0 }'; }
children_seconds() { awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); print u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$1"; }
# This machine's speed moves by 10-25 % over minutes: the ceremonies and their pgbench anchor
# run RUNS times, each ceremony run followed at once by its pgbench runs, so that each pair
# sees the same machine; medians and the per-pair ratios are printed. pgbench runs while the
# stack is up and idle (its pollers cost a little CPU). The service prepares its statements
# once per connection: -M prepared is the like-for-like anchor; -M simple is printed beside it.
RUNS="${RUNS:-3}"
# pgbench, CONNECTIONS clients for DURATION, in query mode $1, script $2, database $3. A run that
# fails (exit 1, or 2 for aborted clients) leaves its output in the log and no figure, rather
# than ending the benchmark.
run_pgbench() {
    local out
    out=$("$PGBENCH" -h 127.0.0.1 -p "$PG_PORT" -U signet -n -c "$CONNECTIONS" -j 2 -T "$DURATION" -M "$1" -f "$2" "$3" 2>&1) ||
        printf 'pgbench -M %s %s failed:\n%s\n' "$1" "$2" "$out" >>"$ROOT/.data/logs/bench-pgbench.log"
    printf '%s\n' "$out"
}
gateway_runs=""
cer_failed=0
pg_auth_runs=""
pg_auth_simple_runs=""
pair_ratios=""
pg_cpu=""
: >"$ROOT/.data/logs/bench-ceremonies.log"
: >"$ROOT/.data/logs/bench-pgbench.log"
peer_runs=""
peer_pair_ratios=""
peer_cpu_runs=""
peer_cpu=""
gateway_total_runs=""
peer_total_runs=""
PEER_RUN="${PEER_RUN_DIR:-$ROOT/.data/peer/run}"
peer_signins() {
    PGOPTIONS="-c client_min_messages=warning" psql -h 127.0.0.1 -p "${PEER_PG_PORT:-54339}" -U peer -d peer -qAt \
        -c "SELECT count(*) FROM outbox WHERE event_type = 'peer.authentication.succeeded.v1'"
}
# In signet-bench's output: what follows a line's key ("cpu_ms_per_ceremony authentication 0.4 …"),
# a line's single value ("ceremonies_per_s 1234.5"), and one process group's figure in a
# "name value name value …" line; and a ratio of two rates to two decimals (empty if b is 0).
line_of() { printf '%s\n' "$1" | sed -n "s/^$2 //p"; }
value_of() { printf '%s\n' "$1" | awk -v k="$2" '$1 == k {print $2}'; }
figure_of() { printf '%s\n' "$1" | awk -v n="$2" '{for (i = 1; i < NF; i += 2) if ($i == n) print $(i + 1)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b }'; }
# One run of the peer: ceremonies/s, and CPU per ceremony of its app and its PostgreSQL (its
# own processes, cpu.py) and of the client (signet-bench's own line), per sign-in recorded.
run_peer() {
    local n0 n1 c0 c1 out
    n0=$(peer_signins)
    c0=$(PEER_RUN_DIR="$PEER_RUN" python3 "$PEER_DIR/cpu.py")
    out=$("$BIN/signet-bench" ceremonies "$PEER_URL" "${PEER_RP_KEY:-dev-demo-rp-key}" "$DURATION" "$CONNECTIONS" 2>>"$ROOT/.data/logs/bench-peer.log") ||
        echo "signet-bench ceremonies against the peer failed (exit $?)" >>"$ROOT/.data/logs/bench-peer.log"
    c1=$(PEER_RUN_DIR="$PEER_RUN" python3 "$PEER_DIR/cpu.py")
    n1=$(peer_signins)
    p=$(value_of "$out" ceremonies_per_s)
    peer_runs="$peer_runs $p"
    local client; client=$(figure_of "$(line_of "$out" cpu_ms_per_ceremony)" client)
    peer_cpu="$(PEER_RUN_DIR="$PEER_RUN" python3 "$PEER_DIR/cpu.py" diff "$c0" "$c1" "$((n1 - n0))")  client ${client:-0}"
    peer_cpu_runs="$peer_cpu_runs $(printf '%s\n' "$peer_cpu" | awk '{print $2}')"
    peer_total_runs="$peer_total_runs $(printf '%s\n' "$peer_cpu" | awk '{printf "%.3f", $6 + $8}')"
}
# One run of Signet's ceremonies (extra environment for signet-bench as arguments), its output.
signet_ceremonies() {
    env "$@" "$BIN/signet-bench" ceremonies http://127.0.0.1:8080 "${SIGNET_DEMO_RP_API_KEY:-dev-demo-rp-key}" "$DURATION" "$CONNECTIONS" 2>>"$ROOT/.data/logs/bench-ceremonies.log" ||
        echo "signet-bench ceremonies $* failed (exit $?)" >>"$ROOT/.data/logs/bench-ceremonies.log"
}
# One run of Signet's ceremonies (extra environment for signet-bench as arguments after the
# name of its lists): its rate in `rate`, its CPU line in `cpu`, its failures counted, and the
# rate, the authentication service's CPU and the whole stack's appended to <name>_runs,
# <name>_auth_runs and <name>_total_runs.
append() { printf -v "$1" '%s %s' "${!1}" "$2"; }
run_ceremonies() {
    local name=$1
    shift
    out=$(signet_ceremonies "$@")
    rate=$(value_of "$out" ceremonies_per_s)
    failed=$(value_of "$out" ceremonies_failed)
    cer_failed=$((cer_failed + ${failed:-1}))
    # Where the CPU went (signet-bench reads /proc around its measured loop).
    cpu=$(line_of "$out" cpu_ms_per_ceremony)
    append "${name}_runs" "$rate"
    append "${name}_auth_runs" "$(figure_of "$cpu" authentication)"
    append "${name}_total_runs" "$(figure_of "$cpu" total)"
}
# Through the gateway (the goal's line); the last run's breakdown is printed.
run_signet() {
    run_ceremonies gateway
    c=$rate
    cer_cpu=$cpu
    cer_switches=$(line_of "$out" context_switches_per_ceremony)
    cer_threads=$(line_of "$out" threads)
}
# The same ceremonies sent to the authentication service itself (SIGNET_BENCH_SERVICE_URL: no
# gateway in between, as the peer is measured; set-up still goes through the gateway): the
# like-for-like line beside the peer. The goal's line stays the one through the gateway.
direct_runs=""
direct_pair_ratios=""
direct_total_runs=""
direct_auth_runs=""
run_signet_direct() {
    run_ceremonies direct SIGNET_BENCH_SERVICE_URL=http://127.0.0.1:8082
    d=$rate
}
gateway_auth_runs=""
pair=0
for _ in $(seq "$RUNS"); do
    pair=$((pair + 1))
    # Alternating order (Signet first in odd pairs, the peer first in even ones), so that
    # neither side always meets the machine after the other.
    if [ "$peer" = 1 ] && [ $((pair % 2)) = 0 ]; then run_peer; sleep 2; fi
    run_signet
    if [ "$peer" = 1 ]; then sleep 2; run_signet_direct; fi
    if [ "$peer" = 1 ] && [ $((pair % 2)) = 1 ]; then sleep 2; run_peer; fi
    [ "$peer" = 0 ] || peer_pair_ratios="$peer_pair_ratios $(ratio "$c" "$p")"
    [ "$peer" = 0 ] || direct_pair_ratios="$direct_pair_ratios $(ratio "$d" "$p")"
    sleep 2  # the consumers catch up with the ceremonies' events before pgbench starts
    pg_before=$(postgres_ticks)
    times >"$ROOT/.data/logs/times.before"
    out=$(run_pgbench prepared bench/sign-in.sql signet_bench_auth)
    times >"$ROOT/.data/logs/times.after"
    sleep 1  # the backends have exited and been reaped: their CPU is the postmaster's
    pg_after=$(postgres_ticks)
    t=$(printf '%s\n' "$out" | awk '/^tps = / {printf "%.0f", $3; exit}')
    pg_auth_runs="$pg_auth_runs $t"
    pair_ratios="$pair_ratios $(awk -v c="$c" -v t="$t" 'BEGIN { if (t > 0) printf "%.1f", 100 * c / t }')"
    tx_count=$(printf '%s\n' "$out" | awk '/^number of transactions actually processed/ {split($NF, n, "/"); print n[1]; exit}')
    [ -z "$tx_count" ] || [ "$tx_count" = 0 ] || pg_cpu=$(awk -v a="$pg_after" -v b="$pg_before" -v t="$TICKS" -v n="$tx_count" \
        -v ca="$(children_seconds "$ROOT/.data/logs/times.after")" -v cb="$(children_seconds "$ROOT/.data/logs/times.before")" \
        'BEGIN { p = (a - b) * 1000 / t / n; c = (ca - cb) * 1000 / n; printf "postgres %.3f  pgbench %.3f  total %.3f", p, c, p + c }')
    out=$(run_pgbench simple bench/sign-in.sql signet_bench_auth)
    pg_auth_simple_runs="$pg_auth_simple_runs $(printf '%s\n' "$out" | awk '/^tps = / {printf "%.0f", $3; exit}')"
    # pgbench's rows go, so that no autovacuum of them runs under the next measurement and each
    # anchor run starts from the same tables.
    psql -h 127.0.0.1 -p "$PG_PORT" -U signet -qAt signet_bench_auth -c "TRUNCATE used_challenges, outbox" -c "VACUUM credentials" >/dev/null
done
cer=$(printf '%s' "$gateway_runs" | median)
pg_auth_tps=$(printf '%s' "$pg_auth_runs" | median)
pg_auth_simple_tps=$(printf '%s' "$pg_auth_simple_runs" | median)
pair_ratio=$(printf '%s' "$pair_ratios" | median)
auth_cpu=$(printf '%s' "$gateway_auth_runs" | median)
signet_total=$(printf '%s' "$gateway_total_runs" | median)
# PostgreSQL's CPU per ceremony against pgbench's per transaction of the same SQL at the same
# rate (-R, the ceremonies' median): fewer commits share a WAL flush at lower rates, so this
# is the like-for-like anchor for what the service's sessions cost the server.
pg_before=$(postgres_ticks)
out=$("$PGBENCH" -h 127.0.0.1 -p "$PG_PORT" -U signet -n -c "$CONNECTIONS" -j 2 -T "$DURATION" -R "$(awk -v c="$cer" 'BEGIN { printf "%.0f", c }')" -M prepared -f bench/sign-in.sql signet_bench_auth 2>&1) || true
sleep 1
pg_after=$(postgres_ticks)
tx_count=$(printf '%s\n' "$out" | awk '/^number of transactions actually processed/ {split($NF, n, "/"); print n[1]; exit}')
pg_rated_cpu=$(awk -v a="$pg_after" -v b="$pg_before" -v t="$TICKS" -v n="${tx_count:-0}" 'BEGIN { if (n > 0) printf "%.3f", (a - b) * 1000 / t / n }')
psql -h 127.0.0.1 -p "$PG_PORT" -U signet -qAt signet_bench_auth -c "TRUNCATE used_challenges, outbox" >/dev/null
if [ "$peer" = 1 ]; then
    peer_med=$(printf '%s' "$peer_runs" | median)
    peer_cpu_med=$(printf '%s' "$peer_cpu_runs" | median)
    peer_total=$(printf '%s' "$peer_total_runs" | median)
    peer_pair_ratio=$(printf '%s' "$peer_pair_ratios" | median)
fi
# Tail latency at half of each side's peak (its median ceremonies/s): the same client, paced,
# RUNS runs of each side alternating (Signet first in odd pairs), each figure the median of its
# runs with the runs beside it: one run's p99 is a few stalls of the machine (README, "Tail
# latency").
half() { awk -v r="$1" 'BEGIN { printf "%.0f", r / 2 }'; }
paced() { # name url key rate log: appends p50, p99 and the tail's windows to <name>_p50s, _p99s, _wins
    local out
    out=$("$BIN/signet-bench" ceremonies "$2" "$3" "$DURATION" "$CONNECTIONS" "$4" 2>>"$5")
    append "$1_p50s" "$(printf '%s\n' "$out" | awk '/^latency_ms / {print $3}')"
    append "$1_p99s" "$(printf '%s\n' "$out" | awk '/^latency_ms / {print $7}')"
    append "$1_wins" "$(printf '%s\n' "$out" | awk '/^latency_tail_windows / {print $2}')"
}
lat() { # name: "p50 X ms  p99 Y ms  (medians of N runs; p50s …; p99s …; the slowest 1 % planned within K … of the W windows of 100 ms)"
    local n50="$1_p50s" n99="$1_p99s" nw="$1_wins" p50s p99s wins
    p50s=${!n50}
    p99s=${!n99}
    wins=${!nw}
    printf 'p50 %s ms  p99 %s ms   (medians of %s runs; p50s%s; p99s%s; the slowest 1 %% planned within%s of the %s windows of 100 ms)' \
        "$(printf '%s' "$p50s" | median)" "$(printf '%s' "$p99s" | median)" "$(printf '%s' "$p99s" | wc -w)" "$p50s" "$p99s" "$wins" \
        "$(awk -v d="$DURATION" 'BEGIN { printf "%d", d * 10 }')"
}
paced_peer() { paced peer_lat "$PEER_URL" "${PEER_RP_KEY:-dev-demo-rp-key}" "$(half "$peer_med")" "$ROOT/.data/logs/bench-peer.log"; }
signet_lat_p50s="" signet_lat_p99s="" signet_lat_wins="" peer_lat_p50s="" peer_lat_p99s="" peer_lat_wins=""
for i in $(seq "$RUNS"); do
    if [ "$peer" = 1 ] && [ $((i % 2)) = 0 ]; then paced_peer; sleep 2; fi
    paced signet_lat http://127.0.0.1:8080 "${SIGNET_DEMO_RP_API_KEY:-dev-demo-rp-key}" "$(half "$cer")" "$ROOT/.data/logs/bench-ceremonies.log"
    if [ "$peer" = 1 ] && [ $((i % 2)) = 1 ]; then sleep 2; paced_peer; fi
    sleep 2
done
signet_latency=$(lat signet_lat)
if [ "$peer" = 1 ]; then
    peer_latency=$(lat peer_lat)
    bash "$PEER_DIR/stop.sh" >>"$ROOT/.data/logs/bench-peer.log" 2>&1 || true
    trap 'bash scripts/stack.sh down' EXIT
fi
# Adaptive sign-in flows (start + fido2 challenge + verify, ending in a session) under the demo
# tenant's default ruleset; its rate limits raised so that they do not cap the measurement (the
# document replaces the seeded one: it keeps the direct passkey routes, directSignIn, as seeded).
curl -fsS -X PUT -H "Authorization: Bearer ${SIGNET_ADMIN_TOKEN:-dev-admin-token}" -H 'Content-Type: application/json' \
    -d '{"signInsPerMinutePerIP": 1000000, "signInsPerSecondPerTenant": 1000000, "directSignIn": true}' \
    http://127.0.0.1:8082/v1/admin/tenants/demo/authentication-settings >/dev/null
flows=$("$BIN/signet-bench" flows http://127.0.0.1:8080 "${SIGNET_DEMO_RP_API_KEY:-dev-demo-rp-key}" "$DURATION" "$CONNECTIONS" 2>"$ROOT/.data/logs/bench-flows.log")
rules=$("$BIN/signet-bench" rules 3)
verify=$("$BIN/signet-bench" verify 5)
openssl_speed=$(openssl speed -seconds 5 ecdsap256 2>/dev/null | awk '/nistp256/' | tail -n 1)
openssl_verify=$(printf '%s\n' "$openssl_speed" | awk '{print $NF}')
openssl_sign=$(printf '%s\n' "$openssl_speed" | awk '{print $(NF - 1)}')

credential_cache_pairs

# The same with the four consuming services stopped: registration, its relay and PostgreSQL
# alone on the two cores, as pgbench has them.
for s in authentication transaction oob pii; do
    pid=$(cat ".data/run/$s.pid" 2>/dev/null || true)
    [ -z "$pid" ] || kill -TERM "$pid" 2>/dev/null || true
done
sleep 2
tx_alone=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s bench/put-tenant.lua http://127.0.0.1:8081)

# pgbench on a copy of the registration schema, so its rows do not reach Kafka.
psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -qAt -c "DROP DATABASE IF EXISTS signet_bench" -c "CREATE DATABASE signet_bench OWNER signet" >/dev/null
pg_dump -h 127.0.0.1 -p "$PG_PORT" -U signet -s signet_registration | psql -h 127.0.0.1 -p "$PG_PORT" -U signet -q signet_bench >/dev/null
pgb=$(run_pgbench prepared bench/put-tenant.sql signet_bench)
pg_tps=$(printf '%s\n' "$pgb" | awk '/^tps = / {print $3; exit}')
pgb_simple=$(run_pgbench simple bench/put-tenant.sql signet_bench)
pg_simple_tps=$(printf '%s\n' "$pgb_simple" | awk '/^tps = / {print $3; exit}')


printf '\nSignet benchmark (%s s per run, %s cores, log level %s)\n' "$DURATION" "$(nproc)" "$SIGNET_LOG_LEVEL"
printf '%-58s %12s\n' "figure" "per second"
printf '%-58s %12s   runs:%s  (median; goal 80,000; registration CPU µs/request %s, runs:%s)\n' "HTTP GET /healthz (trivial route, 64 connections)" \
    "$(printf '%s' "$trivial_runs" | median)" "$trivial_runs" "$(printf '%s' "$trivial_cpu_runs" | median)" "$trivial_cpu_runs"
if [ -n "$nginx_runs" ]; then
    printf '%-58s %12s   runs:%s  (median, alternating with the line above)\n' "nginx return 200, same load (ceiling)" "$(printf '%s' "$nginx_runs" | median)" "$nginx_runs"
else
    printf '%-58s %12s\n' "nginx return 200, same load (ceiling)" "n/a"
fi
[ "$peer" = 0 ] || printf '%-58s %12s   runs:%s\n' "the Python peer's /healthz, same load" "$(printf '%s' "$peer_healthz_runs" | median)" "$peer_healthz_runs"
printf '%-58s %12s\n' "HTTP PUT tenant, full stack (4 services consume each event)" "$(printf '%s\n' "$tx" | rps)"
printf '%-58s %12s\n' "HTTP PUT tenant, registration alone (1 tx + outbox row)" "$(printf '%s\n' "$tx_alone" | rps)"
printf '%-58s %12s\n' "pgbench -M prepared, same transaction, $CONNECTIONS clients (anchor)" "$pg_tps"
printf '%-58s %12s\n' "pgbench -M simple, same transaction (for reference)" "$pg_simple_tps"
printf '\n%-58s %12s\n' "WebAuthn" "per second"
printf '%-58s %12s\n' "assertion verification in process (FIDO, ES256, 1 thread)" "$(printf '%s\n' "$verify" | awk '/assertion_verify_per_s/ {print $2}')"
printf '%-58s %12s\n' "Crypto ES256 verify alone (1 thread)" "$(printf '%s\n' "$verify" | awk '/crypto_es256_verify_per_s/ {print $2}')"
printf '%-58s %12s\n' "openssl speed ecdsap256 verify (anchor, 1 core)" "$openssl_verify"
printf '%-58s %12s\n' "session token signing in process (JWT ES256, 1 thread)" "$(printf '%s\n' "$verify" | awk '/session_token_sign_per_s/ {print $2}')"
printf '%-58s %12s\n' "Crypto ES256 sign alone (1 thread)" "$(printf '%s\n' "$verify" | awk '/crypto_es256_sign_per_s/ {print $2}')"
printf '%-58s %12s\n' "openssl speed ecdsap256 sign (anchor, 1 core)" "$openssl_sign"
printf '%-58s %12s   runs:%s\n' "sign-in ceremonies over HTTP via gateway ($CONNECTIONS workers)" "$cer" "$gateway_runs"
printf '%-58s %12s   runs:%s\n' "pgbench -M prepared, sign-in SQL, $CONNECTIONS clients (anchor)" "$pg_auth_tps" "$pg_auth_runs"
printf '%-58s %12s   runs:%s\n' "pgbench -M simple, same SQL (for reference)" "$pg_auth_simple_tps" "$pg_auth_simple_runs"
awk -v c="$cer" -v p="$pg_auth_tps" -v s="$pg_auth_simple_tps" -v r="$pair_ratio" -v rs="$pair_ratios" 'BEGIN { if (p > 0 && s > 0) printf "%-58s %11.1f%%  (medians; %.1f%% of -M simple; per pair:%s, median %s%%; target 50%% in issue #3, 30%% in #14)\n", "ceremonies / anchor", 100 * c / p, 100 * c / s, rs, r }'
vr=$(printf '%s\n' "$verify" | awk '/assertion_verify_per_s/ {print $2}')
awk -v v="$vr" -v o="$openssl_verify" 'BEGIN { if (o > 0) printf "%-58s %11.1f%%  (target 90%%)\n", "assertion verification / openssl", 100 * v / o }'
printf '%-58s %s\n' "CPU ms per ceremony (last run)" "$cer_cpu"
printf '%-58s %s\n' "context switches per ceremony, services (last run)" "${cer_switches:-n/a}"
printf '%-58s %s\n' "threads per service under load (last run)" "${cer_threads:-n/a}"
printf '%-58s %s   runs:%s\n' "authentication CPU ms per ceremony (median; target 0.25)" "$auth_cpu" "$gateway_auth_runs"
printf '%-58s %s   (pgbench -R %s: PostgreSQL %s ms per transaction; target within 10 %%)\n' "PostgreSQL CPU ms per ceremony (last run)" \
    "$(figure_of "$cer_cpu" postgres)" "$cer" "${pg_rated_cpu:-n/a}"
printf '%-58s %s\n' "ceremony latency at half the peak rate" "$signet_latency"
credential_cache_lines
printf '\n%-58s %s\n' "Python peer" "$peer_note"
if [ "$peer" = 1 ]; then
    printf '%-58s %12s   runs:%s\n' "peer sign-in ceremonies (same client, no gateway)" "$peer_med" "$peer_runs"
    awk -v c="$cer" -v p="$peer_med" -v r="$peer_pair_ratios" -v m="$peer_pair_ratio" 'BEGIN { if (p > 0) printf "%-58s %12.2f   (medians; per pair:%s, median %s; target 1.8)\n", "Signet / peer ceremonies", c / p, r, m }'
    printf '%-58s %s\n' "peer CPU ms per ceremony (last run; app = the service)" "$peer_cpu"
    printf '%-58s %s   runs:%s\n' "peer app CPU ms per ceremony (median)" "$peer_cpu_med" "$peer_cpu_runs"
    printf '%-58s Signet %s  peer %s   (medians; whole stack with the client; runs: Signet%s, peer%s)\n' "whole-stack CPU ms per ceremony" "$signet_total" "$peer_total" "$gateway_total_runs" "$peer_total_runs"
    printf '%-58s %s\n' "peer latency at half its peak rate" "$peer_latency"
    direct_med=$(printf '%s' "$direct_runs" | median)
    printf '%-58s %12s   runs:%s\n' "Signet ceremonies direct to the service (no gateway)" "$direct_med" "$direct_runs"
    awk -v c="$direct_med" -v p="$peer_med" -v r="$direct_pair_ratios" -v m="$(printf '%s' "$direct_pair_ratios" | median)" 'BEGIN { if (p > 0) printf "%-58s %12.2f   (like for like: neither behind a gateway; medians; per pair:%s, median %s)\n", "Signet direct / peer ceremonies", c / p, r, m }'
    printf '%-58s Signet %s  peer %s   (medians; authentication CPU ms%s)\n' "whole-stack CPU ms per ceremony, no gateway on either side" \
        "$(printf '%s' "$direct_total_runs" | median)" "$peer_total" "$direct_auth_runs"
fi
printf '%-58s %s\n' "CPU ms per pgbench sign-in transaction (last run)" "$pg_cpu"
# The most the ceremonies could reach on these cores if the authentication service cost nothing
# but its two ECDSA operations (verify the assertion, sign the session token), everything else
# (PostgreSQL, gateway, client, broker, consumers) as measured above; then with PostgreSQL's
# share at pgbench's full-rate cost per transaction (PostgreSQL spends more per transaction at
# lower rates: fewer commits share a WAL flush); then adding, for the service's own HTTP and
# database round trips, what nginx spends relaying the same two requests (a floor for any
# server that receives and answers them).
printf '%s\n' "$cer_cpu" | awk -v cores="$(nproc)" -v v="$openssl_verify" -v s="$openssl_sign" -v p="$pg_auth_tps" \
    -v bpg="$(printf '%s\n' "$pg_cpu" | awk '{print $2}')" '{
    for (i = 1; i < NF; i += 2) { if ($i == "authentication") a = $(i + 1); if ($i == "postgres") g = $(i + 1); if ($i == "nginx") x = $(i + 1); if ($i == "total") t = $(i + 1) }
    if (t > 0 && v > 0 && s > 0 && p > 0 && bpg > 0) { c = t - a + 1000 / v + 1000 / s; o = c - g + bpg; h = o + x
        printf "%-58s %12.0f   (%.1f%% of the anchor; %.1f%% with PostgreSQL at pgbench'"'"'s cost; %.1f%% adding HTTP at nginx'"'"'s cost)\n",
            "ceiling: ceremonies/s with a service costing only its ECDSA", cores * 1000 / c, 100 * cores * 1000 / c / p, 100 * cores * 1000 / o / p, 100 * cores * 1000 / h / p } }'
printf '%-58s %12s\n' "adaptive sign-in flows over HTTP via gateway (3 requests)" "$(printf '%s\n' "$flows" | awk '/flows_per_s/ {print $2}')"
[ "$cer_failed" = 0 ] || printf 'note: %s ceremonies failed\n' "$cer_failed"
[ ! -s "$ROOT/.data/logs/bench-pgbench.log" ] || printf 'note: a pgbench run failed; its output is in .data/logs/bench-pgbench.log\n'
printf '%s\n' "$flows" | awk '/flows_failed/ && $2 != "0" {print "note: " $2 " flows failed"}'
printf '\n%-58s %12s\n' "Rules (50-rule ruleset, 1 thread)" "per second"
printf '%-58s %12s\n' "rule evaluations on prepared facts (target 1,000,000)" "$(printf '%s\n' "$rules" | awk '/^rule_evaluations_per_s/ {print $2}')"
printf '%-58s %12s\n' "rule evaluations including fact preparation" "$(printf '%s\n' "$rules" | awk '/^rule_evaluations_with_prepare_per_s/ {print $2}')"
bad=$(printf '%s\n%s\n' "$tx" "$tx_alone" | awk '/Non-2xx/ {print $5}')
[ -z "$bad" ] || printf 'note: %s non-2xx responses during the PUT run\n' "$bad"
printf '\nlatency, PUT (full stack):\n%s\n' "$(printf '%s\n' "$tx" | sed -n '/Latency/,/Req\/Sec/p')"
printf 'latency, PUT (registration alone):\n%s\n' "$(printf '%s\n' "$tx_alone" | sed -n '/Latency/,/Req\/Sec/p')"
printf '\nidle service processes, before load (goal: RSS < 40 MB each; issue #14 measured 40-46 MB and 27-33 threads):\n%s\n' "$footprint"

# --- FIDO UAF (#15): in process, no stack needed (scripts/bench-uaf.sh says what it prints) --
BIN="$BIN" bash scripts/bench-uaf.sh
