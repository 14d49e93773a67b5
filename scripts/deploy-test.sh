#!/usr/bin/env bash
# Container checks of deploy/: builds the images with podman from the Debian mirror (no image
# registry needed), runs the compose stack with podman-compose and a smoke test through the
# gateway container, then stops it. `make deploy-test`; .ci/run runs it after the fuzzing pass.
#
#   scripts/deploy-test.sh            install, build, run, test, stop (exit 0 only if all passed)
#   scripts/deploy-test.sh images     install and build the images only
#   scripts/deploy-test.sh down       stop the stack and remove its containers and volumes
#
# Needs root (or sudo) for apt and for podman. It installs what it needs: Debian's podman,
# buildah, runc and mmdebstrap, podman-compose (PyPI) in a venv under $WORK. When no container
# engine can be installed it says so and exits 0 with SKIPPED (CI continues); set
# SIGNET_DEPLOY_TEST_REQUIRED=1 to make that a failure.
#
# The Swift binaries are built on the host (swift build -c release --static-swift-stdlib, in
# the checkout's .build: built once, reused) and copied into runtime images made from a
# bookworm base that mmdebstrap makes from the mirror; deploy/Containerfile remains the way
# to build images from public base images with `docker build`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WORK="${SIGNET_DEPLOY_WORK:-$ROOT/.data/deploy}"
PROJECT="signet-deploy-test"
# Host ports of the compose stack: none of the local stack's (8080-8085, 54329, 19092, 2525,
# 2580), so it runs beside other engineers' stacks without holding their lock.
GATEWAY_PORT="${SIGNET_DEPLOY_GATEWAY_PORT:-18480}"
SERVICES="registration:8081 authentication:8082 transaction:8083 oob:8084 pii:8085"
BASE_PACKAGES="ca-certificates"
RUNTIME_PACKAGES="libmicrohttpd12 libpq5 librdkafka1 libssl3 libqrencode4 zlib1g libcurl4 libjemalloc2 libstdc++6 ca-certificates"
started=$SECONDS

log() { printf '\033[1m[deploy-test]\033[0m %s\n' "$*" >&2; }
elapsed() { printf '%dm%02ds' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)); }
skip() {
    log "SKIPPED: $*"
    [ "${SIGNET_DEPLOY_TEST_REQUIRED:-0}" = 1 ] && exit 1
    exit 0
}

sudo_() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# --- 1. the engine -----------------------------------------------------------------------

