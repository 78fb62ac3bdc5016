#!/usr/bin/env bash
# What --web costs the publish path: the same open-model run against the reference hub
# without --web ("plain") and with --web and a page's stream open ("web": curl reading
# /v1/events the whole run, as an open page does), alternated ROUNDS times. Prints, per round
# and variant, hubload's CPU seconds (user + sys, measured from outside: the child's rusage
# from wait4(2), to the microsecond, where /usr/bin/time rounds to 10 ms, 1.4 % of a 0.7 s run),
# its attempts, the CPU per attempt, and at the end the ratio of the medians (web / plain).
#
# IR=1 counts instructions instead: each run of hubload under callgrind (one runtime thread),
# its user-space instructions (every thread's, start-up and exit included, the same in both
# variants but for the page's server) per attempt. Counts repeat on a busy machine where CPU
# time spreads by ±5-9 %, so a 1 % difference can be seen.
#
# Usage: bench/live-cost.sh [hubload binary] [hubload-hub binary]
#        (default target/release/…; any profile works, the ratio is what counts)
# Knobs: RATE=2000 DURATION=10 ROUNDS=3 (IR=1: RATE=200, which hubload sustains under
# callgrind); PANELS=1 gives both variants the inputs of the page's
# server-metrics and delivery panels: --server-metrics on the hub's /metrics and 2 of
# hubload's own subscribers (their cost is in both variants; the ratio is still the page's).
# KEEP=DIR keeps each run's callgrind file there (IR=1), to see where the page's
# instructions go (`callgrind_annotate --inclusive=yes`; bench/README.md).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/target/release/hubload}
HUB=${2:-$ROOT/target/release/hubload-hub}
IR=${IR:-0}
if [[ $IR == 1 ]]; then
    command -v valgrind >/dev/null || { echo "live-cost: IR=1 needs valgrind" >&2; exit 2; }
    source "$ROOT/bench/callgrind.sh"
    RATE=${RATE:-200}
else
    RATE=${RATE:-2000}
fi
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
PANELS=${PANELS:-0}
WORK=$(mktemp -d)
HUB_PID=""
CURL_PID=""
cleanup() {
    [[ -n $CURL_PID ]] && kill "$CURL_PID" 2>/dev/null || true
    [[ -n $HUB_PID ]] && kill "$HUB_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# Runs a command and writes its user and system CPU seconds (wait4's rusage) to a file.
cat >"$WORK/rusage.py" <<'PY'
import os, subprocess, sys
p = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, ru = os.wait4(p.pid, 0)
open(sys.argv[1], "w").write(f"{ru.ru_utime:.6f} {ru.ru_stime:.6f}\n")
sys.exit(os.waitstatus_to_exitcode(status))
PY

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
"$HUB" --listen "127.0.0.1:$PORT" >"$WORK/hub.log" 2>&1 &
HUB_PID=$!
for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$PORT/stats" >/dev/null 2>&1 && break
    sleep 0.1
done

run() { # variant, round
    local out="$WORK/$1-$2" extra=() web_port
    if [[ $PANELS == 1 ]]; then
        extra=(--server-metrics "http://127.0.0.1:$PORT/metrics" --subscribers 2)
    fi
    if [[ $1 == web ]]; then
        web_port=$(free_port)
        extra+=(--web "127.0.0.1:$web_port")
        # The page's stream, from as soon as the server answers to the run's end.
        (for _ in $(seq 600); do
            curl -fs "http://127.0.0.1:$web_port/v1/status" >/dev/null 2>&1 && break
            sleep 0.05
        done
        curl -fsN "http://127.0.0.1:$web_port/v1/events" >"$out.events" 2>/dev/null) &
        CURL_PID=$!
    fi
    local args=(--quiet --hub-url "http://127.0.0.1:$PORT/hub" --tenants 10 --rate "$RATE"
        --duration "${DURATION}s" --out "$out" "${extra[@]}")
    if [[ $IR == 1 ]]; then
        valgrind --tool=callgrind --callgrind-out-file="$out.cg" "$BIN" --threads 1 "${args[@]}" \
            >/dev/null 2>&1
        total_ir "$out.cg" >"$out.ir"
        [[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp "$out.cg" "$KEEP/$1-$2.cg"
    else
        python3 "$WORK/rusage.py" "$out.time" "$BIN" "${args[@]}" >/dev/null 2>&1
    fi
    if [[ -n $CURL_PID ]]; then
        kill "$CURL_PID" 2>/dev/null || true
        wait "$CURL_PID" 2>/dev/null || true
        CURL_PID=""
    fi
    python3 - "$out" "$1" "$2" <<'PY'
import json, os, sys
out, variant, rnd = sys.argv[1:4]
l = json.load(open(out + "/summary.json"))["levels"][0]
seconds = 0
if os.path.exists(out + ".events"):
    seconds = sum(1 for line in open(out + ".events") if line.startswith("event: second"))
if os.path.exists(out + ".ir"):
    ir = int(open(out + ".ir").read())
    per = ir / max(l["samples"], 1)
    cost = f"Ir {ir:14d}  attempts {l['samples']:8d}  {per:9.0f} Ir/attempt"
else:
    u, s = map(float, open(out + ".time").read().split()[-2:])
    per = (u + s) / max(l["samples"], 1) * 1e6
    cost = f"cpu {u + s:7.3f} s  attempts {l['samples']:8d}  {per:6.2f} us/attempt"
print(f"{rnd} {variant:6} {cost}  rate {l['throughput']:8.1f}/s  seconds streamed {seconds}")
open(out + ".cpu", "w").write(str(per))
PY
}

echo "rate ${RATE}/s, ${DURATION}s, $(nproc) cores, $ROUNDS round(s), panels' inputs: $PANELS, instructions: $IR; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
    run plain "$r"
    run web "$r"
done
python3 - "$WORK" "$ROUNDS" "$IR" <<'PY'
import statistics, sys
work, rounds, ir = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
cpu = lambda v: [float(open(f"{work}/{v}-{r}.cpu").read()) for r in range(1, rounds + 1)]
p, w = statistics.median(cpu("plain")), statistics.median(cpu("web"))
what, unit, fmt = ("instructions", "Ir", ".0f") if ir else ("CPU", "us", ".2f")
print(f"median {what} per attempt: plain {p:{fmt}} {unit}, with a page streaming {w:{fmt}} {unit}, ratio {w / p:.3f}")
print("per round (web / plain):", " ".join(f"{b / a:.3f}" for a, b in zip(cpu("plain"), cpu("web"))))
PY
