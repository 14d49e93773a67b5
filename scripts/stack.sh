#!/usr/bin/env bash
# Signet local stack: PostgreSQL cluster under the data folder, the development Kafka broker,
# the five services, the admin console and the nginx gateway. Used by `make run` and `make test`.
#
#   scripts/stack.sh deps          install missing Debian packages
#   scripts/stack.sh run           build (release), start everything, wait for Ctrl-C/SIGTERM
#   scripts/stack.sh test          build (debug), start everything, run every test, stop
#   scripts/stack.sh up [debug|release] / down
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DATA="${SIGNET_DATA_DIR:-$ROOT/.data}"
PG_PORT="${SIGNET_PG_PORT:-54329}"
GATEWAY_PORT="${SIGNET_GATEWAY_PORT:-8080}"
BROKER_ADDRESS="${SIGNET_DEVBROKER_ADDRESS:-127.0.0.1:19092}"
export SIGNET_ADMIN_TOKEN="${SIGNET_ADMIN_TOKEN:-dev-admin-token}"
export SIGNET_DEMO_RP_API_KEY="${SIGNET_DEMO_RP_API_KEY:-dev-demo-rp-key}"
export SIGNET_KAFKA_BROKERS="${SIGNET_KAFKA_BROKERS:-$BROKER_ADDRESS}"
export SIGNET_PG_PORT="$PG_PORT"
# The admin console (signet-console, port 8086): the operators' tenant's RP key, the local
# operators and the code with which each enrols a first passkey.
export SIGNET_CONSOLE_RP_API_KEY="${SIGNET_CONSOLE_RP_API_KEY:-dev-console-rp-key}"
export SIGNET_CONSOLE_OPERATORS="${SIGNET_CONSOLE_OPERATORS:-admin=administrator,operator=operator,viewer=viewer}"
export SIGNET_CONSOLE_ENROLMENT_CODE="${SIGNET_CONSOLE_ENROLMENT_CODE:-dev-console-enrolment-code}"
# The build the services report on /healthz and /readyz (`version`), shown by the console.
export SIGNET_VERSION="${SIGNET_VERSION:-$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo dev)}"
CONSOLE_PORT=8086
SERVICES="registration:8081 authentication:8082 transaction:8083 oob:8084 pii:8085"
APT_PACKAGES="libmicrohttpd-dev librdkafka-dev libpq-dev libssl-dev libqrencode-dev zlib1g-dev libcurl4-openssl-dev libjemalloc-dev openssl pkg-config postgresql nginx-light curl python3 python3-venv chromium chromium-driver"

log() { printf '\033[1m[signet]\033[0m %s\n' "$*" >&2; }

deps() {
    local missing=()
    for p in $APT_PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing Debian packages: ${missing[*]}"
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    # Debian's postgresql and nginx packages start system-wide servers; the stack runs its own.
    if command -v service >/dev/null 2>&1; then
        service nginx stop >/dev/null 2>&1 || true
    fi
}

# swift build, quiet unless it fails (then its diagnostics are shown).
build() {
    mkdir -p "$DATA/logs"
    if ! swift build "$@" >"$DATA/logs/build.log" 2>&1; then
        grep -E 'error:|warning:' "$DATA/logs/build.log" | head -n 60 >&2 || tail -n 60 "$DATA/logs/build.log" >&2
        log "build failed; full output in $DATA/logs/build.log"
        exit 1
    fi
    grep -E 'warning:' "$DATA/logs/build.log" | sort -u | head -n 20 >&2 || true
}

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

# initdb and postgres refuse to run as root: run them as the postgres user on a folder it owns.
as_pg() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_dir() {
    local dir="$DATA/pg"
    if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$DATA" 2>/dev/null; then
        # The checkout is not reachable by the postgres user (e.g. under /root): keep the
        # cluster in /tmp instead, one per checkout.
        dir="/tmp/signet-pg-$(printf '%s' "$ROOT" | md5sum | cut -c1-10)"
    fi
    printf '%s' "$dir"
}

