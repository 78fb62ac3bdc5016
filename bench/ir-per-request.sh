#!/usr/bin/env bash
# User-space instructions per request of the whole hubload CLI, counted by callgrind: the
# figure to optimise on a loaded machine (it does not move with the CPU share a run gets).
#
# Starts a one-worker nginx answering like a hub (bench/nginx.sh), runs `hubload --requests
# N1` and `--requests N2` under `valgrind --tool=callgrind`, and prints (Ir(N2) - Ir(N1)) /
# (N2 - N1): the instructions of one more request, set-up excluded. Then the same for wrk
# (-t1, the same POST and connections), run for D1 and D2 seconds, per request nginx served
# in between: the like-for-like target. Kernel time is not counted (callgrind sees user space
# only).
#
# Usage: bench/ir-per-request.sh [hubload binary]   (default target/release/hubload)
# Knobs: N1=2000 N2=12000 CONCURRENCY=50 KEEP=1 (keep the callgrind files, for callgrind_annotate)
#        WRK=0 (skip wrk)  HUBLOAD=0 (skip hubload)  D1=2 D2=8 (wrk's two durations, s)
#        TLS=1 (nginx terminates TLS; give wrk D1=20 D2=40: its handshakes are slow under valgrind)
#        CACHE=1 (callgrind's cache simulation too: also prints D1 and last-level data-cache misses
#                 per request, the cost that grows with the connection count while Ir does not;
#                 LL_BYTES=65536 shrinks the simulated last level so its misses count the lines
#                 touched once per connection round, the ones the kernel evicts between requests)
#        BRANCH=1 (callgrind's branch simulation too: also prints every simulated event per
#                 request, mispredicted conditional (Bcm) and indirect (Bim) branches among them)
#        ATOMICS=1 (also prints the atomic read-modify-write instructions per request, in all and
#                 by function: bench/atomics-per-request.py; each is one instruction to callgrind
#                 but tens of cycles to the processor)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/target/release/hubload}
N1=${N1:-2000}
N2=${N2:-12000}
D1=${D1:-2}
D2=${D2:-8}
CONCURRENCY=${CONCURRENCY:-50}
WORK=$(mktemp -d)
NGINX_PID=""
cleanup() {
    if [[ -n $NGINX_PID ]]; then kill "$NGINX_PID" 2>/dev/null || true; fi
    if [[ -z ${KEEP:-} ]]; then rm -rf "$WORK"; else echo "callgrind files kept in $WORK" >&2; fi
}
trap cleanup EXIT
source "$ROOT/bench/nginx.sh"
# shellcheck source=bench/callgrind.sh
source "$ROOT/bench/callgrind.sh"
PORT=$(free_port)
STATUS_PORT=$(free_port)
LISTEN="listen 127.0.0.1:$PORT;"
SCHEME=http
HUB_TLS=()
if [[ ${TLS:-} == 1 ]]; then
    tls_cert "$WORK"
    LISTEN="listen 127.0.0.1:$PORT ssl; ssl_certificate $WORK/leaf.pem; ssl_certificate_key $WORK/leaf.key;"
    SCHEME=https
    HUB_TLS=(--ca-cert "$WORK/ca.pem")
fi
nginx_start "$WORK" "$CONCURRENCY" "server {
        $LISTEN
        $HUB_ACCEPT
    }
    server { listen 127.0.0.1:$STATUS_PORT; location = /nginx_status { stub_status; } }"
