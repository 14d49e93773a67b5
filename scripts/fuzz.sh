#!/usr/bin/env bash
# libFuzzer targets of Tools/Fuzz (issue 21): build, run, minimise, replay.
#
#   scripts/fuzz.sh build                 build every target in .build/fuzz (ASan + libFuzzer;
#                                         UBSan for the C shims)
#   scripts/fuzz.sh run [Target…]         run each target (all by default) for FUZZ_SECONDS
#                                         and/or FUZZ_RUNS executions (60 s if neither); print
#                                         executions, coverage and findings; exit 1 on a finding
#   scripts/fuzz.sh merge [Target…]       minimise what the runs found into Tools/Fuzz/Corpus
#   scripts/fuzz.sh replay [Target…]      run every corpus and regression input once
#
# Runs work on a copy of the corpus under .build/fuzz-work; findings (crash-, leak-, oom-,
# timeout- files) land in .build/fuzz-findings/<Target>/. A finding becomes a regression input:
# fix the parser, add a test with the input to the module's test target, and keep the input in
# Tools/Fuzz/Regressions/<Target>/ (replayed by `replay` and by every run).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(JSONFuzz HTTPBodyFuzz CBORFuzz COSEKeyFuzz AuthenticatorDataFuzz AttestationFuzz TPMFuzz X509Fuzz JWSFuzz JWKSFuzz MDSFuzz RulesFuzz EventFuzz UAFFuzz UAFPNGFuzz MRZFuzz AAMVAFuzz)
BUILD=.build/fuzz
BIN="$BUILD/release"
# Every run: inputs up to 64 KiB (the HTTP body limit; see max_len for the body decoder), no
# single allocation past 64 MiB and no process past 1.5 GiB (a parser that allocates beyond its
# input's size is a finding), 20 s per input at most (FUZZ_TIMEOUT; every corpus input takes
# well under 0.1 s, but a niced run on a loaded machine can be starved for seconds: 5 s gave a
# false finding under load 12).
MAX_LEN=${FUZZ_MAX_LEN:-65536}
COMMON=(-malloc_limit_mb=64 -rss_limit_mb=1536 -timeout="${FUZZ_TIMEOUT:-20}" -print_final_stats=1 -reload=0)

# The longest input of a target: the request bodies (HTTPBodyFuzz, a selector byte and a body)
# go up to the largest route bound, the UAF authentication request's 64 KiB plus four PNG forms
# as base64url (4 x 43,691 bytes; UAFTransactionContents.maximumContentLength), which also
# covers a transaction's three images; every other parser reads what fits in 64 KiB.
max_len() {
    case "$1" in
        HTTPBodyFuzz) echo $((MAX_LEN > 240301 ? MAX_LEN : 240301)) ;;
        *) echo "$MAX_LEN" ;;
    esac
}
export SWIFT_BACKTRACE=enable=no   # else the runtime's backtracer holds the process after a finding
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

dictionary() {
    case "$1" in
        JSONFuzz|HTTPBodyFuzz|JWKSFuzz|MDSFuzz|JWSFuzz|RulesFuzz|EventFuzz) echo Tools/Fuzz/Dictionaries/json.dict ;;
        CBORFuzz|COSEKeyFuzz|AuthenticatorDataFuzz|AttestationFuzz) echo Tools/Fuzz/Dictionaries/cbor.dict ;;
        X509Fuzz) echo Tools/Fuzz/Dictionaries/der.dict ;;
        UAFPNGFuzz) echo Tools/Fuzz/Dictionaries/png.dict ;;
        *) echo "" ;;
    esac
}

build() {
    for t in "${TARGETS[@]}"; do
        echo "building fuzz-$t"
        # SIGNET_FUZZ=1 declares the targets (Package.swift); -enable-testing lets targets reach
        # internal parsers (TPM structures, the MDS payload) through @testable import; lld
        # because gold fails on libFuzzer's archive.
        SIGNET_FUZZ=1 nice -n 10 swift build --build-path "$BUILD" -c release --product "fuzz-$t" \
            -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing -Xswiftc -use-ld=lld \
            -Xcc -fsanitize=fuzzer-no-link,address,undefined 2>&1 \
            | { grep -v -e "Cannot export local symbol" -e "^\[" || true; }
        test -x "$BIN/fuzz-$t"
    done
}

