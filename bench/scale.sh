#!/usr/bin/env bash
# Many tenants in one pod: hubload's peak memory, the gaps between levels, the sizes of the
# files people open, and the cost of merging four shards, at 1,000, 10,000 and 100,000 topics.
#
# A standalone reference hub (`hubload hub`) on 127.0.0.1; hubload with `--topics
# per-tenant-channel` (4 channels, so TOPICS/4 tenants), LEVELS closed-model levels of DURATION
# each, under /usr/bin/time -v. Then the same run as SHARDS shards (the Indexed Job's
# environment, all on this machine, their stdout kept as a `kubectl logs` dump would be) and
# `hubload merge` of that dump, also under /usr/bin/time -v.
#
# Prints one row per topic count: peak RSS (MB), wall time (s), the largest gap between one
# level's last attempt and the next level's first (s), summary.json / topics.csv /
# report.html sizes (MB), report.html's load time in headless chromium (ms, bench/html-load.sh;
# - without chromium), the peak RSS (MB) of `hubload report` and of `hubload compare` on the
# run, the longest shard stdout line (KB), the merge's peak RSS (MB) and wall time (s).
#
# Usage: bench/scale.sh [hubload binary]   (default target/release/hubload)
# Knobs: TOPICS="1000 10000 100000" LEVELS=5 DURATION=2s CONCURRENCY=20 SHARDS=4 (0: no shards)
#        KEEP=1 (keep the reports) EXTRA=0 (no load time, report or compare: -)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/target/release/hubload}
TOPICS=${TOPICS:-1000 10000 100000}
LEVELS=${LEVELS:-5}
DURATION=${DURATION:-2s}
CONCURRENCY=${CONCURRENCY:-20}
SHARDS=${SHARDS:-4}
WORK=$(mktemp -d)
HUB_PID=""
cleanup() {
    if [[ -n $HUB_PID ]]; then kill "$HUB_PID" 2>/dev/null || true; fi
    if [[ -z ${KEEP:-} ]]; then rm -rf "$WORK"; else echo "reports kept in $WORK" >&2; fi
}
trap cleanup EXIT
# shellcheck source=bench/nginx.sh
source "$ROOT/bench/nginx.sh" # hub_start
hub_start "$BIN" "$WORK/hub.log"
LEVEL_LIST=$(seq -s, "$CONCURRENCY" "$CONCURRENCY" $((CONCURRENCY * LEVELS)))

# peak RSS (MB) and wall time (s) from a /usr/bin/time -v log
rss_mb() { awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$1"; }
wall_s() {
    awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.1f", s }' "$1"
}
size_mb() { if [[ -f $1 ]]; then awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.2f", b / 1048576 }'; else echo -; fi; }
# The largest gap between a level's end (first start + span) and the next level's first start.
gap_s() {
    python3 - "$1" <<'PY'
import json, sys
levels = json.load(open(sys.argv[1]))["levels"]
first = lambda l: l["stats"]["first_start_us"]
gaps = [(first(b) - (first(a) + a["span_s"] * 1e6)) / 1e6
        for a, b in zip(levels, levels[1:])]
print("%.2f" % max(gaps) if gaps else "-")
PY
}

# peak RSS (MB) of `hubload ARGS…` (its output discarded)
cmd_rss() {
    /usr/bin/time -v "$BIN" "$@" >/dev/null 2>"$WORK/cmd-time" || { cat "$WORK/cmd-time" >&2; exit 1; }
    rss_mb "$WORK/cmd-time"
}

printf '%8s %8s %7s %7s %9s %9s %9s %8s %9s %9s %8s %9s %8s\n' topics rss_MB wall_s gap_s summ_MB topics_MB \
    html_MB html_ms report_MB cmp_MB line_KB merge_MB merge_s
for topics in $TOPICS; do
    tenants=$((topics / 4))
    out=$WORK/run-$topics
    args=(--hub-url "http://127.0.0.1:$PORT/" --tenants "$tenants" --topics per-tenant-channel
        --concurrency "$LEVEL_LIST" --duration "$DURATION" --quiet --threads 2)
    /usr/bin/time -v "$BIN" "${args[@]}" --out "$out" >"$WORK/log-$topics" 2>"$WORK/time-$topics" ||
        { cat "$WORK/log-$topics" "$WORK/time-$topics" >&2; exit 1; }
    html_ms=- report_rss=- cmp_rss=-
    if [[ ${EXTRA:-1} != 0 ]]; then
        if command -v "${CHROMIUM:-chromium}" >/dev/null; then
            read -r _ html_ms _ < <(RUNS=1 "$ROOT/bench/html-load.sh" "$out/report.html")
        fi
        report_rss=$(cmd_rss report "$out/summary.json" --out "$WORK/report-$topics")
        cmp_rss=$(cmd_rss compare "$out" "$out" --out "$WORK/compare-$topics")
    fi
    line=- mrss=- mwall=-
    if [[ $SHARDS -gt 0 ]]; then
        start=$(date -u -d '+3 seconds' +%Y-%m-%dT%H:%M:%SZ)
        pids=()
        for i in $(seq 0 $((SHARDS - 1))); do
            JOB_COMPLETION_INDEX=$i HUBLOAD_SHARD_COUNT=$SHARDS HUBLOAD_RUN_ID="scale-$topics" \
                HUBLOAD_START_AT=$start "$BIN" "${args[@]}" --out "$WORK/shard-$topics-$i" \
                >"$WORK/shard-$topics-$i.log" 2>&1 &
            pids+=($!)
        done
        for p in "${pids[@]}"; do wait "$p" || { cat "$WORK"/shard-"$topics"-*.log >&2; exit 1; }; done
        cat "$WORK"/shard-"$topics"-*.log >"$WORK/dump-$topics.log"
        line=$(awk '{ if (length($0) > m) m = length($0) } END { printf "%.0f", m / 1024 }' "$WORK/dump-$topics.log")
        /usr/bin/time -v "$BIN" merge "$WORK/dump-$topics.log" --out "$WORK/merged-$topics" \
            >"$WORK/merge-$topics.log" 2>"$WORK/merge-time-$topics" ||
            { cat "$WORK/merge-$topics.log" "$WORK/merge-time-$topics" >&2; exit 1; }
        mrss=$(rss_mb "$WORK/merge-time-$topics")
        mwall=$(wall_s "$WORK/merge-time-$topics")
    fi
    printf '%8s %8s %7s %7s %9s %9s %9s %8s %9s %9s %8s %9s %8s\n' "$topics" "$(rss_mb "$WORK/time-$topics")" \
        "$(wall_s "$WORK/time-$topics")" "$(gap_s "$out/summary.json")" "$(size_mb "$out/summary.json")" \
        "$(size_mb "$out/topics.csv")" "$(size_mb "$out/report.html")" "$html_ms" "$report_rss" "$cmp_rss" \
        "$line" "$mrss" "$mwall"
done