CG=(--tool=callgrind)
# LL: the 2 MiB second-level cache of the 2-core VM the figures were taken on (callgrind would
# take its 480 MiB L3, which nothing here misses).
if [[ ${CACHE:-} == 1 ]]; then CG+=(--cache-sim=yes --LL=${LL_BYTES:-2097152},16,64); fi
if [[ ${BRANCH:-} == 1 ]]; then CG+=(--branch-sim=yes); fi
if [[ ${ATOMICS:-} == 1 ]]; then CG+=(--dump-instr=yes); fi
# With CACHE=1: "D1 LL", the data reads and writes that missed the first-level and the
# last-level cache (the events are Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw).
misses() { awk '/^summary:|^totals:/ { print $6 + $7, $9 + $10; exit }' "$1"; }
# Every simulated event's total, as "NAME=COUNT" words in the file's order.
events() { awk '/^events:/ { for (i = 2; i <= NF; i++) n[i] = $i } /^summary:|^totals:/ { for (i = 2; i <= NF; i++) printf "%s=%s ", n[i], $i; exit }' "$1"; }
per_req() { # NAME FILE_A FILE_B REQUESTS_A REQUESTS_B: the cache misses of one more request
    if [[ ${CACHE:-} == 1 ]]; then
        local a b
        read -r -a a <<<"$(misses "$2")"
        read -r -a b <<<"$(misses "$3")"
        echo "$1: D1 misses per request $(( (b[0] - a[0]) / ($5 - $4) )), LL misses per request $(( (b[1] - a[1]) / ($5 - $4) ))"
    fi
    if [[ ${BRANCH:-} == 1 ]]; then
        # Per request, one decimal: the misses are a few per request.
        paste -d' ' <(events "$2" | tr ' ' '\n') <(events "$3" | tr ' ' '\n') |
            awk -v n=$(($5 - $4)) -v who="$1" -F'[= ]' 'NF == 4 { printf "%s %s %.1f", (NR == 1 ? who ":" : ""), $1, ($4 - $2) / n } END { print "" }'
    fi
    if [[ ${ATOMICS:-} == 1 ]]; then
        echo "$1:"
        python3 "$ROOT/bench/atomics-per-request.py" "$2" "$3" "$4" "$5"
    fi
}
ir() {
    local out=$WORK/callgrind.$1
    valgrind "${CG[@]}" --callgrind-out-file="$out" "$BIN" --hub-url "$SCHEME://127.0.0.1:$PORT/hub" \
        "${HUB_TLS[@]}" --concurrency "$CONCURRENCY" --requests "$1" --threads 1 --quiet --tenants 1 \
        --topics shared --out "$WORK/report.$1" >"$WORK/log.$1" 2>&1 || { cat "$WORK/log.$1" >&2; exit 1; }
    grep -q "^TOTAL,$1," "$WORK/report.$1/aggregate.csv" ||
        { echo "hubload did not count $1 requests" >&2; exit 1; }
    total_ir "$out"
}
HL=-
if [[ ${HUBLOAD:-1} == 1 ]]; then
    A=$(ir "$N1")
    B=$(ir "$N2")
    HL=$(( (B - A) / (N2 - N1) ))
    echo "hubload: Ir($N1) $A, Ir($N2) $B, per request $HL"
    per_request http1 "$WORK/callgrind.$N1" "$WORK/callgrind.$N2" "$N1" "$N2"
    per_req hubload "$WORK/callgrind.$N1" "$WORK/callgrind.$N2" "$N1" "$N2"
fi
[[ ${WRK:-1} == 1 ]] || exit 0

# wrk stops on time, not on a count: nginx's own count says how many requests each run made.
BODY_FILE=$WORK/login-event.json
login_event >"$BODY_FILE"
wrk_post_lua "$BODY_FILE" >"$WORK/post.lua"
wrk_ir() {
    local out=$WORK/callgrind.wrk.$1 before
    before=$(nginx_served "$STATUS_PORT")
    # --timeout: under valgrind a TLS handshake alone takes longer than wrk's default 2 s.
    valgrind "${CG[@]}" --callgrind-out-file="$out" wrk -t1 -c"$CONCURRENCY" -d"$1s" --timeout 60s \
        -s "$WORK/post.lua" "$SCHEME://127.0.0.1:$PORT/hub?hub.mode=publish&hub.topic=T" \
        >"$WORK/log.wrk.$1" 2>&1 || { cat "$WORK/log.wrk.$1" >&2; exit 1; }
    echo "$(total_ir "$out") $(( $(nginx_served "$STATUS_PORT") - before - 1 ))"
}
read -r WA NA <<<"$(wrk_ir "$D1")"
read -r WB NB <<<"$(wrk_ir "$D2")"
WRK_IR=$(( (WB - WA) / (NB - NA) ))
echo "wrk: Ir(${D1}s, $NA requests) $WA, Ir(${D2}s, $NB requests) $WB, per request $WRK_IR"
per_req wrk "$WORK/callgrind.wrk.$D1" "$WORK/callgrind.wrk.$D2" "$NA" "$NB"
printf '%-8s %14s\n' client "Ir/request" hubload "$HL" wrk "$WRK_IR"
