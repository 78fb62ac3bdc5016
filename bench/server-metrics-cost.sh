#!/usr/bin/env bash
# What scraping the server costs hubload: the same open-model run against the reference hub
# with and without --server-metrics (the hub's /metrics every INTERVAL, plus the level edges),
# alternated ROUNDS times. Prints, per round and variant, hubload's CPU seconds (user + sys,
# measured from outside by /usr/bin/time), the achieved rate and p50/p99 from summary.json,
# the scrapes taken, and the ratio of CPU with scraping to CPU without.
#
# Usage: bench/server-metrics-cost.sh [hubload binary] [hubload-hub binary]
#        (default target/release/…; any profile works, the ratio is what counts)
# Knobs: RATE=2000 DURATION=10 INTERVAL=100ms ROUNDS=3
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/target/release/hubload}
HUB=${2:-$ROOT/target/release/hubload-hub}
RATE=${RATE:-2000}
DURATION=${DURATION:-10}
INTERVAL=${INTERVAL:-100ms}
ROUNDS=${ROUNDS:-3}
WORK=$(mktemp -d)
HUB_PID=""
cleanup() {
    [[ -n $HUB_PID ]] && kill "$HUB_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$HUB" --listen "127.0.0.1:$PORT" >"$WORK/hub.log" 2>&1 &
HUB_PID=$!
for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$PORT/stats" >/dev/null 2>&1 && break
    sleep 0.1
done

run() { # variant, round
    local out="$WORK/$1-$2" extra=()
    if [[ $1 == scrape ]]; then
        extra=(--server-metrics "http://127.0.0.1:$PORT/metrics" --server-metrics-interval "$INTERVAL")
    fi
    /usr/bin/time -f "%U %S" -o "$out.time" "$BIN" --quiet --hub-url "http://127.0.0.1:$PORT/hub" \
        --tenants 10 --rate "$RATE" --duration "${DURATION}s" --out "$out" "${extra[@]}" >/dev/null 2>&1
    python3 - "$out" "$1" "$2" <<'PY'
import json, sys
out, variant, rnd = sys.argv[1:4]
u, s = map(float, open(out + ".time").read().split()[-2:])
r = json.load(open(out + "/summary.json"))
l = r["levels"][0]
scrapes = sum(x["scrapes"] for x in (l.get("server") or {}).get("sources", []))
print(f"{rnd} {variant:8} cpu {u + s:6.2f} s  rate {l['throughput']:8.1f}/s  "
      f"p50 {l['latency_us']['p50']:6d} us  p99 {l['latency_us']['p99']:6d} us  scrapes {scrapes}")
open(out + ".cpu", "w").write(str(u + s))
PY
}

echo "rate ${RATE}/s, ${DURATION}s, scrape interval $INTERVAL, $(nproc) cores, $ROUNDS round(s)"
for r in $(seq "$ROUNDS"); do
    run plain "$r"
    run scrape "$r"
done
python3 - "$WORK" "$ROUNDS" <<'PY'
import statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
cpu = lambda v: [float(open(f"{work}/{v}-{r}.cpu").read()) for r in range(1, rounds + 1)]
p, s = statistics.median(cpu("plain")), statistics.median(cpu("scrape"))
print(f"median CPU: plain {p:.2f} s, with scraping {s:.2f} s, ratio {s / p:.3f}")
PY
