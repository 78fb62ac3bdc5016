#!/usr/bin/env bash
# Publish and delivery throughput of the broker-backed reference hub (hubload-hub --servicebus,
# release) on the local Service Bus emulator, with 0, 1 and 10 subscribers on one topic, as
# bench/hub-subscribers.sh does for the in-memory hub. wrk (1 thread, C connections) POSTs the
# 543-byte login event to ?hub.mode=publish; each publish is one send the hub answers once the
# emulator settled it. Each subscriber is a Service Bus subscription whose peek-lock receive
# loop POSTs to a callback path on a one-worker nginx (a server we did not write) answering 204.
# Every case has a fresh emulator and hub. Then the broker's own ceiling: the emulator alone,
# the servicebus crate's `sends load` at the same concurrency over the hub's 2 connections.
# Everything stays on 127.0.0.1. Usage: bench/hub-broker-subscribers.sh [duration, e.g. 10s] [connections]
# NO_BUILD=1 uses the release binaries already built.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10s}
CONNS=${2:-50}
SUBS_LIST=${SUBS_LIST:-"0 1 10"}
# The longest wait for the hub to deliver the backlog after wrk stops.
DRAIN_S=${DRAIN_S:-120}
TOPIC="acme.0d5e7f.schema.WSO2.v1.event.login"
SECS=${DURATION%s}
[[ "$SECS" =~ ^[0-9]+$ ]] || { echo "duration: expected whole seconds such as 5s, got $DURATION" >&2; exit 2; }
for tool in wrk nginx curl python3; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: apt-get install -y $tool" >&2; exit 2; }
done
source bench/nginx.sh
if [ "${NO_BUILD:-0}" = 1 ]; then
  # Binaries already built (by bench_setup's command and the `sends` example's): no rebuild.
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
  BIN="$CARGO_TARGET_DIR/release"; TCK=$(getconf CLK_TCK); WORK=$(mktemp -d); PIDS=()
  trap bench_cleanup EXIT
else
  bench_setup
  cargo build --release -q -p hubload-servicebus --example sends
fi
SENDS="$BIN/examples/sends"
login_event >"$WORK/event.json"
wrk_post_lua "$WORK/event.json" >"$WORK/post.lua"

HUB_PORT=$(free_port)
SINK_PORT=$(free_port)
HUB="http://127.0.0.1:$HUB_PORT"
# The subscribers' callbacks: 204 to deliveries, the challenge echoed to verifications.
nginx_start "$WORK/nginx" 3072 "map \$args \$challenge { \"~(^|&)hub\\.challenge=(?<c>[^&]*)\" \$c; default \"\"; }
  server {
    listen 127.0.0.1:$SINK_PORT;
    location = /nginx_status { stub_status; }
    location / {
      if (\$challenge) { return 200 \$challenge; }
      return 204;
    }
  }"; PIDS+=("$NGINX_PID")
nginx_requests() { nginx_served "$SINK_PORT"; }
wait_http() { for _ in $(seq 100); do curl -fs "$1" >/dev/null 2>&1 && return 0; sleep 0.05; done; echo "no answer from $1" >&2; exit 2; }
# A Python expression over the hub's /stats (s; its broker section b).
stat() { curl -fs "$HUB/stats" | python3 -c "import json,sys; s=json.load(sys.stdin); b=s['broker']; print($1)"; }

# A fresh emulator (EMU_PID, CS) on a free port.
start_emulator() {
  "$SENDS" serve --listen 127.0.0.1:0 --log-every 0 >"$WORK/emu.out" 2>"$WORK/emu.err" & EMU_PID=$!
  PIDS+=("$EMU_PID")
  CS=""
  for _ in $(seq 100); do
    CS=$(grep -m1 '^Endpoint=' "$WORK/emu.out" || true)
    [ -n "$CS" ] && break
    sleep 0.05
  done
  [ -n "$CS" ] || { echo "the emulator did not start" >&2; cat "$WORK/emu.err" >&2; exit 2; }
}
# Stop the emulator; EMU_ACC: the sends it accepted (its own count, printed at exit).
stop_emulator() {
  kill -INT "$EMU_PID"; wait "$EMU_PID" || true
  EMU_ACC=$(sed -n 's/^  "accepted": \([0-9]*\),$/\1/p' "$WORK/emu.out")
}

# A hub in broker mode on a fresh emulator with $1 nginx subscribers on TOPIC, their receive
# loops running; sets HUB_PID and NGINX_BEFORE.
start_hub() {
  start_emulator
  HUBLOAD_HUB_SERVICEBUS="$CS" RUST_LOG=warn "$BIN/hubload-hub" --listen "127.0.0.1:$HUB_PORT" & HUB_PID=$!
  PIDS+=("$HUB_PID")
  wait_http "$HUB/stats"
  curl -fs -X POST -H 'content-type: application/json' "$HUB/hub?hub.mode=register&hub.topic=$TOPIC" >/dev/null
  for i in $(seq "$1"); do
    curl -fs -X POST "$HUB/hub" -d "hub.mode=subscribe&hub.topic=$TOPIC&hub.callback=http://127.0.0.1:$SINK_PORT/cb$i" >/dev/null
  done
  for _ in $(seq 200); do [ "$(stat "b['subscriptions']")" = "$1" ] && break; sleep 0.05; done
  [ "$(stat "b['subscriptions']")" = "$1" ] || { echo "only some of $1 receive loops started" >&2; exit 1; }
  NGINX_BEFORE=$(nginx_requests)
}