start_postgres() {
    local bin; bin="$(pg_bin)"
    local dir; dir="$(pg_dir)"
    mkdir -p "$DATA/logs" "$DATA/run"
    if [ ! -f "$dir/PG_VERSION" ]; then
        log "initdb $dir"
        mkdir -p "$dir"
        [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir"
        chmod 700 "$dir"
        as_pg "$bin/initdb" -D "$dir" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    fi
    if ! as_pg "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
        log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
        as_pg "$bin/pg_ctl" -D "$dir" -w -t 60 -l "$dir/server.log" \
            -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir -c max_connections=300 -c fsync=on" start >/dev/null
    fi
    local psql=(env PGOPTIONS="-c client_min_messages=warning" psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -qAt)
    "${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname='signet'" | grep -q 1 ||
        "${psql[@]}" -c "CREATE ROLE signet LOGIN"
    # The development broker keeps events and offsets in memory, so a new broker means a new
    # world: start the service databases afresh too, unless SIGNET_KEEP_DATA=1.
    for entry in $SERVICES; do
        local db="signet_${entry%%:*}"
        if [ "${SIGNET_KEEP_DATA:-0}" != 1 ]; then
            "${psql[@]}" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"
        fi
        "${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname='$db'" | grep -q 1 ||
            "${psql[@]}" -c "CREATE DATABASE $db OWNER signet"
    done
    # Tests create scratch databases of their own; drop any an interrupted run left behind.
    "${psql[@]}" -c "ALTER ROLE signet CREATEDB" >/dev/null
    for db in $("${psql[@]}" -c "SELECT datname FROM pg_database WHERE datname ~ '^(pgtest|sigterm)_'"); do
        "${psql[@]}" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"
    done
}

stop_postgres() {
    local dir; dir="$(pg_dir)"
    [ -f "$dir/PG_VERSION" ] || return 0
    as_pg "$(pg_bin)/pg_ctl" -D "$dir" -m fast -w stop >/dev/null 2>&1 || true
}

wait_http() { # url seconds
    local deadline=$((SECONDS + $2))
    until curl -fsS -o /dev/null "$1" 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.2
    done
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_broker() {
    local bin="$1"
    port_free "${BROKER_ADDRESS##*:}" || { log "port ${BROKER_ADDRESS##*:} is taken; is another stack running?"; exit 1; }
    log "starting the development Kafka broker on $BROKER_ADDRESS"
    SIGNET_DEVBROKER_ADDRESS="$BROKER_ADDRESS" SIGNET_DEVBROKER_PIDFILE="$DATA/run/devbroker.pid" \
        "$bin/signet-devbroker" >>"$DATA/logs/devbroker.log" 2>&1 &
    local deadline=$((SECONDS + 20))
    until ! port_free "${BROKER_ADDRESS##*:}"; do
        [ $SECONDS -lt $deadline ] || { log "the broker did not start; see $DATA/logs/devbroker.log"; exit 1; }
        sleep 0.1
    done
}

# Development secrets under the data folder (production passes its own through the
# environment): the ceremony-handle key shared by every replica, and the session signing key.
dev_keys() {
    mkdir -p "$DATA/keys"
    chmod 700 "$DATA/keys"
    if [ ! -s "$DATA/keys/ceremony.key" ]; then
        head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n' >"$DATA/keys/ceremony.key"
    fi
    if [ ! -s "$DATA/keys/tctoken-seal.key" ]; then
        head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n' >"$DATA/keys/tctoken-seal.key"
    fi
    if [ ! -s "$DATA/keys/session-signing.pem" ]; then
        openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$DATA/keys/session-signing.pem" 2>/dev/null
    fi
    # Erasure receipts (registration): a key of their own, published at its /.well-known/jwks.json.
    if [ ! -s "$DATA/keys/receipt-signing.pem" ]; then
        openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$DATA/keys/receipt-signing.pem" 2>/dev/null
    fi
    chmod 600 "$DATA/keys/"*
    export SIGNET_CEREMONY_KEY="${SIGNET_CEREMONY_KEY:-$(cat "$DATA/keys/ceremony.key")}"
    export SIGNET_SIGNING_KEY_FILE="${SIGNET_SIGNING_KEY_FILE:-$DATA/keys/session-signing.pem}"
    export SIGNET_RECEIPT_SIGNING_KEY_FILE="${SIGNET_RECEIPT_SIGNING_KEY_FILE:-$DATA/keys/receipt-signing.pem}"
    export SIGNET_TCTOKEN_KEY_SEAL="${SIGNET_TCTOKEN_KEY_SEAL:-$(cat "$DATA/keys/tctoken-seal.key")}"
    # Keys shared between services: TOTP secrets (registration → authentication), one-time
    # codes sealed to the oob service, code hashes, the vault's key-encryption key; and the
    # oob service's seal of push tokens and device identifier keys.
    # And the subject key, which turns usernames into the references events carry (every service).
    for k in pii-kek delivery method-secret otp-hash oob-seal subject; do
        [ -s "$DATA/keys/$k.key" ] || head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n' >"$DATA/keys/$k.key"
    done
    chmod 600 "$DATA/keys/"*
    export SIGNET_PII_KEK="${SIGNET_PII_KEK:-$(cat "$DATA/keys/pii-kek.key")}"
    export SIGNET_DELIVERY_KEY="${SIGNET_DELIVERY_KEY:-$(cat "$DATA/keys/delivery.key")}"
    export SIGNET_METHOD_SECRET_KEY="${SIGNET_METHOD_SECRET_KEY:-$(cat "$DATA/keys/method-secret.key")}"
    export SIGNET_OTP_HASH_KEY="${SIGNET_OTP_HASH_KEY:-$(cat "$DATA/keys/otp-hash.key")}"
    export SIGNET_OOB_KEY_SEAL="${SIGNET_OOB_KEY_SEAL:-$(cat "$DATA/keys/oob-seal.key")}"
    export SIGNET_SUBJECT_KEY="${SIGNET_SUBJECT_KEY:-$(cat "$DATA/keys/subject.key")}"
    # Push credentials for the local push sink: an APNs token key (.p8, P-256) and an FCM
    # service account whose token endpoint is the sink.
    if [ ! -s "$DATA/keys/apns.p8" ]; then
        openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$DATA/keys/apns.p8" 2>/dev/null
    fi
    if [ ! -s "$DATA/keys/fcm-service-account.json" ]; then
        openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$DATA/keys/fcm.pem" 2>/dev/null
        python3 -c 'import json,sys; print(json.dumps({"type":"service_account","project_id":"signet-dev","client_email":"push@signet-dev.iam.gserviceaccount.com","private_key":open(sys.argv[1]).read(),"token_uri":"http://127.0.0.1:2643/token"}))' \
            "$DATA/keys/fcm.pem" >"$DATA/keys/fcm-service-account.json"
    fi
    chmod 600 "$DATA/keys/"*
    export SIGNET_APNS_KEY_FILE="${SIGNET_APNS_KEY_FILE:-$DATA/keys/apns.p8}" SIGNET_APNS_KEY_ID="${SIGNET_APNS_KEY_ID:-DEVKEY0001}"
    export SIGNET_APNS_TEAM_ID="${SIGNET_APNS_TEAM_ID:-DEVTEAM001}" SIGNET_APNS_URL="${SIGNET_APNS_URL:-http://127.0.0.1:2643}"
    export SIGNET_FCM_SERVICE_ACCOUNT_FILE="${SIGNET_FCM_SERVICE_ACCOUNT_FILE:-$DATA/keys/fcm-service-account.json}"
    export SIGNET_FCM_URL="${SIGNET_FCM_URL:-http://127.0.0.1:2643}"
}

# Python tooling (PyPI) in a venv of the data folder: the local mail and SMS sinks, and the
# test tools.
python_env() {
    [ -x "$DATA/venv/bin/python" ] || python3 -m venv "$DATA/venv" >/dev/null
    "$DATA/venv/bin/python" -c 'import aiosmtpd, h2' 2>/dev/null ||
        "$DATA/venv/bin/pip" install -q -r "$ROOT/Tools/Sinks/requirements.txt"
}

# Local SMTP and SMS sinks: every message delivered is a file under $DATA/sinks/email or
# $DATA/sinks/sms (the oob service sends there by default).
start_sinks() {
    python_env
    mkdir -p "$DATA/sinks/email" "$DATA/sinks/sms" "$DATA/sinks/push" "$DATA/sinks/otlp"
    for p in 2525 2580 2643 4318; do port_free "$p" || { log "port $p is taken"; exit 1; }; done
    "$DATA/venv/bin/python" "$ROOT/Tools/Sinks/smtp_sink.py" --host 127.0.0.1 --port 2525 --dir "$DATA/sinks/email" \
        >>"$DATA/logs/smtp-sink.log" 2>&1 &
    echo $! >"$DATA/run/smtp-sink.pid"
    "$DATA/venv/bin/python" "$ROOT/Tools/Sinks/sms_sink.py" --host 127.0.0.1 --port 2580 --dir "$DATA/sinks/sms" \
        >>"$DATA/logs/sms-sink.log" 2>&1 &
    echo $! >"$DATA/run/sms-sink.pid"
    # APNs and FCM (and FCM's token endpoint) over HTTP/2 on one port; pushes under sinks/push.
    "$DATA/venv/bin/python" "$ROOT/Tools/Sinks/push_sink.py" --host 127.0.0.1 --port 2643 --dir "$DATA/sinks/push" \
        >>"$DATA/logs/push-sink.log" 2>&1 &
    echo $! >"$DATA/run/push-sink.pid"
    # An OTLP/HTTP trace collector: the services export their spans to it (spans.jsonl under
    # sinks/otlp, and GET /v1/spans?traceId=… for tests). SIGNET_OTLP_ENDPOINT= (empty) turns
    # the export off.
    : >"$DATA/sinks/otlp/spans.jsonl"
    "$DATA/venv/bin/python" "$ROOT/Tools/Sinks/otlp_sink.py" --host 127.0.0.1 --port 4318 --dir "$DATA/sinks/otlp" \
        >>"$DATA/logs/otlp-sink.log" 2>&1 &
    echo $! >"$DATA/run/otlp-sink.pid"
    export SIGNET_OTLP_ENDPOINT="${SIGNET_OTLP_ENDPOINT-http://127.0.0.1:4318}"
    local deadline=$((SECONDS + 20))
    until grep -q listening "$DATA/logs/smtp-sink.log" 2>/dev/null && grep -q listening "$DATA/logs/sms-sink.log" 2>/dev/null &&
        grep -q listening "$DATA/logs/push-sink.log" 2>/dev/null && grep -q listening "$DATA/logs/otlp-sink.log" 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || { log "sinks did not start; see $DATA/logs/*-sink.log"; exit 1; }
        sleep 0.2
    done
}

# Internal calls: unless SIGNET_INTERNAL_TOKEN is set (then one token shared by every service),
# each service presents a development token of its own (dev-internal-token-<name>) and admits
# a caller only with that caller's token (SIGNET_INTERNAL_CALLERS: their SHA-256), as a
# deployment does; given to the services alone, not exported.
internal_callers() {
    local callers="" n
    for n in registration authentication transaction oob pii; do
        callers+="${callers:+,}$n=$(printf '%s' "dev-internal-token-$n" | sha256sum | cut -d' ' -f1)"
    done
    printf '%s' "$callers"
}

start_services() {
    local bin="$1" callers=""
    dev_keys
    [ -n "${SIGNET_INTERNAL_TOKEN:-}" ] || callers="$(internal_callers)"
    for entry in $SERVICES; do
        local name="${entry%%:*}" port="${entry##*:}"
        port_free "$port" || { log "port $port is taken; is another stack running?"; exit 1; }
        local internal=()
        [ -z "$callers" ] || internal=(SIGNET_INTERNAL_TOKEN="dev-internal-token-$name" SIGNET_INTERNAL_CALLERS="$callers")
        env "${internal[@]}" SIGNET_HTTP_PORT="$port" "$bin/signet-$name" >>"$DATA/logs/$name.log" 2>&1 &
        echo $! >"$DATA/run/$name.pid"
    done
    for entry in $SERVICES; do
        local name="${entry%%:*}" port="${entry##*:}"
        wait_http "http://127.0.0.1:$port/readyz" 90 || { log "$name did not become ready; see $DATA/logs/$name.log"; tail -n 20 "$DATA/logs/$name.log" >&2; exit 1; }
    done
    # Consumers join their groups asynchronously; wait until each owns its partitions, so
    # that the first events (the demo tenant) cross at once.
    for entry in $SERVICES; do
        local name="${entry%%:*}" port="${entry##*:}"
        local deadline=$((SECONDS + 60))
        until curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null |
            grep -qE "^signet_kafka_consumer_assigned_partitions\{group=\"signet-$name\"\} [1-9]"; do
            [ $SECONDS -lt $deadline ] || { log "$name's consumer did not join its group; see $DATA/logs/$name.log"; exit 1; }
            sleep 0.2
        done
    done
    log "services ready"
}

# The console needs the registration and authentication services (it provisions the
# operators' tenant through the admin API), so it starts after them; ready once that tenant
# has reached the authentication service.
start_console() {
    local bin="$1"
    port_free "$CONSOLE_PORT" || { log "port $CONSOLE_PORT is taken; is another stack running?"; exit 1; }
    SIGNET_HTTP_PORT="$CONSOLE_PORT" SIGNET_CONSOLE_ASSETS_DIR="$ROOT/Services/Console/Assets" \
        "$bin/signet-console" >>"$DATA/logs/console.log" 2>&1 &
    echo $! >"$DATA/run/console.pid"
    wait_http "http://127.0.0.1:$CONSOLE_PORT/readyz" 60 || { log "the console did not become ready; see $DATA/logs/console.log"; tail -n 20 "$DATA/logs/console.log" >&2; exit 1; }
}

start_gateway() {
    port_free "$GATEWAY_PORT" || { log "port $GATEWAY_PORT is taken"; exit 1; }
    mkdir -p "$DATA/nginx"
    # The demo RP backend lives in the gateway: it adds the demo tenant's key server-side.
    [[ "$SIGNET_DEMO_RP_API_KEY" =~ ^[A-Za-z0-9._~+/=-]+$ ]] || { log "SIGNET_DEMO_RP_API_KEY may only use A-Z a-z 0-9 . _ ~ + / = -"; exit 1; }
    sed -e "s#@DATA@#$DATA/nginx#g" -e "s#@ROOT@#$ROOT#g" -e "s#@PORT@#$GATEWAY_PORT#g" -e "s#@DEMO_KEY@#$SIGNET_DEMO_RP_API_KEY#g" -e "s#@USER@#$(id -un) $(id -gn)#g" \
        "$ROOT/deploy/local/gateway.conf.in" >"$DATA/nginx/nginx.conf"
    chmod 600 "$DATA/nginx/nginx.conf"
    nginx -c "$DATA/nginx/nginx.conf" -p "$DATA/nginx" -g "daemon off;" >>"$DATA/logs/gateway.log" 2>&1 &
    echo $! >"$DATA/run/gateway.pid"
    # (the services' probes are not reachable through it: the demo page shows it is up)
    wait_http "http://127.0.0.1:$GATEWAY_PORT/demo/" 20 || { log "gateway did not start; see $DATA/logs/gateway.log"; exit 1; }
}

seed() {
    local reg="http://127.0.0.1:8081"
    curl -fsS -o /dev/null -X PUT "$reg/v1/admin/tenants/demo" \
        -H "Authorization: Bearer $SIGNET_ADMIN_TOKEN" -H 'Content-Type: application/json' \
        -d '{"displayName":"Demo","rpId":"localhost","origins":["http://localhost:8080"]}'
    # The demo tenant's RP API key: SIGNET_DEMO_RP_API_KEY (default dev-demo-rp-key).
    curl -fsS -o /dev/null -X PUT "$reg/v1/admin/tenants/demo/api-keys/k_00000000000000de" \
        -H "Authorization: Bearer $SIGNET_ADMIN_TOKEN" -H 'Content-Type: application/json' \
        -d "{\"apiKey\":\"$SIGNET_DEMO_RP_API_KEY\"}"
    # The demo tenant's sign-in rules: a passkey, or the phone by QR code (the demo page's
    # "Sign in with your phone"). The authentication service learns of the tenant by event:
    # retried until it has.
    local auth="http://127.0.0.1:8082" deadline=$((SECONDS + 30))
    until curl -fsS -o /dev/null -X PUT "$auth/v1/admin/tenants/demo/rulesets/authentication" \
        -H "Authorization: Bearer $SIGNET_ADMIN_TOKEN" -H 'Content-Type: application/json' \
        -d '{"rules":[{"name":"passkey-or-phone","action":"TRIGGER_AUTHENTICATION","sequences":[["fido2"],["qr"]]}]}' 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || { log "the demo tenant's sign-in rules could not be stored"; exit 1; }
        sleep 0.2
    done
    # With a ruleset, the direct passkey routes (…/webauthn/authentications, which the demo
    # page's passkey sign-in and signet-bench use) answer 403 direct_sign_in_disabled unless
    # the tenant keeps them: it does, explicitly.
    curl -fsS -o /dev/null -X PUT "$auth/v1/admin/tenants/demo/authentication-settings" \
        -H "Authorization: Bearer $SIGNET_ADMIN_TOKEN" -H 'Content-Type: application/json' \
        -d '{"directSignIn":true}' || { log "the demo tenant's authentication settings could not be stored"; exit 1; }
}

# Whether pid is gone (a child of this shell that exited stays a zombie until reaped).
gone() {
    local state
    state="$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)"
    [ -z "$state" ] || [ "$state" = "Z" ]
}

signal_pidfile() { # name signal
    local pid
    pid="$(cat "$DATA/run/$1.pid" 2>/dev/null)" || return 0
    kill "-$2" "$pid" 2>/dev/null || true
}

stop_pidfile() {
    local f="$DATA/run/$1.pid"
    [ -f "$f" ] || return 0
    local pid; pid="$(cat "$f" 2>/dev/null)" || return 0
    rm -f "$f"
    gone "$pid" && return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do gone "$pid" && return 0; sleep 0.1; done
    log "$1 did not stop within 30 s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
}

down() {
    stop_pidfile gateway
    stop_pidfile console
    # SIGTERM all services at once (each drains its requests and outbox), then wait for each.
    for entry in $SERVICES; do signal_pidfile "${entry%%:*}" TERM; done
    for entry in $SERVICES; do stop_pidfile "${entry%%:*}"; done
    stop_pidfile devbroker
    stop_pidfile smtp-sink
    stop_pidfile sms-sink
    stop_pidfile push-sink
    stop_pidfile otlp-sink
    stop_postgres
}

up() {
    local config="${1:-release}"
    mkdir -p "$DATA/logs" "$DATA/run"
    log "building ($config)"
    build -c "$config"
    local bin; bin="$(swift build -c "$config" --show-bin-path)"
    start_postgres
    start_broker "$bin"
    start_sinks
    start_services "$bin"
    start_console "$bin"
    start_gateway
    seed
    export SIGNET_BIN_DIR="$bin"
}

print_endpoints() {
    cat >&2 <<MSG

  Signet is running.
    gateway          http://localhost:$GATEWAY_PORT/  (/registration/ /authentication/ /transaction/ /oob/ /pii/)
    registration     http://127.0.0.1:8081     authentication http://127.0.0.1:8082
    transaction      http://127.0.0.1:8083     oob            http://127.0.0.1:8084
    pii              http://127.0.0.1:8085     console        http://localhost:$GATEWAY_PORT/console/
    PostgreSQL       postgresql://signet@127.0.0.1:$PG_PORT/signet_<service>
    Kafka (dev)      $BROKER_ADDRESS
    logs             $DATA/logs/

    admin token      $SIGNET_ADMIN_TOKEN
    demo tenant      demo (rpId localhost, origin http://localhost:$GATEWAY_PORT)
    demo RP API key  $SIGNET_DEMO_RP_API_KEY
    console          operators $SIGNET_CONSOLE_OPERATORS
                     enrolment code $SIGNET_CONSOLE_ENROLMENT_CODE (enrols each one's first passkey)

  Ctrl-C stops everything.
MSG
}

case "${1:-}" in
deps) deps ;;
up) deps; up "${2:-release}"; print_endpoints ;;
down) down ;;
run)
    deps
    trap 'trap - EXIT; log "stopping"; down; exit 0' INT TERM
    trap 'down' EXIT
    up release
    print_endpoints
    while true; do sleep 1 & wait $!; done
    ;;