install_engine() {
    if [ "$(id -u)" -ne 0 ] && ! sudo -n true 2>/dev/null; then
        skip "needs root or password-less sudo to install and run podman"
    fi
    local missing=()
    # iptables: netavark sets up the build and compose networks with it (a machine without it
    # fails the first RUN step with "netavark: No such file or directory").
    for p in podman buildah runc mmdebstrap netavark aardvark-dns iptables uidmap python3-venv; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing ${missing[*]} (apt)"
        if ! { sudo_ apt-get update -qq && DEBIAN_FRONTEND=noninteractive sudo_ apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$WORK/apt.log" 2>&1; }; then
            tail -n 20 "$WORK/apt.log" >&2 || true
            skip "could not install a container engine with apt (see $WORK/apt.log)"
        fi
    fi
    # This machine's settings: file descriptors and processes for containers, and runc (crun
    # refuses hybrid cgroup hierarchies). Written only when absent.
    local conf=/etc/containers/containers.conf
    if ! grep -qs '^default_ulimits' "$conf" || ! grep -qs '^runtime *=' "$conf"; then
        log "writing $conf (default_ulimits, runtime = runc)"
        sudo_ mkdir -p /etc/containers
        [ -f "$conf" ] && sudo_ cp "$conf" "$conf.signet-backup"
        {
            echo '# Written by signet scripts/deploy-test.sh.'
            echo '[containers]'
            echo 'default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]'
            echo '[engine]'
            echo 'runtime = "runc"'
        } | sudo_ tee "$conf" >/dev/null
    fi
    if ! sudo_ podman info >"$WORK/podman-info.log" 2>&1; then
        tail -n 20 "$WORK/podman-info.log" >&2
        skip "podman is installed but does not work here (see $WORK/podman-info.log)"
    fi
    [ -x "$WORK/venv/bin/podman-compose" ] || {
        log "installing podman-compose (PyPI) in $WORK/venv"
        python3 -m venv "$WORK/venv" >/dev/null
        "$WORK/venv/bin/pip" install -q "podman-compose==1.2.0" "PyYAML>=6"
    }
}

podman_() { sudo_ podman "$@"; }
image_exists() { podman_ image exists "$1"; }

# --- 2. images ---------------------------------------------------------------------------

# A bookworm minbase from the mirror, tagged by the hash of what defines it (cached until
# the package list or options change; `podman rmi` it to refresh from the mirror).
base_image() {
    # Documentation, manual pages and translations are left out (dpkg path excludes, kept in
    # the image so later apt-get installs leave them out too).
    local excludes=(--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
        --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
        --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias')
    local spec="bookworm minbase include=$BASE_PACKAGES ${excludes[*]}"
    local tag; tag="localhost/signet-bookworm:$(printf '%s' "$spec" | sha256sum | cut -c1-12)"
    if ! image_exists "$tag"; then
        log "making the bookworm base from the mirror (mmdebstrap)"
        local tar="$WORK/bookworm-minbase.tar"
        rm -f "$tar"
        sudo_ mmdebstrap --quiet --variant=minbase --include="${BASE_PACKAGES// /,}" "${excludes[@]}" \
            --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
            bookworm "$tar" http://deb.debian.org/debian >"$WORK/mmdebstrap.log" 2>&1 ||
            { tail -n 20 "$WORK/mmdebstrap.log" >&2; exit 1; }
        podman_ import --quiet --change 'CMD ["/bin/bash"]' "$tar" "$tag" >/dev/null
        rm -f "$tar"
    fi
    BASE_IMAGE="$tag"
}

# The release binaries, built on the host in the checkout's .build (once; later runs reuse
# them), and the static backtracer.
binaries() {
    local products="signet-registration signet-authentication signet-transaction signet-oob signet-pii signet-console signet-devbroker"
    log "building the release binaries (swift build -c release --static-swift-stdlib)"
    for p in $products; do
        if ! swift build -c release --static-swift-stdlib --product "$p" >"$WORK/swift-build.log" 2>&1; then
            grep -E 'error:' "$WORK/swift-build.log" | head -n 40 >&2 || tail -n 40 "$WORK/swift-build.log" >&2
            exit 1
        fi
    done
    local bin; bin="$(swift build -c release --static-swift-stdlib --show-bin-path)"
    rm -rf "$WORK/context" && mkdir -p "$WORK/context/bin"
    # Stripped of debug information straight into the context: no full-size copy is written
    # (a CI machine's disk can be short; the binaries in .build keep theirs).
    for p in $products; do
        strip --strip-debug -o "$WORK/context/bin/$p" "$bin/$p" 2>/dev/null || cp "$bin/$p" "$WORK/context/bin/"
    done
    local swift_root; swift_root="$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")"
    cp "$swift_root/libexec/swift/linux/swift-backtrace-static" "$WORK/context/bin/"
    cp deploy/local/*-entrypoint.sh Tools/Sinks/smtp_sink.py Tools/Sinks/sms_sink.py "$WORK/context/"
    # The admin console's page, in every service image (signet-console reads it).
    cp -r Services/Console/Assets "$WORK/context/console-assets"
}

build_image() { # tag containerfile [build args...]
    local tag="$1" file="$2"
    shift 2
    if ! podman_ build --quiet --layers -f "$file" --build-arg BASE="$BASE_IMAGE" "$@" -t "$tag" "$WORK/context" >"$WORK/build-${tag//[\/:]/_}.log" 2>&1; then
        tail -n 30 "$WORK/build-${tag//[\/:]/_}.log" >&2
        log "building $tag failed"
        exit 1
    fi
}

images() {
    base_image
    binaries
    log "building the images"
    for entry in $SERVICES; do
        local name="${entry%%:*}" port="${entry##*:}"
        build_image "localhost/signet/$name:local" deploy/local/Containerfile.service --build-arg SERVICE="signet-$name" --build-arg HTTP_PORT="$port"
    done
    build_image localhost/signet/console:local deploy/local/Containerfile.service --build-arg SERVICE=signet-console --build-arg HTTP_PORT=8086
    build_image localhost/signet-local/devbroker:latest deploy/local/Containerfile.devbroker
    build_image localhost/signet-local/postgres:latest deploy/local/Containerfile.postgres
    build_image localhost/signet-local/gateway:latest deploy/local/Containerfile.gateway
    build_image localhost/signet-local/sinks:latest deploy/local/Containerfile.sinks
    # Sizes: the whole image, and what the image adds to the bookworm base.
    local base_size; base_size="$(podman_ image inspect --format '{{.Size}}' "$BASE_IMAGE")"
    log "image sizes (whole image / on top of the bookworm base, MB):"
    printf '  %-44s %6d\n' "$BASE_IMAGE" $((base_size / 1000000)) >&2
    for tag in localhost/signet/{registration,authentication,transaction,oob,pii,console}:local localhost/signet-local/{devbroker,postgres,gateway,sinks}:latest; do
        local size; size="$(podman_ image inspect --format '{{.Size}}' "$tag")"
        printf '  %-44s %6d / %6d\n' "$tag" $((size / 1000000)) $(((size - base_size) / 1000000)) >&2
    done
}

# --- 3. the stack ------------------------------------------------------------------------

b64key() { head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n'; }

# Fresh secrets for every run (the stack starts from empty volumes): passwords, tokens, keys,
# and the session signing key as a file readable by the services' UID.
secrets() {
    mkdir -p "$WORK/secrets" "$WORK/sinks/email" "$WORK/sinks/sms"
    rm -f "$WORK/sinks/email/"* "$WORK/sinks/sms/"*
    sudo_ rm -f "$WORK/secrets/session-signing.pem" "$WORK/secrets/receipt-signing.pem"
    chmod 700 "$WORK/secrets"
    local env="$WORK/secrets/env"
    {
        for v in POSTGRES REGISTRATION_DB AUTHENTICATION_DB TRANSACTION_DB OOB_DB PII_DB; do
            echo "SIGNET_${v}_PASSWORD=$(openssl rand -hex 24)"
        done
        echo "SIGNET_ADMIN_TOKEN=$(openssl rand -hex 32)"
        # A token per service, and the SHA-256 of each for every service (SIGNET_INTERNAL_CALLERS).
        local callers="" s t
        for s in REGISTRATION AUTHENTICATION TRANSACTION OOB PII; do
            t=$(openssl rand -hex 32)
            echo "SIGNET_INTERNAL_TOKEN_$s=$t"
            callers+="${callers:+,}${s,,}=$(printf '%s' "$t" | sha256sum | cut -d' ' -f1)"
        done
        echo "SIGNET_INTERNAL_CALLERS=$callers"
        for k in CEREMONY_KEY METHOD_SECRET_KEY DELIVERY_KEY OTP_HASH_KEY TCTOKEN_KEY_SEAL PII_KEK OOB_KEY_SEAL SUBJECT_KEY; do
            echo "SIGNET_$k=$(b64key)"
        done
        echo "SIGNET_SESSION_SIGNING_KEY_FILE=$WORK/secrets/session-signing.pem"
        echo "SIGNET_RECEIPT_SIGNING_KEY_FILE=$WORK/secrets/receipt-signing.pem"
        echo "SIGNET_SMTP_URL=smtp://smtp-sink:2525"
        echo "SIGNET_SMS_URL=http://sms-sink:2580/messages"
        echo "SIGNET_CONSOLE_RP_API_KEY=$(openssl rand -hex 32)"
        echo "SIGNET_CONSOLE_ENROLMENT_CODE=$(openssl rand -hex 32)"
        echo "SIGNET_CONSOLE_OPERATORS=admin=administrator,viewer=viewer"
    } >"$env"
    # The same secrets as files, for the replica that reads <NAME>_FILE.
    sudo_ rm -rf "$WORK/secrets/files" && mkdir -p "$WORK/secrets/files"
    grep -E '^SIGNET_(ADMIN_TOKEN|INTERNAL_TOKEN_AUTHENTICATION|CEREMONY_KEY|METHOD_SECRET_KEY|DELIVERY_KEY|OTP_HASH_KEY)=' "$env" |
        while IFS='=' read -r name value; do printf '%s\n' "$value" >"$WORK/secrets/files/$name"; done
    sudo_ chown -R 10001:10001 "$WORK/secrets/files"
    chmod 500 "$WORK/secrets/files" && chmod 400 "$WORK/secrets/files/"*
    for pem in session-signing receipt-signing; do
        openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/secrets/$pem.pem" 2>/dev/null
        sudo_ chown 10001:10001 "$WORK/secrets/$pem.pem"
        chmod 400 "$WORK/secrets/$pem.pem"
    done
    chmod 711 "$WORK/secrets"
    chmod 600 "$env"
    set -a
    # shellcheck disable=SC1090
    . "$env"
    set +a
    export SIGNET_DEPLOY_WORK="$WORK" SIGNET_DEPLOY_GATEWAY_PORT="$GATEWAY_PORT" SIGNET_DEPLOY_PORT_BASE="$PORT_BASE"
}

compose() {
    local run=()
    [ "$(id -u)" -eq 0 ] || run=(sudo -E)
    "${run[@]}" "$WORK/venv/bin/podman-compose" -p "$PROJECT" -f "$WORK/compose.yaml" "$@"
}

stack_files() {
    # The production gateway configuration, with the two authentication replicas as one
    # upstream group (nginx takes a variable's value as a group name when one matches).
    sed -e 's/set \$signet_upstream authentication:8082;/set $signet_upstream authentication_replicas;/' \
        deploy/nginx/gateway.conf >"$WORK/gateway.conf"
    grep -q 'authentication_replicas' "$WORK/gateway.conf" || { log "gateway.conf: authentication upstream not found"; exit 1; }
    printf '%s\n' 'upstream authentication_replicas { server authentication:8082 max_fails=0; server authentication:8092 max_fails=0; }' >>"$WORK/gateway.conf"
    "$WORK/venv/bin/python" deploy/local/compose_merge.py deploy/compose.yaml deploy/local/compose.override.yaml "$WORK/compose.yaml"
}

down() {
    [ -f "$WORK/compose.yaml" ] || return 0
    compose down -v -t 30 >"$WORK/compose-down.log" 2>&1 || true
    # podman-compose 1.2.0 leaves the project's networks behind.
    podman_ network rm "${PROJECT}_edge" "${PROJECT}_data" >/dev/null 2>&1 || true
}

# Fails when a container of the stack has stopped (showing its last lines).
none_exited() {
    local c
    for c in $(podman_ ps -a --filter "label=io.podman.compose.project=$PROJECT" --filter status=exited --format '{{.Names}}'); do
        log "$c stopped:"
        podman_ logs "$c" 2>&1 | tail -n 5 | cut -c1-400 >&2
        return 1
    done
}

# Readiness by polling (podman runs no compose healthchecks without systemd).
wait_ready() {
    local deadline=$((SECONDS + 180))
    log "waiting for PostgreSQL"
    until podman_ exec "${PROJECT}_postgres_1" pg_isready -q -h 127.0.0.1 -U postgres 2>/dev/null; do
        none_exited || return 1
        [ $SECONDS -lt $deadline ] || { podman_ logs "${PROJECT}_postgres_1" 2>&1 | tail -n 20 >&2; log "PostgreSQL did not become ready"; return 1; }
        sleep 1
    done
    log "waiting for the services"
    local p
    for p in 1 2 3 4 5 6 7; do
        until curl -fsS -o /dev/null "http://127.0.0.1:${PORT_BASE}$p/readyz" 2>/dev/null; do
            none_exited || return 1
            [ $SECONDS -lt $deadline ] || { log "the service on ${PORT_BASE}$p did not become ready"; return 1; }
            sleep 1
        done
    done
    until curl -fsS -o /dev/null "http://127.0.0.1:$GATEWAY_PORT/healthz" 2>/dev/null; do
        none_exited || return 1
        [ $SECONDS -lt $deadline ] || { log "the gateway did not start"; return 1; }
        sleep 1
    done
}

dump_logs() {
    mkdir -p "$WORK/logs"
    for c in $(podman_ ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}'); do
        podman_ logs "$c" >"$WORK/logs/$c.log" 2>&1 || true
    done
    log "container logs in $WORK/logs/"
}

run_stack() {
    secrets
    stack_files
    down
    log "starting the compose stack (podman-compose)"
    if ! compose up -d >"$WORK/compose-up.log" 2>&1; then
        tail -n 30 "$WORK/compose-up.log" >&2
        log "podman-compose up failed"
        return 1
    fi
    wait_ready
}

# Each service image, started off loopback with nothing configured, refuses to start (exit
# 78) and names the secrets it lacks.
fail_closed() {
    log "fail closed: each service image without secrets"
    local entry name out rc expected ok=0
    for entry in registration:SIGNET_CEREMONY_KEY authentication:SIGNET_SIGNING_KEY_FILE transaction:SIGNET_TCTOKEN_KEY_SEAL oob:SIGNET_DELIVERY_KEY pii:SIGNET_PII_KEK; do
        name="${entry%%:*}" expected="${entry##*:}"
        rc=0
        out="$(podman_ run --rm --read-only --cap-drop ALL --network none "localhost/signet/$name:local" 2>&1)" || rc=$?
        for v in SIGNET_ADMIN_TOKEN SIGNET_INTERNAL_TOKEN SIGNET_INTERNAL_CALLERS "$expected"; do
            if [ "$rc" -ne 78 ] || ! grep -q "$v" <<<"$out"; then
                log "FAIL: $name without secrets: exit $rc, expected 78 naming $v"
                printf '%s\n' "$out" | tail -n 3 | cut -c1-400 >&2
                ok=1
            fi
        done
    done
    # The console has no internal token: it names the admin token and its own key.
    rc=0
    out="$(podman_ run --rm --read-only --cap-drop ALL --network none localhost/signet/console:local 2>&1)" || rc=$?
    for v in SIGNET_ADMIN_TOKEN SIGNET_CONSOLE_RP_API_KEY; do
        if [ "$rc" -ne 78 ] || ! grep -q "$v" <<<"$out"; then
            log "FAIL: console without secrets: exit $rc, expected 78 naming $v"
            printf '%s\n' "$out" | tail -n 3 | cut -c1-400 >&2
            ok=1
        fi
    done
    [ $ok -eq 0 ] && log "fail closed: all five and the console refused to start (exit 78), naming what they lack"
    return $ok
}

smoke() {
    log "smoke tests through the gateway container"
    swift build --build-tests >"$WORK/swift-build-tests.log" 2>&1 || { grep -E 'error:' "$WORK/swift-build-tests.log" | head -n 40 >&2; return 1; }
    SIGNET_CONTAINER_GATEWAY="http://127.0.0.1:$GATEWAY_PORT" \
        SIGNET_CONTAINER_REGISTRATION="http://127.0.0.1:${PORT_BASE}1" \
        SIGNET_CONTAINER_AUTHENTICATION_REPLICAS="http://127.0.0.1:${PORT_BASE}2,http://127.0.0.1:${PORT_BASE}6" \
        SIGNET_CONTAINER_ADMIN_TOKEN="$SIGNET_ADMIN_TOKEN" SIGNET_CONTAINER_EMAIL_DIR="$WORK/sinks/email" \
        swift test --skip-build --no-parallel --filter ContainerSmokeTests 2>&1 | tee "$WORK/swift-test.log" | grep -E '✔|✘|passed|failed|error' >&2
    local status=${PIPESTATUS[0]}
    [ "$status" -eq 0 ] || return "$status"
    log "stopping the second authentication replica under load"
    SIGNET_CONTAINER_GATEWAY="http://127.0.0.1:$GATEWAY_PORT" \
        SIGNET_CONTAINER_REGISTRATION="http://127.0.0.1:${PORT_BASE}1" \
        SIGNET_CONTAINER_AUTHENTICATION_REPLICAS="http://127.0.0.1:${PORT_BASE}2,http://127.0.0.1:${PORT_BASE}6" \
        SIGNET_CONTAINER_ADMIN_TOKEN="$SIGNET_ADMIN_TOKEN" SIGNET_CONTAINER_EMAIL_DIR="$WORK/sinks/email" \
        SIGNET_CONTAINER_STOPPABLE_REPLICA="${PROJECT}_authentication-2_1" \
        swift test --skip-build --no-parallel --filter ContainerReplicaStopTests 2>&1 | tee -a "$WORK/swift-test.log" | grep -E '✔|✘|passed|failed|error' >&2
    return "${PIPESTATUS[0]}"
}

main() {
    mkdir -p "$WORK"
    install_engine
    images
    local status=0
    trap 'dump_logs; down' EXIT
    fail_closed || status=1
    run_stack || status=1
    [ $status -ne 0 ] || smoke || status=1
    log "container checks took $(elapsed): $([ $status -eq 0 ] && echo passed || echo FAILED)"
    return $status
}

PORT_BASE="${SIGNET_DEPLOY_PORT_BASE:-1849}"

case "${1:-all}" in
all) main ;;
images) mkdir -p "$WORK"; install_engine; images ;;
base) mkdir -p "$WORK"; install_engine; base_image; echo "$BASE_IMAGE" ;;
up) mkdir -p "$WORK"; install_engine; base_image; run_stack ;;
smoke) secrets_env="$WORK/secrets/env"; set -a; . "$secrets_env"; set +a; smoke ;;
down) down ;;
*) echo "usage: $0 [all|images|up|smoke|down]" >&2; exit 2 ;;
esac
