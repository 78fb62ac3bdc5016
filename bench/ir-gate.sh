#!/usr/bin/env bash
# The instruction-count gate CI runs: hubload's user-space instructions per request, over
# HTTP/1.1 and HTTP/2, must not rise more than 3 % above the committed baseline
# (bench/ir-baseline.txt). Callgrind counts instructions, not time, so the figures repeat on a
# busy machine where req/s and CPU time do not.
#
# Runs bench/ir-per-request.sh (HTTP/1.1, 50 connections, one thread) and
# bench/h2-ir-per-request.sh (HTTP/2, 10 connections x 10 streams, one thread) without their
# reference clients, and judges two figures of each (bench/callgrind.sh says what they are):
# the worker loop's and the whole process's less the run's per-level task.
# Exit 0 within the bounds, 1 when a figure rose past one, 2 when it could not measure.
# A figure more than 3 % below its baseline passes with a note: lower the baseline in a commit
# that says why, so the gain is kept.
#
# Usage: bench/ir-gate.sh [hubload binary]   (default target/release/hubload)
# Knobs: SLACK_PCT=3  BASELINE=bench/ir-baseline.txt
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/target/release/hubload}
SLACK_PCT=${SLACK_PCT:-3}
BASELINE=${BASELINE:-$ROOT/bench/ir-baseline.txt}
[[ -x $BIN ]] || { echo "ir-gate: no hubload binary at $BIN (cargo build --release first)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "ir-gate: valgrind is not installed" >&2; exit 2; }
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
WRK=0 N1=2000 N2=12000 bash "$ROOT/bench/ir-per-request.sh" "$BIN" >>"$OUT" 2>&1 ||
    { cat "$OUT" >&2; echo "ir-gate: the HTTP/1.1 count failed" >&2; exit 2; }
H2LOAD=0 SHAPES=10x10 N1=2000 N2=12000 bash "$ROOT/bench/h2-ir-per-request.sh" "$BIN" >>"$OUT" 2>&1 ||
    { cat "$OUT" >&2; echo "ir-gate: the HTTP/2 count failed" >&2; exit 2; }

# "NAME whole W worker_loop L per_level P whole_less_per_level X" -> "NAME.key value"
measured() { awk '$2 == "whole" { for (i = 2; i < NF; i += 2) print $1 "." $i, $(i + 1) }' "$OUT"; }
status=0
printf '%-30s %10s %10s %8s\n' figure baseline measured ratio
while read -r name base; do
    [[ -z $name || $name == \#* ]] && continue
    got=$(measured | awk -v n="$name" '$1 == n { print $2 }')
    if [[ -z $got ]]; then
        echo "ir-gate: no figure $name was measured" >&2
        cat "$OUT" >&2
        exit 2
    fi
    ratio=$(awk -v g="$got" -v b="$base" 'BEGIN { printf "%.3f", g / b }')
    verdict=ok
    if awk -v g="$got" -v b="$base" -v s="$SLACK_PCT" 'BEGIN { exit !(g > b * (1 + s / 100)) }'; then
        verdict="ROSE more than $SLACK_PCT %"
        status=1
    elif awk -v g="$got" -v b="$base" -v s="$SLACK_PCT" 'BEGIN { exit !(g < b * (1 - s / 100)) }'; then
        verdict="fell more than $SLACK_PCT %: lower the baseline in a commit that says why"
    fi
    printf '%-30s %10s %10s %8s  %s\n' "$name" "$base" "$got" "$ratio" "$verdict"
done <"$BASELINE"
echo "(the other figures, not judged:)"
measured | grep -v -E 'whole_less_per_level|worker_loop' | sed 's/^/  /'
exit $status
