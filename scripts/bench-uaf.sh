#!/usr/bin/env bash
# FIDO UAF (#15): UAF AuthenticationResponse verifications per second in process beside
# `openssl speed` for the same curve. Run by scripts/bench.sh (make bench) at its end; needs no
# stack, so it also runs alone:
#
#   bash scripts/bench-uaf.sh                   the release signet-bench (built if needed)
#   BIN=/path/to/dir UAF_PAIRS=5 bash scripts/bench-uaf.sh   another build, more pairs
#   UAF_CURVES="384" bash scripts/bench-uaf.sh  one curve
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [ -z "${BIN:-}" ]; then
    swift build -c release --product signet-bench >/dev/null
    BIN="$(swift build -c release --show-bin-path)"
fi
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf 'load average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
# UAF AuthenticationResponse verifications per second in process (UAF Protocol §3.5.7.5, one
# thread), beside `openssl speed` verify for the same curve and the raw Crypto verify of the
# same signature. In process only: this block needs no stack. Both signet-bench figures are
# per second of the thread's CPU time, as `openssl speed` counts (user CPU time, not
# wall-clock), measured in alternating slices so that both see the same machine load.
# `openssl speed` is another process and cannot share the slices: it and signet-bench run
# one after the other, UAF_PAIRS times per curve (3 by default), and the ratio printed is the
# median of the pairs' ratios, each pair's beside it (one pair moved by ±8 % between runs here
# at a load of 1). signet-bench also runs `openssl speed`'s own verify loop (apps/speed.c:
# keygen'd key, one EVP_PKEY_CTX, EVP_PKEY_verify over 20 bytes) in the same slices as the UAF
# verification: the ratio to it is free of the machine's drift between the two processes. The
# UAF figure hits the key cache (the bench's key is always the same); the line under it parses
# the key on every call. The key-parse block at the end prints the parse alone.
printf '\n%-58s %12s\n' "FIDO UAF (1 thread)" "per second"
for curve in ${UAF_CURVES:-256 384 521}; do
    uaf_ratios=""; uaf_fulls=""; uaf_raws=""; uaf_openssls=""; uaf_loops=""; uaf_loop_ratios=""; uaf_uncached=""
    for _ in $(seq "${UAF_PAIRS:-3}"); do
        uaf_verify=$("$BIN/signet-bench" uaf-verify 5 "p$curve")
        uaf_openssl=$(openssl speed -seconds 5 "ecdsap$curve" 2>/dev/null | awk "/nistp$curve/" | tail -n 1 | awk '{print $NF}')
        uaf_full=$(printf '%s\n' "$uaf_verify" | awk -v k="uaf_verify_p${curve}_per_s" '$1 == k {print $2}')
        uaf_raw=$(printf '%s\n' "$uaf_verify" | awk -v k="crypto_p${curve}_verify_per_s" '$1 == k {print $2}')
        uaf_loop=$(printf '%s\n' "$uaf_verify" | awk -v k="openssl_loop_p${curve}_verify_per_s" '$1 == k {print $2}')
        uaf_uncached="$uaf_uncached $(printf '%s\n' "$uaf_verify" | awk -v k="uaf_verify_uncached_key_p${curve}_per_s" '$1 == k {print $2}')"
        uaf_fulls="$uaf_fulls $uaf_full"; uaf_raws="$uaf_raws $uaf_raw"; uaf_openssls="$uaf_openssls $uaf_openssl"; uaf_loops="$uaf_loops $uaf_loop"
        uaf_ratios="$uaf_ratios $(awk -v v="$uaf_full" -v o="$uaf_openssl" 'BEGIN { if (o > 0) printf "%.1f", 100 * v / o }')"
        uaf_loop_ratios="$uaf_loop_ratios $(awk -v v="$uaf_full" -v o="$uaf_loop" 'BEGIN { if (o > 0) printf "%.1f", 100 * v / o }')"
    done
    printf '%-58s %12s   runs:%s\n' "UAF assertion verification, P-$curve (median)" "$(printf '%s' "$uaf_fulls" | median)" "$uaf_fulls"
    printf '%-58s %12s   runs:%s\n' "  the same, key parsed on every call (no key cache)" "$(printf '%s' "$uaf_uncached" | median)" "$uaf_uncached"
    printf '%-58s %12s   runs:%s\n' "Crypto P-$curve verify alone (median)" "$(printf '%s' "$uaf_raws" | median)" "$uaf_raws"
    printf '%-58s %12s   runs:%s\n' "openssl speed's loop in process, same slices (median)" "$(printf '%s' "$uaf_loops" | median)" "$uaf_loops"
    printf '%-58s %12s   runs:%s\n' "openssl speed ecdsap$curve verify (anchor, 1 core; median)" "$(printf '%s' "$uaf_openssls" | median)" "$uaf_openssls"
    printf '%-58s %11s%%  (median of the pairs; per pair:%s; target 90%%)\n' "UAF verification / openssl, P-$curve" "$(printf '%s' "$uaf_ratios" | median)" "$uaf_ratios"
    printf '%-58s %11s%%  (median; per run:%s)\n' "UAF verification / openssl's loop in process, P-$curve" "$(printf '%s' "$uaf_loop_ratios" | median)" "$uaf_loop_ratios"
done
# Building a public key from its parts beside one verification with it (issue #14: a sign-in
# whose credential is not cached parses the stored key before it verifies), one thread, in the
# same alternating slices: the key as Signet builds it, the same key from its
# SubjectPublicKeyInfo through OpenSSL 3's decoders (d2i_PUBKEY: how EC keys were built before),
# and a verification (`signet-bench key-parse`). KEY_CASES picks the cases.
printf '\n%-30s %12s %12s %12s %10s %12s %14s\n' "Public key parse (1 thread)" "parse/s" "decoders/s" "verify/s" "parse µs" "decoders µs" "in verifies"
for c in ${KEY_CASES:-p256 p384 p521 secp256k1 rsa2048 ed25519}; do
    out=$("$BIN/signet-bench" key-parse "${KEY_SECONDS:-2}" "$c")
    printf '%s\n' "$out" | awk -v c="$c" '
        $1 == "key_parse_" c "_per_s" { p = $2 } $1 == "key_parse_decoder_" c "_per_s" { d = $2 } $1 == "verify_" c "_per_s" { v = $2 }
        $1 == "cose_key_parse_" c "_per_s" { k = $2 }
        END {
            # The last column: what a parse costs in verifications (ours, then the decoders).
            if (p > 0 && v > 0 && d > 0) printf "%-30s %12s %12s %12s %10.1f %12.1f %6.2f / %5.2f\n", c, p, d, v, 1e6 / p, 1e6 / d, v / p, v / d
            if (k > 0) printf "%-30s %12s %12s %12s %10.1f %12s %6.2f\n", "  COSE_Key of it (WebAuthn)", k, "", "", 1e6 / k, "", v / k
        }'
done
