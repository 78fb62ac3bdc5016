#!/usr/bin/env bash
# hubload's HTTP/2 publish vs h2load (nghttp2), in one run, against the same one-worker nginx
# with `http2` (h2c, prior knowledge), the same request (hubload's publish, captured first: its
# path, its fields and a body of its mean length; see h2-bench.sh), 8 interleaved rounds:
#   c10m10   h2load -c 10 -m 10 -t 1   vs  hubload --pool-per-host 10 --h2-streams 10 --concurrency 100 --threads 1
#   c1m100   h2load -c 1 -m 100 -t 1   vs  hubload --pool-per-host 1 --h2-streams 100 --concurrency 100 --threads 1
#   h1-c100  hubload over HTTP/1.1 at the same concurrency (100 connections), for hubload against itself
# For each run: requests (the client's, checked against nginx's own stub_status count), req/s,
# the client's CPU per request (user, sys, µs, its rusage by /usr/bin/time), nginx's worker CPU
# per request, and with STRACE=1 one more run per client under `strace -c -f` for system calls
# per request (strace slows the client; those runs are not in the req/s figures).
#
# Usage: bench/hubload-vs-h2load.sh   (knobs: ROUNDS=8 DURATION=10 STRACE=0 HUBLOAD_BIN=path)
# Needs nginx (with http_v2: Debian's nginx-light) and h2load (Debian's nghttp2-client).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck source=bench/nginx.sh
source bench/nginx.sh
ROUNDS=${ROUNDS:-8}
DURATION=${DURATION:-10}
STRACE=${STRACE:-0}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
if [[ -z ${HUBLOAD_BIN:-} ]]; then
    cargo build --quiet --release -p hubload --bin hubload
    HUBLOAD_BIN="$CARGO_TARGET_DIR/release/hubload"
fi
CAPTURE_BIN=$HUBLOAD_BIN
# shellcheck source=bench/h2-bench.sh
source bench/h2-bench.sh

# hubload VERSION PORT CONNS STREAMS: prints "REQUESTS REQ_PER_S" (the publishes of aggregate.csv;
# with one shared topic and nginx answering every /hub request, registration is one more request
# nginx sees, counted in its column).
run_hubload() {
    local streams=()
    [[ $1 == 2 ]] && streams=(--h2-streams "$4")
    rm -rf "$WORK/report"
    "${WRAP[@]}" "$HUBLOAD_BIN" --hub-url "http://127.0.0.1:$2/hub" --http-version "$1" --pool-per-host "$3" \
        "${streams[@]}" --concurrency 100 --threads 1 --duration "${DURATION}s" --quiet \
        --tenants 1 --topics shared --out "$WORK/report" >"$WORK/hubload.log" 2>&1 ||
        { cat "$WORK/hubload.log" >&2; return 1; }
    awk -F, '$1 == "TOTAL" { print $2, $11 }' "$WORK/report/aggregate.csv"
}

