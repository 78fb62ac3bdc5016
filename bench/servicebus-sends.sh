#!/usr/bin/env bash
# Sends per second of the Service Bus sender against the local emulator, with 1 and N pooled
# connections. Bounded: each load runs DURATION (default 5s). Both processes share this
# machine's cores, so the figures are a floor for the client, not a broker benchmark.
#
#   bench/servicebus-sends.sh [N=4] [DURATION=5s] [CONCURRENCY=64]
set -euo pipefail
N=${1:-4}
DURATION=${2:-5s}
CONCURRENCY=${3:-64}
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build -q --release -p hubload-servicebus --example sends
BIN="$CARGO_TARGET_DIR/release/examples/sends"

OUT=$(mktemp)
"$BIN" serve --listen 127.0.0.1:0 --log-every 0 >"$OUT" &
EMU=$!
trap 'kill -INT $EMU 2>/dev/null || true; rm -f "$OUT"' EXIT
CS=""
for _ in $(seq 1 50); do
  CS=$(grep -m1 '^Endpoint=' "$OUT" || true)
  [ -n "$CS" ] && break
  sleep 0.1
done
[ -n "$CS" ] || { echo "emulator did not start" >&2; exit 2; }

total=0
for c in 1 "$N"; do
  line=$(HUBLOAD_SB_CONNECTION_STRING="$CS" "$BIN" load --connections "$c" \
           --concurrency "$CONCURRENCY" --duration "$DURATION")
  echo "$line"
  acc=$(echo "$line" | sed -n 's/.*"accepted":\([0-9]*\).*/\1/p')
  total=$((total + ${acc:-0}))
done

kill -INT $EMU
wait $EMU || true
emu_acc=$(sed -n 's/^  "accepted": \([0-9]*\),$/\1/p' "$OUT")
echo "client accepted total: $total; emulator accepted: ${emu_acc:-?}"
[ "$total" = "${emu_acc:-x}" ] || { echo "MISMATCH between client and emulator counts" >&2; exit 1; }
