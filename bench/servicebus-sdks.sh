#!/usr/bin/env bash
# hubload's Service Bus sends per second against the emulator, side by side with Microsoft's
# own SDKs (azure-servicebus for Python, @azure/service-bus for JS, unmodified), sequential
# and CONC concurrent, in one run on one emulator. For each: sends/s, the client's CPU per
# message (its user + system time over the send loop: /proc for hubload via its summary's
# generator.cpu_s, process.cpuUsage() in node, time.process_time() in Python), and the
# emulator's CPU per message and busy share (from /proc/<pid>/stat) to show it is not the
# bottleneck; last, the emulator's own ceiling under hubload at CEIL_CONC x 4 connections.
# Every run's sends are reconciled exactly with the emulator's /counts.
#
#   [TRANSPORT=amqp|websockets] bench/servicebus-sdks.sh [SECONDS=10] [CONC=20] [BODY_BYTES=600] [CEIL_CONC=200]
#
# TRANSPORT=websockets runs every client over AMQP over WebSockets on the emulator's TLS
# WebSocket port (a throw-away CA): the SDKs with their own WebSocket transport
# (TransportType.AmqpOverWebsocket, webSocketOptions), hubload with TransportType=AmqpWebSockets.
#
# Needs release builds of hubload and hubload-hub (built here if missing) and the SDKs that
# .ci/run installs into servicebus/tests/sdk (.venv and node_modules). Bounded: every load
# runs SECONDS; all traffic goes to 127.0.0.1.
set -euo pipefail
TRANSPORT=${TRANSPORT:-amqp}
case "$TRANSPORT" in amqp | websockets) ;; *) echo "TRANSPORT: amqp or websockets, not $TRANSPORT" >&2; exit 2 ;; esac
SECS=${1:-10}
CONC=${2:-20}
BODY=${3:-600}
CEIL_CONC=${4:-200}
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
REL="$CARGO_TARGET_DIR/release"
if [ ! -x "$REL/hubload" ] || [ ! -x "$REL/hubload-hub" ]; then
  cargo build -q --release -p hubload --bin hubload -p hubload-hub --bin hubload-hub
fi
SDK=servicebus/tests/sdk
[ -x "$SDK/.venv/bin/python" ] || { echo "missing $SDK/.venv: run .ci/run's Service Bus SDK block" >&2; exit 2; }
[ -d "$SDK/node_modules/@azure/service-bus" ] || { echo "missing $SDK/node_modules: npm ci in $SDK" >&2; exit 2; }
TICK=$(getconf CLK_TCK)

WORK=$(mktemp -d)
WS_ARGS=()
if [ "$TRANSPORT" = websockets ]; then
  command -v openssl >/dev/null || { echo "needs openssl (the WebSocket port's certificate)" >&2; exit 2; }
  . bench/throwaway-ca.sh
  throwaway_ca "$WORK"
  WS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  WS_ARGS=(--ws-listen "127.0.0.1:$WS_PORT" --tls-cert "$WORK/leaf.pem" --tls-key "$WORK/leaf.key")
fi
"$REL/hubload-hub" servicebus-emulator --listen 127.0.0.1:0 --counts-addr 127.0.0.1:0 \
  --log-every 0 "${WS_ARGS[@]}" >"$WORK/emu.out" 2>"$WORK/emu.err" &
EMU=$!
trap 'kill -INT $EMU 2>/dev/null || true; rm -rf "$WORK"' EXIT
CS="" COUNTS=""
for _ in $(seq 1 100); do
  CS=$(grep -m1 '^Endpoint=' "$WORK/emu.out" || true)
  COUNTS=$(sed -n 's/^counts at \(http:.*\)$/\1/p' "$WORK/emu.out")
  [ -n "$CS" ] && [ -n "$COUNTS" ] && break
  sleep 0.1
done
[ -n "$CS" ] && [ -n "$COUNTS" ] || { echo "emulator did not start" >&2; exit 2; }
# Over WebSockets every client is given the WebSocket port by name (the certificate's) and
# trusts the throw-away CA: the SDKs through their variables, hubload through --ca-cert.
HL_CS=$CS
HL_ARGS=()
if [ "$TRANSPORT" = websockets ]; then
  CS=$(echo "$CS" | sed -E "s#sb://[^/]*/#sb://localhost:$WS_PORT/#; s#;UseDevelopmentEmulator=true##")
  HL_CS="$CS;TransportType=AmqpWebSockets"
  HL_ARGS=(--ca-cert "$WORK/ca.pem")
  export SB_CA_FILE="$WORK/ca.pem" NODE_EXTRA_CA_CERTS="$WORK/ca.pem"
fi
# The WebSocket endpoint each SDK is given ("" for plain AMQP): Python's takes sb://, JS's https://.
ws_endpoint() { [ "$TRANSPORT" = websockets ] && echo "$1://localhost:$WS_PORT" || true; }

accepted() { curl -s "$COUNTS" | python3 -c 'import json,sys; print(json.load(sys.stdin)["accepted"])'; }
emu_ticks() { awk '{print $14 + $15}' "/proc/$EMU/stat"; }