selected() { if [ $# -gt 0 ]; then printf '%s\n' "$@"; else printf '%s\n' "${TARGETS[@]}"; fi; }

run() {
    local findings_total=0 rows=()
    for t in $(selected "$@"); do
        local work=".build/fuzz-work/$t" found=".build/fuzz-findings/$t" log=".build/fuzz-logs/$t.log"
        mkdir -p "$work" "$found" .build/fuzz-logs
        cp -n Tools/Fuzz/Corpus/"$t"/* "$work"/ 2>/dev/null || true
        local before; before=$(find "$found" -type f | wc -l)
        # FUZZ_RUNS, FUZZ_SECONDS or both (whichever comes first); 60 s when neither is set.
        local limit=()
        [ -n "${FUZZ_RUNS:-}" ] && limit+=(-runs="$FUZZ_RUNS")
        [ -n "${FUZZ_SECONDS:-}" ] && limit+=(-max_total_time="$FUZZ_SECONDS")
        [ ${#limit[@]} -eq 0 ] && limit=(-max_total_time=60)
        local dict; dict=$(dictionary "$t")
        local args=("${COMMON[@]}" -max_len="$(max_len "$t")" "${limit[@]}" -artifact_prefix="$found/")
        [ -n "$dict" ] && args+=(-dict="$dict")
        # Regression inputs first: each must pass before the search starts.
        if [ -d "Tools/Fuzz/Regressions/$t" ] && [ -n "$(ls -A "Tools/Fuzz/Regressions/$t")" ]; then
            nice -n 10 "$BIN/fuzz-$t" "${COMMON[@]}" -max_len="$(max_len "$t")" -artifact_prefix="$found/" Tools/Fuzz/Regressions/"$t"/* >"$log.regressions" 2>&1 || true
        fi
        nice -n 10 "$BIN/fuzz-$t" "${args[@]}" "$work" >"$log" 2>&1 || true
        local execs cov ft after
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
        cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
        ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
        after=$(find "$found" -type f | wc -l)
        local new=$((after - before))
        findings_total=$((findings_total + new))
        rows+=("$(printf '%-24s %12s %8s %8s %9s' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$new")")
        printf '%-24s %12s execs  cov %-6s ft %-6s findings %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$new"
        if [ "$new" -gt 0 ]; then
            grep -m5 -e "ERROR:" -e "Fatal error" -e "SUMMARY" "$log" "$log.regressions" 2>/dev/null || true
            ls -t "$found" | head -"$new" | sed "s|^|  $found/|"
        fi
    done
    echo
    printf '%-24s %12s %8s %8s %9s\n' target executions cov ft findings
    printf '%s\n' "${rows[@]}"
    if [ "$findings_total" -gt 0 ]; then
        echo "fuzz: $findings_total finding(s); inputs under .build/fuzz-findings/" >&2
        return 1
    fi
}

merge() {
    for t in $(selected "$@"); do
        mkdir -p "Tools/Fuzz/Corpus/$t" ".build/fuzz-work/$t"
        local fresh=".build/fuzz-merge/$t"
        rm -rf "$fresh" && mkdir -p "$fresh"
        nice -n 10 "$BIN/fuzz-$t" "${COMMON[@]}" -max_len="$(max_len "$t")" -merge=1 "$fresh" "Tools/Fuzz/Corpus/$t" ".build/fuzz-work/$t" \
            >".build/fuzz-merge/$t.log" 2>&1
        rm -f "Tools/Fuzz/Corpus/$t"/*
        cp "$fresh"/* "Tools/Fuzz/Corpus/$t"/
        echo "$t: $(ls "Tools/Fuzz/Corpus/$t" | wc -l) inputs, $(du -sk "Tools/Fuzz/Corpus/$t" | cut -f1) KiB"
    done
}

replay() {
    for t in $(selected "$@"); do
        local inputs=()
        for d in "Tools/Fuzz/Corpus/$t" "Tools/Fuzz/Regressions/$t"; do
            [ -d "$d" ] && [ -n "$(ls -A "$d")" ] && inputs+=("$d"/*)
        done
        [ ${#inputs[@]} -eq 0 ] && continue
        "$BIN/fuzz-$t" "${COMMON[@]}" -max_len="$(max_len "$t")" -runs=0 "${inputs[@]}" >/dev/null 2>".build/fuzz-$t-replay.log" \
            || { echo "$t: replay failed" >&2; tail -20 ".build/fuzz-$t-replay.log" >&2; return 1; }
        echo "$t: ${#inputs[@]} inputs replayed"
    done
}

command=${1:-run}
shift || true
case "$command" in
    build) build ;;
    run) run "$@" ;;
    merge) merge "$@" ;;
    replay) replay "$@" ;;
    *) echo "usage: scripts/fuzz.sh build|run|merge|replay [Target…]" >&2; exit 64 ;;
esac
