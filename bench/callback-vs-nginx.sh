#!/usr/bin/env bash
# hubload's callback server (the subscriber fleet, examples/callback_server.rs, release, one
# current-thread runtime) against a one-worker nginx answering 204, both taking the same
# signed delivery POSTs from wrk: the login event, its Content-Type, Link and X-Hub-Signature
# (HMAC-SHA256 with the fleet's secret). The fleet checks each one in full (signature,
# sequence number, body regenerated and compared; every POST after the first counts as a
# duplicate). Rounds alternate; prints req/s, the server's CPU (user + sys) per request and
# the ratio, and reconciles wrk's count with each server's own (fleet `received`, nginx
# stub_status): the server may count up to C more, the requests in flight when wrk stopped.
# Everything stays on 127.0.0.1.
# Usage: bench/callback-vs-nginx.sh [duration in s, default 5] [connections, default 50]
# CALLGRIND=1: instead, the fleet's user-space instructions per delivery, which do not move
# with the CPU share a run gets: the fleet under valgrind --tool=callgrind for two wrk runs
# (2 s and 2 + DURATION s), printing (Ir(long) - Ir(short)) / (received(long) - received(short)).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-5}
CONNS=${2:-50}
ROUNDS=${ROUNDS:-3}
[[ "$DURATION" =~ ^[0-9]+$ ]] || { echo "duration: expected whole seconds, got $DURATION" >&2; exit 2; }
for tool in wrk nginx curl; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: apt-get install -y $tool" >&2; exit 2; }
done
source bench/nginx.sh
bench_setup
FLEET="$BIN/examples/callback_server"

per() { awk -v a="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.2f", a / n; else printf "-" }'; }
count() { awk '/requests in/ {print $1}'; }
rps() { awk '/Requests\/sec/ {print $2}'; }
# wrk counts completed requests only: the server's count is wrk's plus those in flight.
reconcile() {
  local what=$1 server=$2 client=$3
  if [ "$server" -lt "$client" ] || [ "$server" -gt $((client + CONNS)) ]; then
    echo "$what counted $server requests, wrk $client (expected $client..$((client + CONNS)))" >&2; exit 1
  fi
}

# A free port unless given (a fixed port in the ephemeral range can be held by a TIME-WAIT).
NGINX_PORT=${NGINX_PORT:-$(free_port)}
nginx_start "$WORK/nginx" 3072 "server {
    listen 127.0.0.1:$NGINX_PORT;
    location = /nginx_status { stub_status; }
    location / { return 204; }
  }"; PIDS+=("$NGINX_PID")
nginx_requests() { nginx_served "$NGINX_PORT"; }

# The fleet serves for DURATION + 3 s, then prints its counters; started once per round.
start_fleet() {
  # Emptied first: else the wait below can see the last round's URL before the new fleet's
  # redirection truncates the file.
  : > "$WORK/fleet.out"
  "$FLEET" $((DURATION + 3)) "$WORK" > "$WORK/fleet.out" & FLEET_PID=$!; PIDS+=("$FLEET_PID")
  for _ in $(seq 200); do [ -s "$WORK/fleet.out" ] && break; sleep 0.05; done
  FLEET_URL=$(head -1 "$WORK/fleet.out")
  [ -n "$FLEET_URL" ] || { echo "the callback server printed no URL" >&2; exit 1; }
}

lua() {
  cat > "$WORK/post.lua" <<LUA
local f = io.open("$WORK/body", "rb"); local body = f:read("*a"); f:close()
local g = io.open("$WORK/signature", "rb"); local sig = g:read("*a"); g:close()
wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Link"] = '<http://127.0.0.1:1/hub>; rel="hub", <t>; rel="self"'
wrk.headers["X-Hub-Signature"] = sig
LUA
}

if [ "${CALLGRIND:-0}" = 1 ]; then
  command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install -y valgrind" >&2; exit 2; }
  # Prints "<Ir> <received>" for wrk running $1 s against the fleet under callgrind.
  ir_run() {
    : > "$WORK/fleet.out"
    valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.$1" "$FLEET" $(($1 + 10)) "$WORK" \
      > "$WORK/fleet.out" 2> "$WORK/cg.log" & local pid=$!; PIDS+=("$pid")
    for _ in $(seq 600); do [ -s "$WORK/fleet.out" ] && break; sleep 0.05; done
    local url; url=$(head -1 "$WORK/fleet.out")
    [ -n "$url" ] || { cat "$WORK/cg.log" >&2; echo "the callback server printed no URL" >&2; exit 1; }
    lua
    wrk -t1 -c"$CONNS" -d"${1}s" -s "$WORK/post.lua" "$url" > /dev/null
    wait "$pid"
    echo "$(awk '/^summary:|^totals:/ { print $2; exit }' "$WORK/cg.$1") $(awk '/^received/ {print $2}' "$WORK/fleet.out")"
  }
  read -r IR1 N1 < <(ir_run 2)
  read -r IR2 N2 < <(ir_run $((2 + DURATION)))
  [ "$N2" -gt "$N1" ] || { echo "the longer run received no more deliveries ($N1, $N2)" >&2; exit 1; }
  echo "callgrind: Ir $IR1 for $N1 deliveries, $IR2 for $N2: $(( (IR2 - IR1) / (N2 - N1) )) Ir per delivery"
  exit 0
fi

printf "%-5s %-9s %10s %10s %12s %10s\n" round server req/s wrk-count server-count cpu/req-us
RATIOS=()
for r in $(seq "$ROUNDS"); do
  start_fleet
  lua
  C0=$(cpu_us "$FLEET_PID")
  OUT=$(wrk -t1 -c"$CONNS" -d"${DURATION}s" -s "$WORK/post.lua" "$FLEET_URL")
  C1=$(cpu_us "$FLEET_PID")
  wait "$FLEET_PID"
  SERVER=$(awk '/^received/ {print $2}' "$WORK/fleet.out")
  BAD=$(awk '/^received/ {print $8 + $10}' "$WORK/fleet.out")
  [ "$BAD" = 0 ] || { echo "the fleet counted bad signatures or unexpected deliveries: $(tail -1 "$WORK/fleet.out")" >&2; exit 1; }
  N=$(echo "$OUT" | count); FLEET_RPS=$(echo "$OUT" | rps)
  reconcile fleet "$SERVER" "$N"
  printf "%-5s %-9s %10s %10s %12s %10s\n" "$r" fleet "$FLEET_RPS" "$N" "$SERVER" "$(per $((C1 - C0)) "$SERVER")"

  B0=$(nginx_requests); C0=$(cpu_us "$NGINX_WORKER")
  OUT=$(wrk -t1 -c"$CONNS" -d"${DURATION}s" -s "$WORK/post.lua" "http://127.0.0.1:$NGINX_PORT/cb/0/0")
  C1=$(cpu_us "$NGINX_WORKER")
  SERVER=$(( $(nginx_requests) - B0 - 1 ))
  N=$(echo "$OUT" | count); NGINX_RPS=$(echo "$OUT" | rps)
  reconcile nginx "$SERVER" "$N"
  printf "%-5s %-9s %10s %10s %12s %10s\n" "$r" nginx "$NGINX_RPS" "$N" "$SERVER" "$(per $((C1 - C0)) "$SERVER")"
  RATIOS+=("$(awk -v a="$FLEET_RPS" -v b="$NGINX_RPS" 'BEGIN { printf "%.2f", a / b }')")
done
echo "fleet/nginx req/s per round: ${RATIOS[*]}"
echo "median: $(printf "%s\n" "${RATIOS[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}')x"
