#!/usr/bin/env bash
# CPU per request of two or more hubload builds, alternated against one nginx: the A/B for a
# change whose effect is smaller than this machine's run-to-run noise in req/s.
#
# nginx (one worker, answering like a hub, bench/nginx.sh) is pinned to CPU 1 and each client
# run to CPU 0, so the two never share a core and the scheduler's placement stops moving the
# figures. Each run sends exactly N publishes (`--requests`, closed model, 50 connections,
# `--threads 1`, one shared topic) and prints user and system µs per request from
# /usr/bin/time, and req/s from the run's own aggregate.csv; then each build's mean over the
# rounds.
#
# Usage: bench/cpu-ab.sh BIN_A BIN_B [BIN ...]   (knobs: N=300000 ROUNDS=4 CONCURRENCY=50)
# Needs 2 CPUs. Noise-sensitive still (the user/system split is the kernel's sampling), so
# read the means over the rounds.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 2 ]] || { echo "usage: $0 BIN_A BIN_B [BIN ...]" >&2; exit 2; }
[[ $(nproc) -ge 2 ]] || { echo "needs 2 CPUs (nginx on one, the client on the other)" >&2; exit 2; }
WORK=$(mktemp -d)
NGINX_PID=""
trap '[[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
source "$ROOT/bench/nginx.sh"
PORT=$(free_port)
N=${N:-300000}
CONCURRENCY=${CONCURRENCY:-50}
nginx_start "$WORK" "$CONCURRENCY" "server { listen 127.0.0.1:$PORT; $HUB_ACCEPT }"
taskset -cp 1 "$NGINX_PID" >/dev/null
for round in $(seq "${ROUNDS:-4}"); do
    for bin in "$@"; do
        rm -rf "$WORK/report"
        /usr/bin/time -f "%U %S %e" -o "$WORK/time" taskset -c 0 "$bin" \
            --hub-url "http://127.0.0.1:$PORT/hub" --concurrency "$CONCURRENCY" --requests "$N" \
            --threads 1 --quiet --tenants 1 --topics shared --out "$WORK/report" >"$WORK/log" 2>&1 ||
            { cat "$WORK/log" >&2; exit 1; }
        read -r user sys elapsed <"$WORK/time"
        sent=$(awk -F, '$1 == "TOTAL" { print $2 }' "$WORK/report/aggregate.csv")
        awk -v u="$user" -v s="$sys" -v e="$elapsed" -v n="$sent" -v r="$round" -v b="$bin" \
            'BEGIN { printf "round %d  %-50s user %5.2f us/req  sys %5.2f us/req  %8.0f req/s\n", r, b, u / n * 1e6, s / n * 1e6, n / e }' |
            tee -a "$WORK/rounds"
    done
done
# The figure to read: each build's mean over the rounds (one run moves by ±15 % on these hosts).
awk '{ u[$3] += $5; s[$3] += $8; q[$3] += $10; n[$3]++; if (!($3 in seen)) { seen[$3] = 1; order[++k] = $3 } }
    END { for (i = 1; i <= k; i++) { b = order[i]
        printf "mean     %-50s user %5.2f us/req  sys %5.2f us/req  %8.0f req/s  (%d rounds)\n", b, u[b] / n[b], s[b] / n[b], q[b] / n[b], n[b] } }' \
    "$WORK/rounds"
