#!/usr/bin/env bash
# Side by side on one embedded hub (broker mode) and one embedded emulator: the hub's accepted
# median beside the Service Bus path's, per level. The hub's publish is a client → hub → broker
# chain, so its median is expected above the broker's; this measures by how much. Bounded:
# REQUESTS sends per level and per path (default 600), levels 1, 8 and 32.
#
#   bench/hub-vs-broker.sh [REQUESTS=600]
set -euo pipefail
REQUESTS=${1:-600}
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build -q --release --bin hubload
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$CARGO_TARGET_DIR/release/hubload" --hub-servicebus --target websub,servicebus \
  --tenants 2 --sps 2 --users 3 --concurrency 1,8,32 --requests "$REQUESTS" \
  --out "$OUT" >/dev/null
python3 - "$OUT" <<'PY'
import json, sys
d = sys.argv[1]
hub = json.load(open(f"{d}/websub/summary.json"))["levels"]
sb = json.load(open(f"{d}/servicebus/summary.json"))["levels"]
print("level  hub p50 µs  broker p50 µs  hub/broker")
for h, b in zip(hub, sb):
    hp, bp = h["accepted_latency_us"]["p50"], b["accepted_latency_us"]["p50"]
    print(f"{h['label']:>5}  {hp:>10}  {bp:>13}  {hp / max(bp, 1):>10.2f}")
PY