# After the load: wait (DRAIN_S at most) until every send the hub counted was settled once per
# subscriber (completed or dead-lettered), every message received was settled, and the
# completions stopped moving for a second, then read the counts, check nginx's count against
# the hub's receives and the hub's accepted sends against the emulator's own count (a send
# whose publisher wrk gave up on at its end is counted too: it runs on a task of its own),
# stop hub and emulator. Sets ACC SENT COMP DL ABAN RECV SEEN DRAIN.
finish_hub() {
  local t0=$SECONDS last=-1 now
  for _ in $(seq $((DRAIN_S * 10))); do
    if [ "$(stat "b['receives'] == b['completes'] + b['dead_letters'] + b['abandons'] and b['completes'] + b['dead_letters'] >= b['sends']['accepted'] * $1")" = True ]; then
      now=$(stat "b['completes'] + b['dead_letters']")
      [ "$now" = "$last" ] && break
      last=$now
      sleep 1
    else
      sleep 0.1
    fi
  done
  DRAIN=$((SECONDS - t0))
  read -r ACC SENT COMP DL ABAN RECV < <(stat "s['publish']['accepted'], b['sends']['accepted'], b['completes'], b['dead_letters'], b['abandons'], b['receives']" | tr -d "(),")
  SEEN=$(( $(nginx_requests) - NGINX_BEFORE - 1 ))
  HUB_CPU=$(( $(cpu_us "$HUB_PID") - CPU0 )); EMU_CPU=$(( $(cpu_us "$EMU_PID") - ECPU0 ))
  kill -INT "$HUB_PID"; wait "$HUB_PID" || true
  stop_emulator
  [ "$SEEN" = "$RECV" ] || { echo "nginx saw $SEEN delivery POSTs but the hub counted $RECV receives" >&2; exit 1; }
  [ "$SENT" = "$EMU_ACC" ] || { echo "the hub counted $SENT accepted sends but the emulator $EMU_ACC" >&2; exit 1; }
}

# publish/s: wrk's rate. delivered/s: deliveries completed while wrk ran, per second.
# accepted: the hub's publishes answered 200; sent: its sends the emulator settled accepted
# (accepted plus those of publishes wrk gave up on at its end: each still a message to
# deliver); emu-acc: the sends the emulator itself accepted (equal to sent).
# delivered: completed after the drain (drain-s: how long that took past wrk's end);
# lost: emu-acc × subscribers − delivered (dead-lettered or never delivered).
# ratio: delivered/s over the publish-only case's publish/s. hub-µs, emu-µs: CPU time of the
# hub and of the emulator from wrk's start to the drain's end, per send (its deliveries
# included); load:
# the machine's 1-minute load average before and after wrk.
printf "%-5s %10s %10s %8s %8s %11s %10s %6s %6s %6s %8s %6s %6s %6s %s\n" subs publish/s accepted sent emu-acc delivered/s delivered lost abandon drain-s nginx-seen ratio hub-µs emu-µs load
PUBLISH_ONLY=""
for SUBS in $SUBS_LIST; do
  start_hub "$SUBS"
  CPU0=$(cpu_us "$HUB_PID"); ECPU0=$(cpu_us "$EMU_PID"); LOAD0=$(cut -d' ' -f1 /proc/loadavg)
  OUT=$(wrk -t1 -c"$CONNS" -d"$DURATION" -s "$WORK/post.lua" "$HUB/hub?hub.mode=publish&hub.topic=$TOPIC")
  LOAD1=$(cut -d' ' -f1 /proc/loadavg)
  DEL_AT_END=$(stat "b['completes']")
  RPS=$(echo "$OUT" | awk '/Requests\/sec/ {print $2}')
  [ "$SUBS" = 0 ] && PUBLISH_ONLY=$RPS
  finish_hub "$SUBS"
  LOST=$((EMU_ACC * SUBS - COMP))
  RATIO=$(awk -v d="$((DEL_AT_END / SECS))" -v p="$PUBLISH_ONLY" 'BEGIN { if (p > 0) printf "%.2f", d / p; else printf "-" }')
  [ "$SUBS" = 0 ] && RATIO=-
  printf "%-5s %10s %10s %8s %8s %11s %10s %6s %6s %6s %8s %6s %6s %6s %s\n" "$SUBS" "$RPS" "$ACC" "$SENT" "$EMU_ACC" "$((DEL_AT_END / SECS))" "$COMP" "$LOST" "$ABAN" "$DRAIN" "$SEEN" "$RATIO" "$((HUB_CPU / (SENT > 0 ? SENT : 1)))" "$((EMU_CPU / (SENT > 0 ? SENT : 1)))" "$LOAD0-$LOAD1"
done

# The broker's ceiling: the emulator alone, sends over the hub's 2 connections at the same
# concurrency, the same body size; its count checked against the emulator's own.
start_emulator
LINE=$(HUBLOAD_SB_CONNECTION_STRING="$CS" "$SENDS" load --connections 2 --concurrency "$CONNS" --duration "$DURATION" --topics 1 --body-size "$(wc -c <"$WORK/event.json")")
stop_emulator
echo
echo "emulator alone (sends load, 2 connections, concurrency $CONNS): $LINE"
LOAD_ACC=$(echo "$LINE" | sed -n 's/.*"accepted":\([0-9]*\).*/\1/p')
[ "${LOAD_ACC:-x}" = "$EMU_ACC" ] || { echo "sends load counted ${LOAD_ACC:-?} accepted, the emulator $EMU_ACC" >&2; exit 1; }
