#!/usr/bin/env bash
# hubload's HTTP/2 publish vs h2load (nghttp2), in one run, against the same one-worker nginx
# with `http2` (h2c, prior knowledge), the same request (hubload's publish, captured first: its
# path, its fields and a body of its mean length; see h2-bench.sh), 8 interleaved rounds (in
# each, the pair of a shape runs in turn, h2load first in odd rounds, hubload first in even):
#   c10m10   h2load -c 10 -m 10 -t 1   vs  hubload --pool-per-host 10 --h2-streams 10 --concurrency 100 --threads 1
#   c1m100   h2load -c 1 -m 100 -t 1   vs  hubload --pool-per-host 1 --h2-streams 100 --concurrency 100 --threads 1
#   h1-c100  hubload over HTTP/1.1 at the same concurrency (100 connections), for hubload against itself
# For each run: requests (the client's, checked against nginx's own stub_status count), req/s,
# the client's CPU per request (user, sys, µs, its rusage by /usr/bin/time), nginx's worker CPU
# per request, and with STRACE=1 one more run per client under `strace -c -f` for system calls
# per request (strace slows the client; those runs are not in the req/s figures). The summary:
# per shape, the geometric mean of the per-round ratios with a 95 % interval, of the raw CPU
# per request and of each client's CPU per request against nginx's in the same run (which
# cancels the machine's changes of speed; the verdict is over it, see the end).
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
# The pair of each shape runs in turn, h2load first in odd rounds and hubload first in even
# ones: when the machine changes speed between the two runs of a pair, that favours each
# client as often.
pair() {
    local first=$1 second=$2
    if ((round % 2 == 0)); then first=$2 second=$1; fi
    eval "$first" | tee -a "$WORK/rows"
    eval "$second" | tee -a "$WORK/rows"
}
for round in $(seq "$ROUNDS"); do
    echo "# round $round"
    pair 'measure "h2load -c10 -m10" run_h2load 10 10' 'measure "hubload h2 10x10" run_hubload 2 "$H2" 10 10'
    pair 'measure "h2load -c1 -m100" run_h2load 1 100' 'measure "hubload h2 1x100" run_hubload 2 "$H2" 1 100'
    measure "hubload h1.1 c100" run_hubload 1.1 "$H1" 100 0
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
# hubload against h2load in the same round, and the check: at 10x10, req/s at
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
    shape = (label ~ /10x10|-c10/) ? "10x10" : "1x100"
    who = (label ~ /^h2load/) ? "h2load" : "hubload"
    # req/s, the client'"'"'s CPU and nginx'"'"'s CPU per request, by client; a pair is complete once
    # both of its runs are read (in either order).
    rps[who] = $(NF - 5); cpu[who] = $(NF - 2); srv[who] = $(NF - 1); seen[shape]++
    if (seen[shape] % 2 == 1) next
    if (shape == "10x10") round++
    q = rps["hubload"] / rps["h2load"]; k = cpu["hubload"] / cpu["h2load"]
    # The same ratio with each client'"'"'s CPU counted against nginx'"'"'s in the same run.
    kn = k / (srv["hubload"] / srv["h2load"])
    printf "round %d %s: req/s %.2fx, CPU per request %.2fx (%.2f against %.2f us), against nginx'"'"'s %.3fx\n", round, shape, q, k, cpu["hubload"], cpu["h2load"], kn
    sc[shape] += cpu["hubload"]; sk[shape] += cpu["h2load"]; n[shape]++
    # Each round is a pair run minutes from the next; the ratios of the pairs are the sample.
    lk[shape, n[shape]] = log(k); slk[shape] += log(k); slq[shape] += log(q)
    ln[shape, n[shape]] = log(kn); sln[shape] += log(kn)
}
END {
    # The machine moves between rounds (the system time per request of one binary by up to
    # 20 %, with the throughput it gives the pair), so one round, or even the mean of a few,
    # near 1.0 says little. The verdict is over the rounds as a sample: the geometric mean of
    # the per-round CPU ratios with its 95 % confidence interval (Student t). "met" needs the
    # whole interval at or under 1.00 (and req/s at least 0.95x); "not met" is an interval
    # wholly above 1.00; an interval across 1.00 is parity, which this many rounds on this
    # machine cannot tell from either.
    #
    # Against nginx'"'"'s: what moves a round is the machine'"'"'s speed, and it moves nginx'"'"'s CPU per
    # request with the client'"'"'s (over 40 rounds on 2026-12-05 the log of the client ratio
    # followed the log of nginx'"'"'s with slope 1.02, correlation 0.99). Each client'"'"'s CPU per
    # request divided by nginx'"'"'s in the same run cancels that factor. It leans against hubload
    # whenever hubload makes nginx'"'"'s work cheaper (fewer, fuller writes), never for it. The
    # verdict is over this ratio, with the raw one above it: "met" needs this interval at or
    # under 1.00, the raw mean at or under 1.00 and req/s at least 0.95x.
    for (s in n) {
        m = slk[s] / n[s]; v = 0
        for (i = 1; i <= n[s]; i++) v += (lk[s, i] - m) ^ 2
        half = n[s] > 1 ? t95(n[s] - 1) * sqrt(v / (n[s] - 1) / n[s]) : 0
        lo = exp(m - half); hi = exp(m + half); q = exp(slq[s] / n[s])
        printf "%d rounds %s: req/s %.2fx, CPU per request %.3fx, 95%% interval %.3f-%.3f (means %.2f against %.2f us)\n", n[s], s, q, exp(m), lo, hi, sc[s] / n[s], sk[s] / n[s]
        mn = sln[s] / n[s]; vn = 0
        for (i = 1; i <= n[s]; i++) vn += (ln[s, i] - mn) ^ 2
        hn = n[s] > 1 ? t95(n[s] - 1) * sqrt(vn / (n[s] - 1) / n[s]) : 0
        lon = exp(mn - hn); hin = exp(mn + hn)
        verdict = (q >= 0.95 && hin <= 1.0 && m <= 0) ? "met" : (lon > 1.0 || q < 0.95) ? "not met" : "parity (the interval spans 1.00)"
        printf "%d rounds %s: CPU per request against nginx'"'"'s in the same run %.3fx, 95%% interval %.3f-%.3f%s\n", n[s], s, exp(mn), lon, hin, s == "10x10" ? ": " verdict : ""
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
