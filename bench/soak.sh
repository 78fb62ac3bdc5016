#!/usr/bin/env bash
# A soak: hubload's open model at a steady rate against the reference hub, with subscribers and
# a JTL (and --metrics-listen when this build has it), for a long time; every SAMPLE seconds
# it samples hubload's RSS, open file descriptors and thread count and the hub's RSS, then
# prints the slope per hour of each (least squares over the samples after WARMUP) and fails
# when one grows beyond its bound. Everything stays on 127.0.0.1.
#
# Usage: bench/soak.sh [DURATION_S (default 1200)] [RATE events/s (default 100)]
# Knobs (environment):
#   SUBS=1            subscribers per topic (--subscribers)
#   TENANTS=2         --tenants (topics = tenants x channels)
#   SAMPLE=10         seconds between samples
#   WARMUP=60         samples before this many seconds are shown but not judged
#   RSS_PCT_H=5       bound: RSS growth of hubload and of the hub, % per hour of the RSS at
#                     the end of the warm-up
#   FD_GROWTH=0       bound: the most open descriptors of hubload in the second half of the
#                     judged samples may exceed the most in the first half by this (a plateau:
#                     the hub opens delivery connections to the callback server in bursts and
#                     keeps them, so the count steps up and down; a leak keeps climbing)
#   THREADS_GROWTH=0  the same bound for hubload's threads
#   HUB_DELIVERY=1    the hub's --delivery-concurrency: deliveries in flight per subscriber,
#                     so at most this many delivery connections per subscriber to hubload's
#                     callback server (the hub's default, 64, lets a scheduling stall open
#                     dozens, each a step in hubload's descriptors and, through the
#                     allocator's high-water mark, its RSS; 1 carries a subscriber's share of
#                     100/s with room, and every connection is open from the first delivery)
#   BUILD=release     release (bench_setup's build) or debug (cargo build; what CI uses)
#   HUBLOAD_BIN, HUB_BIN  binaries to run instead of building
#   SOAK_OUT=DIR      keep samples.csv, the run's reports and the JTL in DIR
# "Task count": /proc gives threads, not tokio tasks; the tasks are on the /metrics endpoint
# when the build serves one (--metrics-listen), and the script passes that flag
# only when `hubload --help` lists it. The verdict is bench/soak-judge.py's, which can be run
# again on a kept samples.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-1200}
RATE=${2:-100}
SUBS=${SUBS:-1}
TENANTS=${TENANTS:-2}
SAMPLE=${SAMPLE:-10}
WARMUP=${WARMUP:-60}
RSS_PCT_H=${RSS_PCT_H:-5}
FD_GROWTH=${FD_GROWTH:-0}
THREADS_GROWTH=${THREADS_GROWTH:-0}
BUILD=${BUILD:-release}
HUB_DELIVERY=${HUB_DELIVERY:-1}
for v in DURATION SAMPLE WARMUP FD_GROWTH THREADS_GROWTH SUBS TENANTS HUB_DELIVERY; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "$v: expected whole seconds or a count, got ${!v}" >&2; exit 2; }
done
[[ "$RATE" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "RATE: expected events/s, got $RATE" >&2; exit 2; }
(( DURATION > WARMUP + 3 * SAMPLE )) || { echo "DURATION must exceed WARMUP + 3 samples" >&2; exit 2; }
for tool in curl python3; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: apt-get install -y $tool" >&2; exit 2; }
done

source bench/nginx.sh
if [ -z "${HUBLOAD_BIN:-}" ] || [ -z "${HUB_BIN:-}" ]; then
  if [ "$BUILD" = release ]; then
    bench_setup
  else
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
    cargo build -q -p hubload -p hubload-hub --bin hubload --bin hubload-hub
    BIN="$CARGO_TARGET_DIR/debug"
    WORK=$(mktemp -d); PIDS=(); trap bench_cleanup EXIT
  fi
else
  WORK=$(mktemp -d); PIDS=(); trap bench_cleanup EXIT
fi
HUBLOAD_BIN=${HUBLOAD_BIN:-$BIN/hubload}
HUB_BIN=${HUB_BIN:-$BIN/hubload-hub}
OUT=${SOAK_OUT:-$WORK}
mkdir -p "$OUT"

HUB_PORT=$(free_port)
HUB="http://127.0.0.1:$HUB_PORT"
RUST_LOG=warn "$HUB_BIN" --listen "127.0.0.1:$HUB_PORT" --delivery-concurrency "$HUB_DELIVERY" &
HUB_PID=$!; PIDS+=("$HUB_PID")
for _ in $(seq 100); do curl -fs "$HUB/stats" >/dev/null 2>&1 && break; sleep 0.05; done
curl -fs "$HUB/stats" >/dev/null || { echo "the hub did not come up on $HUB" >&2; exit 2; }

EXTRA=()
if "$HUBLOAD_BIN" --help | grep -q -- '--metrics-listen'; then
  EXTRA+=(--metrics-listen 127.0.0.1:0)
  echo "# --metrics-listen on"
else
  echo "# --metrics-listen: not in this build, left off"
fi
"$HUBLOAD_BIN" --quiet --hub-url "$HUB/hub" --tenants "$TENANTS" --rate "$RATE" \
  --duration "${DURATION}s" --subscribers "$SUBS" --jtl "$OUT/run.jtl" --out "$OUT/report" \
  "${EXTRA[@]}" 2>"$OUT/hubload.stderr" & LOAD_PID=$!; PIDS+=("$LOAD_PID")

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# The anonymous part of the RSS (heap, stacks): where a leak shows. The rest is mostly the
# binary's own pages, read in as code runs for the first time (docs/soak.md).
anon_kb() { awk '/^RssAnon:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
threads() { awk '/^Threads:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
# Of those, sockets in CLOSE-WAIT: the peer closed them and the process has not (an idle pooled
# connection the server dropped, kept until the pool looks at it again; docs/soak.md).
# Never fails: the process may end between the check and the read (pipefail, set -e).
close_wait() {
  { ls -l "/proc/$1/fd" 2>/dev/null || true; } | sed -n 's/.*socket:\[\([0-9]*\)\]$/\1/p' |
    awk 'FILENAME == "-" { mine[$1] = 1; next } FNR > 1 && $4 == "08" && ($10 in mine) { n++ } END { print n + 0 }' \
      - /proc/net/tcp /proc/net/tcp6
}

echo "t_s,hubload_rss_kb,hubload_fds,hubload_threads,hub_rss_kb,hubload_anon_kb,hub_anon_kb,hubload_close_wait" >"$OUT/samples.csv"
printf "%6s %14s %12s %16s %10s %15s %11s %18s\n" t_s hubload_rss_kb hubload_fds hubload_threads hub_rss_kb hubload_anon_kb hub_anon_kb hubload_close_wait
START=$(date +%s.%N)
NEXT=0
while kill -0 "$LOAD_PID" 2>/dev/null; do
  NOW=$(python3 -c "import sys; print(float(sys.argv[1]) - float(sys.argv[2]))" "$(date +%s.%N)" "$START")
  if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)" "$NOW" "$NEXT"; then
    row="$(printf %.0f "$NOW"),$(rss_kb "$LOAD_PID"),$(fds "$LOAD_PID"),$(threads "$LOAD_PID"),$(rss_kb "$HUB_PID")"
    row="$row,$(anon_kb "$LOAD_PID"),$(anon_kb "$HUB_PID"),$(close_wait "$LOAD_PID")"
    # The process may have ended between the check and the reads: keep only whole samples.
    if kill -0 "$LOAD_PID" 2>/dev/null; then
      echo "$row" >>"$OUT/samples.csv"
      echo "$row" | awk -F, '{ printf "%6s %14s %12s %16s %10s %15s %11s %18s\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
    fi
    NEXT=$((NEXT + SAMPLE))
  fi
  sleep 0.5
done
set +e
wait "$LOAD_PID"; RC=$?
set -e
# 0: ran and met its thresholds (there are none here); anything else is a failed soak.
[ "$RC" = 0 ] || { echo "hubload exited $RC:" >&2; tail -5 "$OUT/hubload.stderr" >&2; exit 1; }

# The samples drawn (plain SVG, no plotting package): $OUT/soak.svg.
python3 bench/soak-plot.py "$OUT/samples.csv" "$OUT/soak.svg" "$WARMUP" \
  "bench/soak.sh: ${DURATION} s at ${RATE} events/s"
python3 bench/soak-judge.py "$OUT/samples.csv" "$OUT/report/summary.json" "$WARMUP" "$DURATION" "$RSS_PCT_H" "$FD_GROWTH" "$THREADS_GROWTH"
