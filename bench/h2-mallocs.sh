#!/usr/bin/env bash
# Heap allocations per HTTP/2 request, hubload against h2load: a figure that does not move
# with the CPU share a run gets on a loaded machine (callgrind cannot run hubload at present:
# rustix's vDSO lookup faults under valgrind 3.19).
#
# One one-worker nginx with `http2` on a plain listener (h2c, prior knowledge) answering like a
# hub (bench/nginx.sh). For each shape (10 connections × 10 streams, 1 × 100) each client runs
# N1 and N2 requests with uprobes counting malloc (`perf probe`; libc's and jemalloc's), and the allocations
# of one more request are (count(N2) - count(N1)) / (N2 - N1), set-up excluded. Both send the
# same request (hubload's publish, captured first); hubload's count is checked against its
# own report, h2load's against its summary.
#
# Usage: bench/h2-mallocs.sh [hubload binary]   (default target/release/hubload)
# Knobs: N1=5000 N2=25000 SHAPES="10x10 1x100"
# Needs root (perf probe), perf, nginx (with http_v2) and h2load (Debian's nghttp2-client).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/target/release/hubload}
N1=${N1:-5000}
N2=${N2:-25000}
SHAPES=${SHAPES:-10x10 1x100}
WORK=$(mktemp -d)
NGINX_PID=""
# Debian's h2load allocates with jemalloc: count its malloc too (and libc's for hubload).
LIBS=$(ldd "$(command -v h2load)" | awk '/libc\.so|libjemalloc/ { print $3 }')
EVENTS=()
cleanup() {
    if [[ -n $NGINX_PID ]]; then kill "$NGINX_PID" 2>/dev/null || true; fi
    for e in "${EVENTS[@]}"; do perf probe -q -d "$e" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
for lib in $LIBS; do
    name=$(basename "$lib" | cut -d. -f1 | tr -c 'a-z\n' _)
    perf probe -q -x "$lib" "malloc_$name=malloc"
    EVENTS+=("probe_$(basename "$lib" | cut -d. -f1):malloc_$name")
done
EVENT_LIST=$(IFS=,; echo "${EVENTS[*]}")
# shellcheck source=bench/nginx.sh
source "$ROOT/bench/nginx.sh"
PORT=$(free_port)
nginx_start "$WORK" 200 "server {
        listen 127.0.0.1:$PORT http2;
        $HUB_ACCEPT
    }"
# h2load sends hubload's publish, captured first: its path, fields and mean body length.
capture_publish "$BIN" "$WORK"
count() { awk -F, '/:malloc_/ { n += $1 } END { print n }' "$WORK/stat"; }

# hubload N CONNS STREAMS: its mallocs for N publishes.
hubload_mallocs() {
    perf stat -x, -e "$EVENT_LIST" -o "$WORK/stat" "$BIN" \
        --hub-url "http://127.0.0.1:$PORT/hub" --http-version 2 --pool-per-host "$2" \
        --h2-streams "$3" --concurrency $(($2 * $3)) --requests "$1" --threads 1 --quiet \
        --tenants 1 --topics shared --out "$WORK/report" >"$WORK/log" 2>&1 ||
        { cat "$WORK/log" >&2; exit 1; }
    grep -q "^TOTAL,$1," "$WORK/report/aggregate.csv" ||
        { echo "hubload did not count $1 requests" >&2; exit 1; }
    count
}

# h2load N CONNS STREAMS: its mallocs for N requests (checked: N succeeded).
h2load_mallocs() {
    perf stat -x, -e "$EVENT_LIST" -o "$WORK/stat" h2load -n "$1" -c "$2" -m "$3" -t 1 \
        -d "$WORK/body.json" "${H2LOAD_FIELDS[@]}" "http://127.0.0.1:$PORT$REQ_PATH" >"$WORK/log" 2>&1 ||
        { cat "$WORK/log" >&2; exit 1; }
    grep -q "requests: $1 total, $1 started, $1 done, $1 succeeded" "$WORK/log" ||
        { cat "$WORK/log" >&2; exit 1; }
    count
}

printf '%-8s %-8s %16s\n' shape client "mallocs/request"
for shape in $SHAPES; do
    conns=${shape%x*}
    streams=${shape#*x}
    for client in hubload h2load; do
        a=$("${client}_mallocs" "$N1" "$conns" "$streams")
        b=$("${client}_mallocs" "$N2" "$conns" "$streams")
        awk -v s="$shape" -v c="$client" -v a="$a" -v b="$b" -v n=$((N2 - N1)) \
            'BEGIN { printf "%-8s %-8s %16.2f\n", s, c, (b - a) / n }'
    done
done
