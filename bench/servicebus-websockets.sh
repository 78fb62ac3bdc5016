#!/usr/bin/env bash
# The cost of AMQP over WebSockets against plain AMQP for hubload, in one run, side by side:
# the same closed load (CONCURRENCY publishers, CONNECTIONS pooled connections, DURATION)
# against one emulator over its plain AMQP port, over its WebSocket port (TLS from a throw-away
# CA), and over WebSockets through tinyproxy when it is installed. Per mode: sends per second,
# p50/p99, CPU per send of hubload and of the emulator, and the ratios to plain AMQP in the
# same round (the modes alternate ROUNDS times, so a change in the load falls on each).
# Each mode's accepted count is checked against the emulator's own, and the proxy's CONNECT
# lines against the connections hubload opened. Both processes share this machine's cores.
#
#   BUILD=release|debug CONCURRENCY=20 CONNECTIONS=4 DURATION=10s ROUNDS=2 bench/servicebus-websockets.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-release}
CONCURRENCY=${CONCURRENCY:-20}
CONNECTIONS=${CONNECTIONS:-4}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-2}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
if [ "$BUILD" = release ]; then
  cargo build -q --release --workspace --bins
else
  cargo build -q --workspace --bins
fi
HUB="$CARGO_TARGET_DIR/$BUILD/hubload-hub"
HUBLOAD="$CARGO_TARGET_DIR/$BUILD/hubload"
command -v openssl >/dev/null || { echo "needs openssl (the WebSocket port's certificate)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian's time package)" >&2; exit 2; }
WORK=$(mktemp -d)
EMU=""
PROXY=""
cleanup() {
  [ -n "$EMU" ] && kill -INT "$EMU" 2>/dev/null || true
  [ -n "$PROXY" ] && kill "$PROXY" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# A throw-away CA and a leaf for localhost.
. bench/throwaway-ca.sh
throwaway_ca "$WORK"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
WS_PORT=$(free_port)
"$HUB" servicebus-emulator --listen 127.0.0.1:0 --counts-addr 127.0.0.1:0 --log-every 0 \
  --ws-listen "127.0.0.1:$WS_PORT" --tls-cert "$WORK/leaf.pem" --tls-key "$WORK/leaf.key" \
  >"$WORK/emu.out" 2>"$WORK/emu.err" &
EMU=$!
for _ in $(seq 1 1000); do
  grep -q '^counts at ' "$WORK/emu.out" && break
  kill -0 "$EMU" 2>/dev/null || { cat "$WORK/emu.err" >&2; exit 1; }
  sleep 0.01
done
CS=$(grep -m1 '^Endpoint=' "$WORK/emu.out")
COUNTS=$(sed -n 's/^counts at //p' "$WORK/emu.out")
[ -n "$CS" ] && [ -n "$COUNTS" ] || { echo "the emulator never became ready" >&2; exit 1; }
# The same key on the WebSocket port, by name (the certificate's), with TLS.
WS_CS=$(echo "$CS" | sed -E "s#sb://[^/]*/#sb://localhost:$WS_PORT/#; s#;UseDevelopmentEmulator=true##")
WS_CS="$WS_CS;TransportType=AmqpWebSockets"

emu_accepted() { curl -sf --max-time 10 "$COUNTS" | python3 -c 'import json,sys; print(json.load(sys.stdin)["accepted"])'; }
emu_ticks() { awk '{print $14 + $15}' "/proc/$EMU/stat"; }
TICK=$(getconf CLK_TCK)

# run MODE PROXY|- ARGS...: one closed level, no warm-up; appends "mode sends/s p50 p99 accepted
# emulator-accepted hubload-CPU-µs emulator-CPU-µs" (hubload's CPU includes its set-up).
run() {
  local mode=$1 proxy=$2
  shift 2
  local t0 acc_before
  local env=(env -u https_proxy -u HTTPS_PROXY -u all_proxy -u ALL_PROXY -u no_proxy -u NO_PROXY)
  [ "$proxy" = - ] || env+=("HTTPS_PROXY=$proxy")
  acc_before=$(emu_accepted)
  t0=$(emu_ticks)
  "${env[@]}" /usr/bin/time -f '%U %S' -o "$WORK/$mode.time" \
    "$HUBLOAD" --target servicebus --sb-connections "$CONNECTIONS" --concurrency "$CONCURRENCY" \
    --duration "$DURATION" --warmup 0s --tenants 1 --channels login --timeout 10s --quiet \
    --out "$WORK/$mode" "$@" >"$WORK/$mode.log" 2>&1 || { cat "$WORK/$mode.log" >&2; exit 1; }
  local ticks=$(($(emu_ticks) - t0))
  local emu_acc=$(($(emu_accepted) - acc_before))
  python3 - "$WORK/$mode/summary.json" "$WORK/$mode.time" "$mode" "$emu_acc" "$ticks" "$TICK" \
    >>"$WORK/rows" <<'PY'
import json, sys
summary, timef, mode, emu_acc, ticks, tick = sys.argv[1:]
s = json.load(open(summary))
l = s["levels"][0]
acc = l["stats"]["counts"].get("accepted", 0)
u, sy = (float(x) for x in open(timef).read().split()[-2:])
cpu_us = (u + sy) * 1e6
lat = l["latency_us"]
print(mode, f'{l["throughput"]:.0f}', f'{lat["p50"] / 1000:.2f}', f'{lat["p99"] / 1000:.2f}', acc, emu_acc,
      f"{cpu_us:.0f}", f"{int(ticks) / int(tick) * 1e6:.0f}")
PY
}

P_PORT=""
if command -v tinyproxy >/dev/null; then
  P_PORT=$(free_port)
  printf 'Port %s\nListen 127.0.0.1\nTimeout 30\nMaxClients 100\nLogLevel Connect\nLogFile "%s"\n' \
    "$P_PORT" "$WORK/tinyproxy.log" >"$WORK/tinyproxy.conf"
  tinyproxy -d -c "$WORK/tinyproxy.conf" >/dev/null 2>&1 &
  PROXY=$!
  for _ in $(seq 1 500); do
    (exec 3<>"/dev/tcp/127.0.0.1/$P_PORT") 2>/dev/null && break
    sleep 0.01
  done
else
  echo "(tinyproxy is not installed: no proxy rows)"
fi
# The modes alternate, ROUNDS times, so a change in the machine's load falls on all of them.
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round: plain AMQP (127.0.0.1, no TLS)"
  run amqp - --sb-connection-string "$CS"
  echo "== round $round: AMQP over WebSockets (TLS, localhost:$WS_PORT)"
  run websockets - --sb-connection-string "$WS_CS" --ca-cert "$WORK/ca.pem"
  if [ -n "$P_PORT" ]; then
    echo "== round $round: AMQP over WebSockets through tinyproxy (HTTPS_PROXY)"
    run proxy "http://127.0.0.1:$P_PORT" --sb-connection-string "$WS_CS" --ca-cert "$WORK/ca.pem"
  fi
done
if [ -n "$P_PORT" ]; then
  TUNNELS=$(grep -c ": CONNECT localhost:$WS_PORT HTTP/1.1" "$WORK/tinyproxy.log" || true)
  echo "tunnels in tinyproxy's log: $TUNNELS; hubload's connections: $CONNECTIONS per proxy run, $ROUNDS runs"
  [ "$TUNNELS" = $((CONNECTIONS * ROUNDS)) ] || { echo "MISMATCH between the proxy's tunnels and hubload's connections" >&2; exit 1; }
fi

echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $BUILD build; $CONCURRENCY publishers, $CONNECTIONS connections, $DURATION"
python3 - "$WORK/rows" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
base = rows[0]
# Ratios are to the plain AMQP run of the same round.
print("| mode | sends/s | p50 ms | p99 ms | hubload CPU per send | emulator CPU per send | sends/s ratio | hubload CPU ratio |")
print("|---|---|---|---|---|---|---|---|")
bad = False
for mode, tput, p50, p99, acc, emu_acc, cpu, emu_cpu in rows:
    # No warm-up: what the emulator accepted in the window is the level's, exactly.
    if acc != emu_acc:
        print(f"MISMATCH {mode}: hubload counted {acc} accepted, the emulator {emu_acc}", file=sys.stderr)
        bad = True
    total = int(emu_acc)
    per = lambda us: f"{float(us) / total:.1f} µs"
    if mode == "amqp":
        base = (mode, tput, p50, p99, acc, emu_acc, cpu, emu_cpu)
    print(f"| {mode} | {tput} | {p50} | {p99} | {per(cpu)} | {per(emu_cpu)} | "
          f"{float(tput) / float(base[1]):.2f} | "
          f"{(float(cpu) / total) / (float(base[6]) / int(base[5])):.2f} |")
sys.exit(1 if bad else 0)
PY
