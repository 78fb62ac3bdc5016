#!/usr/bin/env bash
# The emulator's figures for docs/servicebus-emulator.md ("Beside Microsoft's emulator"): time
# to ready, memory idle and per entity with ENTITIES topics (each with one subscription)
# declared from a Config.json, and CONNS AMQP connections at once from hubload, each count
# checked against the emulator's own. Every step is bounded (timeouts below).
#
#   BUILD=release|debug ENTITIES=10000 CONNS=1000 bench/emulator.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-release}
ENTITIES=${ENTITIES:-10000}
CONNS=${CONNS:-1000}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
if [ "$BUILD" = release ]; then
  cargo build -q --release --workspace --bins
else
  cargo build -q --workspace --bins
fi
HUB="$CARGO_TARGET_DIR/$BUILD/hubload-hub"
HUBLOAD="$CARGO_TARGET_DIR/$BUILD/hubload"
WORK=$(mktemp -d)
EMU=""
cleanup() {
  [ -n "$EMU" ] && kill -INT "$EMU" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

now_ms() { date +%s%3N; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# start NAME ARGS...: starts the emulator, sets EMU, READY_MS (spawn to connection string,
# which it prints once it listens) and CS, COUNTS (its counts URL).
start() {
  local name=$1
  shift
  local out="$WORK/$name.out"
  local t0
  t0=$(now_ms)
  "$HUB" servicebus-emulator --listen 127.0.0.1:0 --counts-addr 127.0.0.1:0 --log-every 0 "$@" \
    >"$out" 2>"$WORK/$name.err" &
  EMU=$!
  for _ in $(seq 1 6000); do
    grep -q '^counts at ' "$out" && break
    kill -0 "$EMU" 2>/dev/null || { cat "$WORK/$name.err" >&2; exit 1; }
    sleep 0.005
  done
  READY_MS=$(($(now_ms) - t0))
  CS=$(grep -m1 '^Endpoint=' "$out")
  COUNTS=$(sed -n 's/^counts at //p' "$out")
  [ -n "$CS" ] && [ -n "$COUNTS" ] || { echo "$name: the emulator never became ready" >&2; exit 1; }
}
stop() {
  kill -INT "$EMU"
  wait "$EMU" 2>/dev/null || true
  EMU=""
}
counts() { curl -sf --max-time 10 "$COUNTS"; }

echo "== empty namespace"
start empty
sleep 1
IDLE_KB=$(rss_kb "$EMU")
echo "ready in ${READY_MS} ms; RSS idle ${IDLE_KB} kB"
EMPTY_READY=$READY_MS
stop

echo "== $ENTITIES topics, each with one subscription, declared in a Config.json (--strict)"
python3 - "$ENTITIES" >"$WORK/Config.json" <<'EOF'
import json, sys
n = int(sys.argv[1])
topics = [{"Name": f"topic{i:06d}", "Properties": {},
           "Subscriptions": [{"Name": "sub", "Properties": {}}]} for i in range(n)]
print(json.dumps({"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [],
                                                  "Topics": topics}],
                                 "Logging": {"Type": "Console"}}}))
EOF
start entities --config "$WORK/Config.json" --strict
sleep 1
FULL_KB=$(rss_kb "$EMU")
DECLARED=$(counts | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["entities"]))')
echo "ready in ${READY_MS} ms; RSS ${FULL_KB} kB; subscriptions the emulator counts: $DECLARED"
[ "$DECLARED" = "$ENTITIES" ] || { echo "MISMATCH: $DECLARED subscriptions, not $ENTITIES" >&2; exit 1; }
PER_ENTITY=$(( (FULL_KB - IDLE_KB) * 1024 / (2 * ENTITIES) ))
echo "per entity (a topic or a subscription): $PER_ENTITY bytes"
ENT_READY=$READY_MS
stop

echo "== $CONNS AMQP connections at once (hubload --sb-connections $CONNS --concurrency $CONNS)"
start conns
PEAK_FDS=0
PEAK_KB=0
"$HUBLOAD" --target servicebus --sb-connection-string "$CS" --sb-connections "$CONNS" \
  --concurrency "$CONNS" --tenants 1 --channels login --duration 5s --timeout 30s --quiet \
  --out "$WORK/run" >"$WORK/run.log" 2>&1 &
LOAD=$!
while kill -0 "$LOAD" 2>/dev/null; do
  f=$(fds "$EMU"); [ "$f" -gt "$PEAK_FDS" ] && PEAK_FDS=$f
  k=$(rss_kb "$EMU"); [ "$k" -gt "$PEAK_KB" ] && PEAK_KB=$k
  sleep 0.2
done
wait "$LOAD" || { cat "$WORK/run.log" >&2; exit 1; }
read -r CONNECTED OVER ACCEPTED < <(counts | python3 -c \
  'import json,sys; c=json.load(sys.stdin); print(c["connections"], c["over_limit"], c["accepted"])')
SENT=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(sum(l["stats"]["counts"].get("accepted",0) for l in s["levels"]))' "$WORK/run/summary.json")
echo "connections accepted: $CONNECTED (over the limit: $OVER); open file descriptors at the peak: $PEAK_FDS; peak RSS ${PEAK_KB} kB"
echo "messages: hubload counted $SENT accepted, the emulator $ACCEPTED"
[ "$SENT" = "$ACCEPTED" ] || { echo "MISMATCH between hubload and the emulator" >&2; exit 1; }
[ "$CONNECTED" -ge "$CONNS" ] && [ "$OVER" = 0 ] || { echo "fewer than $CONNS connections" >&2; exit 1; }
stop

echo
echo "| figure | value |"
echo "|---|---|"
echo "| ready, empty namespace | $EMPTY_READY ms |"
echo "| ready, $ENTITIES topics + $ENTITIES subscriptions | $ENT_READY ms |"
echo "| RSS idle | $((IDLE_KB / 1024)) MB |"
echo "| RSS per entity | $PER_ENTITY B |"
echo "| connections at once | $CONNECTED accepted, 0 refused, $PEAK_FDS descriptors at the peak |"
echo "| RSS with $CONNS connections | $((PEAK_KB / 1024)) MB |"
