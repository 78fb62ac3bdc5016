#!/usr/bin/env bash
# User-space instructions per HTTP/2 request, hubload against h2load, counted by callgrind: the
# HTTP/2 counterpart of ir-per-request.sh, a figure that does not move with the CPU share a run
# gets on a loaded machine (req/s and rusage do).
#
# One one-worker nginx with `http2` on a plain listener (h2c, prior knowledge), the same
# request as hubload-vs-h2load.sh (hubload's publish, captured first). Each client runs N1 and then N2 requests under
# `valgrind --tool=callgrind`, and the script prints (Ir(N2) - Ir(N1)) / (N2 - N1): the
# instructions of one more request, start-up and reports excluded. hubload's count is checked
# against its aggregate.csv, h2load's against its own "succeeded" line.
#   hubload --http-version 2 --pool-per-host C --h2-streams S --concurrency C*S --threads 1
#   h2load  -c C -m S -t 1 -n N
# Like ir-per-request.sh it ignores the kernel and cache misses, and per-second work of
# hubload's (the display tick, the per-second histograms) weighs about 100x what it does in a
# real run (a request takes ~1 ms under callgrind instead of ~10 µs): compare builds by the
# worker loop's inclusive figure (KEEP=1, then callgrind_annotate --inclusive=yes).
#
# Usage: bench/h2-ir-per-request.sh [hubload binary]   (default target/release/hubload)
# Knobs: SHAPES="10x10 1x100" N1=2000 N2=12000 KEEP=1 (keep the callgrind files)
#        H2LOAD=0 (skip h2load)  HUBLOAD=0 (skip hubload)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/target/release/hubload}
N1=${N1:-2000}
N2=${N2:-12000}
SHAPES=${SHAPES:-10x10 1x100}
WORK=$(mktemp -d)
NGINX_PID=""
cleanup() {
    if [[ -n $NGINX_PID ]]; then kill "$NGINX_PID" 2>/dev/null || true; fi
    if [[ -z ${KEEP:-} ]]; then rm -rf "$WORK"; else echo "callgrind files kept in $WORK" >&2; fi
}
trap cleanup EXIT
# shellcheck source=bench/nginx.sh
source "$ROOT/bench/nginx.sh"
# shellcheck source=bench/callgrind.sh
source "$ROOT/bench/callgrind.sh"
PORT=$(free_port)
nginx_start "$WORK" 200 "server {
        listen 127.0.0.1:$PORT http2;
        $HUB_ACCEPT
    }"
# h2load sends hubload's publish, captured first: its path, fields and mean body length.
capture_publish "$BIN" "$WORK"

# hubload CONNS STREAMS N: its Ir, after checking it counted N publishes.
hubload_ir() {
    local out=$WORK/callgrind.hubload.$1x$2.$3
    valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN" --hub-url "http://127.0.0.1:$PORT/hub" \
        --http-version 2 --pool-per-host "$1" --h2-streams "$2" --concurrency $(($1 * $2)) \
        --requests "$3" --threads 1 --quiet --tenants 1 --topics shared \
        --out "$WORK/report.$1x$2.$3" >"$WORK/log" 2>&1 || { cat "$WORK/log" >&2; exit 1; }
    grep -q "^TOTAL,$3," "$WORK/report.$1x$2.$3/aggregate.csv" ||
        { echo "hubload did not count $3 requests" >&2; exit 1; }
    total_ir "$out"
}

# h2load CONNS STREAMS N: its Ir, after checking all N requests succeeded.
h2load_ir() {
    local out=$WORK/callgrind.h2load.$1x$2.$3
    valgrind --tool=callgrind --callgrind-out-file="$out" h2load -c "$1" -m "$2" -t 1 -n "$3" \
        -d "$WORK/body.json" "${H2LOAD_FIELDS[@]}" "http://127.0.0.1:$PORT$REQ_PATH" >"$WORK/log" 2>&1 ||
        { cat "$WORK/log" >&2; exit 1; }
    grep -q "requests: $3 total, $3 started, $3 done, $3 succeeded" "$WORK/log" ||
        { grep '^requests:' "$WORK/log" >&2; echo "h2load did not complete $3 requests" >&2; exit 1; }
    total_ir "$out"
}

ROWS=()
for shape in $SHAPES; do
    c=${shape%x*}
    s=${shape#*x}
    for client in hubload h2load; do
        [[ ${HUBLOAD:-1} == 1 || $client != hubload ]] || continue
        [[ ${H2LOAD:-1} == 1 || $client != h2load ]] || continue
        A=$("${client}_ir" "$c" "$s" "$N1")
        B=$("${client}_ir" "$c" "$s" "$N2")
        per=$(((B - A) / (N2 - N1)))
        echo "$client $shape: Ir($N1) $A, Ir($N2) $B, per request $per"
        if [[ $client == hubload ]]; then
            per_request "h2-$shape" "$WORK/callgrind.hubload.${c}x$s.$N1" "$WORK/callgrind.hubload.${c}x$s.$N2" "$N1" "$N2"
        fi
        ROWS+=("$(printf '%-8s %-7s %12s' "$client" "$shape" "$per")")
    done
done
printf '%-8s %-7s %12s\n' client shape "Ir/request"
printf '%s\n' "${ROWS[@]}"
