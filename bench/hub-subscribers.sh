#!/usr/bin/env bash
# Publish throughput of the reference hub (release build) with 0, 1 and 10 subscribers.
# wrk (1 thread, 50 connections, 10 s per case) POSTs a ~550-byte identity event to
# ?hub.mode=publish; a tiny local subscriber (hub/examples/sink.rs) takes the deliveries.
# Everything stays on 127.0.0.1. Usage: bench/hub-subscribers.sh [duration] [connections]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10s}
CONNS=${2:-50}
HUB_PORT=${HUB_PORT:-39100}
SINK_PORT=${SINK_PORT:-39101}
TOPIC="acme.0d5e7f.schema.WSO2.v1.event.login"
HUB="http://127.0.0.1:$HUB_PORT"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 2; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p hubload-hub --bin hubload-hub --example sink
BIN="$CARGO_TARGET_DIR/release"
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

cat > "$WORK/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["activityid"] = "3f0e2c1a-8d4b-4f7e-9a61-2b5c7d9e0f11"
wrk.body = '{"iss":"https://api.asgardeo.io/t/acme","jti":"6f1c2e0a-93b7-4c55-8d1e-0b9f7a3c2d41","iat":1764480000000,"events":{"https://schemas.identity.wso2.org/events/login/event-type/loginSuccess":{"user":{"id":"5b2d8f1e-7c3a-4e9b-a0d6-1f4e8c2b7a93","ref":"https://api.asgardeo.io/t/acme/scim2/Users/5b2d8f1e-7c3a-4e9b-a0d6-1f4e8c2b7a93"},"tenant":{"id":"12402","name":"acme"},"userStore":{"id":"UFJJTUFSWQ==","name":"PRIMARY"},"application":{"id":"9e3f6a2b-1c4d-4b8e-8f7a-6d5c4b3a2e1f","name":"console"},"authenticationMethods":["BasicAuthenticator"]}}}'
LUA

"$BIN/examples/sink" "127.0.0.1:$SINK_PORT" & PIDS+=($!)

wait_http() { for _ in $(seq 100); do curl -fs "$1" >/dev/null 2>&1 && return 0; sleep 0.05; done; echo "no answer from $1" >&2; exit 2; }
stat() { curl -fs "$HUB/stats" | python3 -c "import json,sys; s=json.load(sys.stdin); print($1)"; }

# wrk-done: responses wrk counted; accepted: the hub's own count (it also counts the requests still
# in flight when wrk stopped, at most one per connection).
printf "%-12s %12s %10s %10s %10s %10s %10s %8s\n" subscribers "publish/s" wrk-done accepted delivered dropped pending errors
for SUBS in 0 1 10; do
  RUST_LOG=warn "$BIN/hubload-hub" --listen "127.0.0.1:$HUB_PORT" & HUB_PID=$!
  wait_http "$HUB/stats"
  curl -fs -X POST -H 'content-type: application/json' "$HUB/hub?hub.mode=register&hub.topic=$TOPIC" >/dev/null
  for i in $(seq "$SUBS"); do
    curl -fs -X POST "$HUB/hub" -d "hub.mode=subscribe&hub.topic=$TOPIC&hub.callback=http://127.0.0.1:$SINK_PORT/cb$i" >/dev/null
  done
  for _ in $(seq 100); do
    [ "$(stat "s['topics']['$TOPIC']['subscribers']")" = "$SUBS" ] && break; sleep 0.05
  done
  OUT=$(wrk -t1 -c"$CONNS" -d"$DURATION" -s "$WORK/post.lua" "$HUB/hub?hub.mode=publish&hub.topic=$TOPIC")
  RPS=$(echo "$OUT" | awk '/Requests\/sec/ {print $2}')
  DONE=$(echo "$OUT" | awk '/requests in/ {print $1}')
  ERRS=$(echo "$OUT" | awk '/Non-2xx|Socket errors/ {n++} END {print n+0}')
  sleep 1
  read -r ACC DEL DROP PEND < <(stat "s['publish']['accepted'], s['distribution']['delivered'], s['distribution']['dropped'], s['distribution']['pending']" | tr -d '(),')
  printf "%-12s %12s %10s %10s %10s %10s %10s %8s\n" "$SUBS" "$RPS" "$DONE" "$ACC" "$DEL" "$DROP" "$PEND" "$ERRS"
  kill -INT "$HUB_PID"; wait "$HUB_PID" || true
done
