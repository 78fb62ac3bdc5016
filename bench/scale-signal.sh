#!/usr/bin/env bash
# Ctrl-C at 100,000 topics loses nothing that was measured. A standalone hub (`hubload hub`),
# a sweep of TOPICS topics (TOPICS/4 tenants, `--topics per-tenant-channel`) over three levels,
# the last one long; SIGINT a second into the third level. Then it checks, from the files alone
# and the hub's own /stats:
#   - exit 130, summary.json marked partial, listing the two finished levels and the cut one;
#   - topics.jsonl has one line per listed level, each level's topic rows adding up to its
#     counts class by class;
#   - topics.csv and tenants.csv have every listed level, their attempts adding up to its
#     samples;
#   - each topic's accepted publishes over all levels lie between the hub's count for it less
#     the publishes the signal cancelled and the hub's count (a publish the hub took whose
#     answer the signal cut off is `cancelled`).
# Prints the time from the signal to the exit, hubload's peak RSS and the rows checked.
#
# Usage: bench/scale-signal.sh [hubload binary]   (default target/release/hubload)
# Knobs: TOPICS=100000 CONCURRENCY=20 DURATION=2s KEEP=1 (keep the reports)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/target/release/hubload}
TOPICS=${TOPICS:-100000}
CONCURRENCY=${CONCURRENCY:-20}
DURATION=${DURATION:-2s}
WORK=$(mktemp -d)
HUB_PID="" RUN_PID=""
cleanup() {
    for p in $RUN_PID $HUB_PID; do kill "$p" 2>/dev/null || true; done
    if [[ -z ${KEEP:-} ]]; then rm -rf "$WORK"; else echo "reports kept in $WORK" >&2; fi
}
trap cleanup EXIT
# shellcheck source=bench/nginx.sh
source "$ROOT/bench/nginx.sh" # hub_start
hub_start "$BIN" "$WORK/hub.log"
out=$WORK/run
c=$CONCURRENCY
plan="$c,$DURATION;$((c + 10)),$DURATION;$((c + 20)),600s"
/usr/bin/time -v "$BIN" --hub-url "http://127.0.0.1:$PORT/" --tenants $((TOPICS / 4)) \
    --topics per-tenant-channel --plan "$plan" --quiet --threads 2 --out "$out" \
    >"$WORK/log" 2>"$WORK/time" &
RUN_PID=$!
# Wait (at most 300 s) for summary.json to list two levels, then a second into the third.
python3 - "$out/summary.json" <<'PY'
import json, sys, time
end = time.time() + 300
while time.time() < end:
    try:
        if len(json.load(open(sys.argv[1]))["levels"]) >= 2:
            sys.exit(0)
    except (OSError, ValueError, KeyError):
        pass
    time.sleep(0.05)
sys.exit("no two levels listed in 300 s")
PY
sleep 1
hubload_pid=$(pgrep -P "$RUN_PID" -x hubload || pgrep -P "$RUN_PID")
signalled=$(date +%s.%N)
kill -INT "$hubload_pid"
rc=0
wait "$RUN_PID" || rc=$?
ended=$(date +%s.%N)
RUN_PID=""
grep -q "Exit status: 130" "$WORK/time" || { echo "hubload did not exit 130 (time said $rc)" >&2; cat "$WORK/log" >&2; exit 1; }
python3 - <<PY >"$WORK/stats.json"
import urllib.request
print(urllib.request.urlopen("http://127.0.0.1:$PORT/stats").read().decode())
PY
python3 - "$out" "$WORK/stats.json" <<'PY'
import csv, json, sys
out, stats = sys.argv[1], json.load(open(sys.argv[2]))
r = json.load(open(f"{out}/summary.json"))
assert r["partial"], "summary.json not marked partial"
levels = r["levels"]
assert len(levels) in (2, 3), f"{len(levels)} levels listed"
names = [json.loads(l)["topic"] for l in open(f"{out}/topic-names.jsonl")]
lines = [json.loads(l) for l in open(f"{out}/topics.jsonl")]
assert len(lines) == len(levels), f"{len(lines)} topics.jsonl lines for {len(levels)} levels"
accepted = [0] * len(names)
cancelled = [0] * len(names)
rows = 0
for i, (level, line) in enumerate(zip(levels, lines)):
    assert (line["level"], line["label"]) == (i, level["label"]), (i, line["label"])
    for cls, n in level["stats"]["counts"].items():
        by_topic = sum(t["counts"].get(cls, 0) for t in line["topics"])
        assert by_topic == n, f"level {level['label']} {cls}: topics {by_topic}, level {n}"
    for t in line["topics"]:
        accepted[t["topic"]] += t["counts"].get("accepted", 0)
        cancelled[t["topic"]] += t["counts"].get("cancelled", 0)
    rows += len(line["topics"])
for name in ("topics.csv", "tenants.csv"):
    by_level = {}
    with open(f"{out}/{name}") as f:
        for row in csv.DictReader(f):
            by_level[row["Level"]] = by_level.get(row["Level"], 0) + int(row["Attempts"])
    for level in levels:
        got = by_level.pop(level["label"], 0)
        assert got == level["samples"], f"{name} level {level['label']}: {got} attempts, {level['samples']} samples"
    assert not by_level, f"{name} has levels summary.json does not list: {sorted(by_level)}"
hub = stats["topics"]
for i, name in enumerate(names):
    theirs = hub.get(name, {}).get("published", 0)
    assert theirs - cancelled[i] <= accepted[i] <= theirs, f"{name}: accepted {accepted[i]}, cancelled {cancelled[i]}, hub {theirs}"
print(f"levels listed {len(levels)} ({', '.join(l['label'] for l in levels)}), samples {sum(l['samples'] for l in levels)}, "
      f"topic rows {rows}, topics {len(names)}, hub accepted {sum(t.get('published', 0) for t in hub.values())}: all agree")
PY
awk -v a="$signalled" -v b="$ended" 'BEGIN { printf "signal to exit %.2f s, ", b - a }'
awk -F': ' '/Maximum resident set size/ { printf "peak RSS %.0f MB\n", $2 / 1024 }' "$WORK/time"