test)
    deps
    trap 'down' EXIT
    mkdir -p "$DATA/logs"
    log "building the services and tests (debug)"
    build --build-tests
    up debug
    export SIGNET_TEST_STACK=1 SIGNET_DEVBROKER_PIDFILE="$DATA/run/devbroker.pid" SIGNET_DATA_DIR="$DATA" SIGNET_SINK_PYTHON="$DATA/venv/bin/python"
    # Where the cluster lives, for tests that restart PostgreSQL under load (pg_ctl restart).
    export SIGNET_PG_DIR="$(pg_dir)" SIGNET_PG_BIN="$(pg_bin)"
    status=0
    # SIGNET_TEST_FILTER=<regex>: only the Swift tests it matches (swift test --filter), for a
    # quick run against the stack while working on one suite.
    if [ -n "${SIGNET_TEST_FILTER:-}" ]; then
        [ -x "$DATA/venv/bin/python" ] || python3 -m venv "$DATA/venv" >/dev/null
        "$DATA/venv/bin/pip" install -q -r "$ROOT/Tests/contract/requirements.txt" -r "$ROOT/Tests/e2e/requirements.txt"
        swift test --skip-build --no-parallel --filter "$SIGNET_TEST_FILTER" 2>&1 | tee "$DATA/logs/swift-test.log" || status=$?
        exit $status
    fi
    # Python test tooling (PyPI) in a venv of the data folder.
    [ -x "$DATA/venv/bin/python" ] || python3 -m venv "$DATA/venv" >/dev/null
    "$DATA/venv/bin/pip" install -q -r "$ROOT/Tests/contract/requirements.txt" -r "$ROOT/Tests/e2e/requirements.txt"
    "$DATA/venv/bin/python" "$ROOT/deploy/check.py" >"$DATA/logs/deploy-check.log" 2>&1 || { status=$?; cat "$DATA/logs/deploy-check.log"; }
    tail -n 1 "$DATA/logs/deploy-check.log" | sed 's/^/deploy checks: /'
    "$DATA/venv/bin/python" -m pytest -q "$ROOT/Tests/contract" || status=$?
    swift test --skip-build --no-parallel 2>&1 | tee "$DATA/logs/swift-test.log" || status=$?
    # The demo relying party in Debian's Chromium with a virtual authenticator, through the gateway.
    "$DATA/venv/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/Tests/e2e" || status=$?
    # The Swift run prints its failures among 1,200 tests' lines: repeat them last, so the tail
    # of the output (all a CI summary may keep) names the failing test and what it recorded.
    if grep -qE '✘|: error:' "$DATA/logs/swift-test.log"; then
        echo "--- Swift test failures (from $DATA/logs/swift-test.log) ---"
        grep -E '✘|recorded an issue|Expectation failed|error:' "$DATA/logs/swift-test.log" | grep -v 'Test run with' | head -n 40
    fi
    exit $status
    ;;
*)
    echo "usage: $0 deps|run|test|up [debug|release]|down" >&2
    exit 2
    ;;
esac
