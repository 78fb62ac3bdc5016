#!/usr/bin/env bash
# hubload builds (or one build under different environments) against each other and against
# h2load over HTTP/2, interleaved, on the same one-worker nginx (h2c plus a plain HTTP/1.1
# listener) with the same request as hubload-vs-h2load.sh (the first build's publish,
# captured): for tuning, where the CPU per
# request of one change is smaller than the noise between runs minutes apart.
#
# Usage: bench/hubload-ab.sh 'LABEL=[ENV=VALUE ...] BINARY' ...
#   e.g. bench/hubload-ab.sh 'glibc=old/hubload' 'mimalloc=HUBLOAD_X=1 new/hubload'
# Knobs: ROUNDS=3 DURATION=5 SHAPES="10x10 1x100 h1" (h1: HTTP/1.1, 100 connections)
#        H2LOAD=1 (also h2load at each HTTP/2 shape, first in each round)
# Prints one row per run: requests, req/s, the client's user/sys/total CPU µs per request
# (its rusage by /usr/bin/time), nginx's worker CPU µs per request and nginx's own count.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck source=bench/nginx.sh
source bench/nginx.sh
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
SHAPES=${SHAPES:-10x10 1x100 h1}
H2LOAD=${H2LOAD:-1}
(($# > 0)) || { echo "usage: $0 'LABEL=[ENV=VALUE ...] BINARY' ..." >&2; exit 2; }
read -r -a FIRST <<<"${1#*=}"
CAPTURE_BIN=${FIRST[-1]}
# shellcheck source=bench/h2-bench.sh
source bench/h2-bench.sh

# hubload SPEC SHAPE: prints "REQUESTS REQ_PER_S".
run_hubload() {
    local -a spec args
    read -r -a spec <<<"$1"
    case $2 in
    h1) args=(--hub-url "http://127.0.0.1:$H1/hub" --http-version 1.1 --pool-per-host 100) ;;
    *x*) args=(--hub-url "http://127.0.0.1:$H2/hub" --http-version 2 --pool-per-host "${2%x*}" --h2-streams "${2#*x}") ;;
    esac
    rm -rf "$WORK/report"
    env "${spec[@]:0:${#spec[@]}-1}" "${WRAP[@]}" "${spec[-1]}" "${args[@]}" \
        --concurrency 100 --threads 1 --duration "${DURATION}s" --quiet \
        --tenants 1 --topics shared --out "$WORK/report" >"$WORK/hubload.log" 2>&1 ||
        { cat "$WORK/hubload.log" >&2; return 1; }
    awk -F, '$1 == "TOTAL" { print $2, $11 }' "$WORK/report/aggregate.csv"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); load $(cut -d' ' -f1-3 /proc/loadavg); ${DURATION}s per run"
measure_header
for round in $(seq "$ROUNDS"); do
    echo "# round $round"
    for shape in $SHAPES; do
        if [[ $H2LOAD == 1 && $shape == *x* ]]; then
            measure "h2load $shape" run_h2load "${shape%x*}" "${shape#*x}"
        fi
        for v in "$@"; do
            measure "${v%%=*} $shape" run_hubload "${v#*=}" "$shape"
        done
    done
done