# System calls per request of one client run under strace (-f: every thread).
syscalls() {
    local label=$1 out n calls
    shift
    WRAP=(strace -f -c -o "$WORK/strace")
    out=$("$@")
    WRAP=()
    read -r n _ <<<"$out"
    calls=$(awk '$NF == "total" { print $(NF - 2) }' "$WORK/strace")
    awk -v l="$label" -v n="$n" -v c="$calls" 'BEGIN { printf "%-20s %9d requests %10d calls %8.3f calls/request\n", l, n, c, c / n }'
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# nginx $(nginx -v 2>&1 | cut -d/ -f2), one worker, http2; $(h2load --version | head -1); body $(wc -c <"$WORK/body.json") bytes; ${DURATION}s per run"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
measure_header
for round in $(seq "$ROUNDS"); do
    echo "# round $round"
    measure "h2load -c10 -m10" run_h2load 10 10 | tee -a "$WORK/rows"
    measure "hubload h2 10x10" run_hubload 2 "$H2" 10 10 | tee -a "$WORK/rows"
    measure "h2load -c1 -m100" run_h2load 1 100 | tee -a "$WORK/rows"
    measure "hubload h2 1x100" run_hubload 2 "$H2" 1 100 | tee -a "$WORK/rows"
    measure "hubload h1.1 c100" run_hubload 1.1 "$H1" 100 0
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
# hubload against h2load in the same round, and the check (issue 26): at 10x10, req/s at
# least 0.95x h2load's and CPU per request no higher than h2load's. The row's last seven
# fields are the numbers; the label is what comes before them.
echo "# hubload / h2load in the same round (goal at 10x10: req/s >= 0.95x and CPU per request <= 1.00x)"
awk '
# Two-sided 95 % quantile of Student t with d degrees of freedom (1.96 past 30).
function t95(d) {
    split("12.71 4.30 3.18 2.78 2.57 2.45 2.36 2.31 2.26 2.23 2.20 2.18 2.16 2.14 2.13 2.12 2.11 2.10 2.09 2.09 2.08 2.07 2.07 2.06 2.06 2.06 2.05 2.05 2.05 2.04", tt, " ")
    return d < 1 ? 0 : d <= 30 ? tt[d] : 1.96
}
{
    label = $1; for (i = 2; i <= NF - 7; i++) label = label " " $i
    rps = $(NF - 5); cpu = $(NF - 2)
    shape = (label ~ /10x10|-c10/) ? "10x10" : "1x100"
    if (label ~ /^h2load/) { if (shape == "10x10") round++; r[shape] = rps; c[shape] = cpu; next }
    q = rps / r[shape]; k = cpu / c[shape]
    printf "round %d %s: req/s %.2fx, CPU per request %.2fx (%.2f against %.2f us)\n", round, shape, q, k, cpu, c[shape]
    sr[shape] += rps; sh[shape] += r[shape]; sc[shape] += cpu; sk[shape] += c[shape]; n[shape]++
    # Each round is a pair run minutes from the next; the ratios of the pairs are the sample.
    lk[shape, n[shape]] = log(k); slk[shape] += log(k); slq[shape] += log(q)
}
END {
    # The machine moves between rounds (the system time per request of one binary by up to
    # 20 %, with the throughput it gives the pair), so one round, or even the mean of a few,
    # near 1.0 says little. The verdict is over the rounds as a sample: the geometric mean of
    # the per-round CPU ratios with its 95 % confidence interval (Student t). "met" needs the
    # whole interval at or under 1.00 (and req/s at least 0.95x); "not met" is an interval
    # wholly above 1.00; an interval across 1.00 is parity, which this many rounds on this
    # machine cannot tell from either.
    for (s in n) {
        m = slk[s] / n[s]; v = 0
        for (i = 1; i <= n[s]; i++) v += (lk[s, i] - m) ^ 2
        half = n[s] > 1 ? t95(n[s] - 1) * sqrt(v / (n[s] - 1) / n[s]) : 0
        lo = exp(m - half); hi = exp(m + half); q = exp(slq[s] / n[s])
        verdict = (q >= 0.95 && hi <= 1.0) ? "met" : (lo > 1.0 || q < 0.95) ? "not met" : "parity (the interval spans 1.00)"
        printf "%d rounds %s: req/s %.2fx, CPU per request %.3fx, 95%% interval %.3f-%.3f (means %.2f against %.2f us)%s\n", n[s], s, q, exp(m), lo, hi, sc[s] / n[s], sk[s] / n[s], s == "10x10" ? ": " verdict : ""
    }
}' "$WORK/rows"
if [[ $STRACE == 1 ]]; then
    echo "# system calls (one run each under strace -f -c)"
    syscalls "h2load -c10 -m10" run_h2load 10 10
    syscalls "hubload h2 10x10" run_hubload 2 "$H2" 10 10
    syscalls "h2load -c1 -m100" run_h2load 1 100
    syscalls "hubload h2 1x100" run_hubload 2 "$H2" 1 100
    syscalls "hubload h1.1 c100" run_hubload 1.1 "$H1" 100 0
fi