# One row: client, concurrency, sends/s, client µs CPU per message, emulator µs CPU per
# message, emulator busy share of one core. Args: name conc sends seconds cpu_s ticks0 ticks1.
row() {
  python3 - "$@" "$TICK" <<'PY'
import sys
name, conc, sends, secs, cpu, t0, t1, tick = sys.argv[1:]
sends, secs, cpu = int(sends), float(secs), float(cpu)
emu_s = (int(t1) - int(t0)) / int(tick)
per = lambda s: f"{s / sends * 1e6:,.0f}" if sends else "-"
print(f"{name:<18} {conc:>5} {sends / secs:>10,.0f} {per(cpu):>14} {per(emu_s):>14} {emu_s / secs:>9.0%}")
PY
  python3 - "$@" "$TICK" >>"$WORK/rows" <<'PY'
import sys
name, conc, sends, secs, cpu, t0, t1, tick = sys.argv[1:]
print(f"{name}\t{conc}\t{int(sends) / float(secs)}\t{(int(t1) - int(t0)) / int(tick)}\t{sends}")
PY
}

# Run one SDK load; check the emulator counted exactly warmup + sends; print its row.
sdk() { # name conc command...
  local name=$1 conc=$2
  shift 2
  local a0 t0 out a1 t1 warm sends errors secs cpu
  a0=$(accepted)
  t0=$(emu_ticks)
  out=$("$@" "$CS" sdkbench "$conc" "$SECS" "$BODY")
  t1=$(emu_ticks)
  a1=$(accepted)
  read -r warm sends errors secs cpu < <(echo "$out" | python3 -c \
    'import json,sys; d=json.load(sys.stdin); print(d["warmup"], d["sends"], d["errors"], d["seconds"], d["cpu_s"])')
  [ "$errors" = 0 ] || echo "$name c=$conc: $errors failed sends" >&2
  [ $((a1 - a0)) = $((warm + sends)) ] ||
    { echo "MISMATCH $name c=$conc: emulator +$((a1 - a0)), client $warm + $sends" >&2; exit 1; }
  row "$name" "$conc" "$sends" "$secs" "$cpu" "$t0" "$t1"
}

# hubload: one process per concurrency, so its summary's one level is the load alone.
hub() { # name conc connections
  local name=$1 conc=$2 conns=$3
  local a0 t0 t1 a1 sends secs cpu
  a0=$(accepted)
  t0=$(emu_ticks)
  HUBLOAD_SB_CONNECTION_STRING="$HL_CS" "$REL/hubload" --target servicebus --sb-topics single:hlbench \
    "${HL_ARGS[@]}" --sb-connections "$conns" --concurrency "$conc" --duration "${SECS}s" --out "$WORK/hl-$conc-$conns" \
    --quiet >/dev/null 2>"$WORK/hl.err" || { cat "$WORK/hl.err" >&2; exit 1; }
  t1=$(emu_ticks)
  a1=$(accepted)
  read -r sends secs cpu < <(python3 -c '
import json,sys
l = json.load(open(sys.argv[1]))["levels"][0]
print(l["stats"]["counts"]["accepted"], l["span_s"], l["generator"]["cpu_s"])' "$WORK/hl-$conc-$conns/summary.json")
  [ $((a1 - a0)) = "$sends" ] ||
    { echo "MISMATCH $name c=$conc: emulator +$((a1 - a0)), hubload $sends" >&2; exit 1; }
  row "$name" "$conc" "$sends" "$secs" "$cpu" "$t0" "$t1"
}

PY="$SDK/.venv/bin/python bench/sdk/sends.py"
export NODE_PATH="$SDK/node_modules"
echo "$(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per load, ${BODY}-byte bodies, $TRANSPORT; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-18s %5s %10s %14s %14s %9s\n' client conc sends/s "client µs/msg" "emu µs/msg" "emu busy"
for c in 1 "$CONC"; do
  # shellcheck disable=SC2086
  SB_WEBSOCKET_ENDPOINT=$(ws_endpoint sb) sdk "python sdk" "$c" $PY
  SB_WEBSOCKET_ENDPOINT=$(ws_endpoint https) sdk "js sdk" "$c" node bench/sdk/sends.js
  hub "hubload 1 conn" "$c" 1
  hub "hubload 4 conns" "$c" 4
done
echo "emulator ceiling (hubload at $CEIL_CONC concurrent):"
hub "hubload 4 conns" "$CEIL_CONC" 4
python3 - "$CONC" "$WORK/rows" <<'PY'
import sys
conc = sys.argv[1]
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])]
rate = {(n, c): float(r) for n, c, r, _, _ in rows}
sdk = max(rate[("python sdk", conc)], rate[("js sdk", conc)])
for n in ("hubload 4 conns", "hubload 1 conn"):
    print(f"{n} / faster SDK at {conc} concurrent: {rate[(n, conc)] / sdk:.2f}x")
# The emulator's own limit: its CPU per message at its busiest, over the cores it may use.
busiest = max(rows, key=lambda r: float(r[2]))
per_msg = float(busiest[3]) / int(busiest[4])
print(f"emulator: {per_msg * 1e6:.1f} µs CPU per message at {float(busiest[2]):,.0f}/s, so "
      f"about {1 / per_msg:,.0f}/s per core it gets; every run above used less than one core of it")
PY
