#!/usr/bin/env bash
# User-space instructions per request of the whole hubload CLI, counted by callgrind: the
# figure to optimise on a loaded machine (it does not move with the CPU share a run gets).
#
# Starts a one-worker nginx answering like a hub (as bench/http-vs-wrk.sh does), runs
# `hubload --requests N1` and `--requests N2` under `valgrind --tool=callgrind`, and prints
# (Ir(N2) - Ir(N1)) / (N2 - N1): the instructions of one more request, set-up excluded.
# Kernel time is not counted (callgrind sees user space only).
#
# Usage: bench/ir-per-request.sh [hubload binary]   (default target/release/hubload)
# Knobs: N1=2000 N2=12000 CONCURRENCY=50 KEEP=1 (keep the callgrind files, for callgrind_annotate)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/target/release/hubload}
N1=${N1:-2000}
N2=${N2:-12000}
CONCURRENCY=${CONCURRENCY:-50}
WORK=$(mktemp -d)
NGINX_PID=""
cleanup() {
    if [[ -n $NGINX_PID ]]; then kill "$NGINX_PID" 2>/dev/null || true; fi
    if [[ -z ${KEEP:-} ]]; then rm -rf "$WORK"; else echo "callgrind files kept in $WORK" >&2; fi
}
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$WORK/tmp"
cat >"$WORK/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $WORK/tmp/body;
    keepalive_requests 100000000;
    server {
        listen 127.0.0.1:$PORT;
        location /hub {
            default_type application/x-www-form-urlencoded;
            return 200 "hub.mode=accepted";
        }
    }
}
CONF
nginx -p "$WORK" -c "$WORK/nginx.conf" &
NGINX_PID=$!
for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done
ir() {
    local out=$WORK/callgrind.$1
    valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN" --hub-url "http://127.0.0.1:$PORT/hub" \
        --concurrency "$CONCURRENCY" --requests "$1" --threads 1 --quiet --tenants 1 --topics shared \
        --out "$WORK/report.$1" >"$WORK/log.$1" 2>&1 || { cat "$WORK/log.$1" >&2; exit 1; }
    grep -q "^TOTAL,$1," "$WORK/report.$1/aggregate.csv" ||
        { echo "hubload did not count $1 requests" >&2; exit 1; }
    awk '/^summary:|^totals:/ { print $2; exit }' "$out"
}
A=$(ir "$N1")
B=$(ir "$N2")
echo "Ir($N1) $A, Ir($N2) $B, per request $(( (B - A) / (N2 - N1) ))"
