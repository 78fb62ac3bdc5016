#!/usr/bin/env bash
# Side-by-side benchmark: hubload's HTTP client vs wrk, same POST, same concurrency, one run.
#
# Starts a one-worker nginx on 127.0.0.1:<free port> that answers the publish POST with
# `200 hub.mode=accepted` (application/x-www-form-urlencoded), runs wrk (1 thread) and then
# the hubload client against it, and prints both req/s and the ratio. When `oha` is installed
# (`cargo install oha`), it runs too, and the ratio to oha is printed as well.
#
# Usage: bench/http-vs-wrk.sh            (from the repo root)
# Knobs (environment):
#   CONCURRENCY=50 DURATION=10 RUNTIMES="current"   ("current multi2 per-core" compares layouts)
#   ROUNDS=1      alternate wrk and hubload this many times and print the median ratio (the
#                 machine's other load moves single runs by ±20 %)
#   HUBLOAD_CMD   the command measured against wrk (eval'ed; see bench/README.md). It gets
#                 $URL $CONCURRENCY $DURATION $BODY_FILE $RUNTIME and must print, as wrk
#                 does, `N requests in …` and `Requests/sec: N`. Default: the http_bench example.
#   HUBLOAD_BIN   path to a built `hubload`: measure the whole CLI (its own events, one shared
#                 topic) instead of the bare client; the label is `cli`.
#   HUBLOAD_ARGS  more flags for every hubload run (word-split), e.g. `--payload-bytes 1200`.
#   TLS=1         nginx terminates TLS (a throw-away CA made with openssl; hubload gets it
#                 with --ca-cert, wrk does not verify); needs HUBLOAD_BIN; oha is skipped.
#   REQUEST       what wrk and oha send. `hubload` (the default with HUBLOAD_BIN): hubload's
#                 own publish, captured first (bench/capture-request.py): its path, its
#                 headers and its mean length, the body padded to that mean, so nginx does
#                 the same work per request for every client. `login`: the 543-byte login
#                 event with Content-Type and Accept only (the default for the bare client,
#                 which sends exactly that).
#   CLIENT_CPUS   e.g. 0.5: every client runs in a CPU cgroup limited to that many cores, as in a
#                 pod with `limits.cpu: 500m`; the client then sets the pace, not nginx, and
#                 the ratio is how much load one such pod drives (cgroup v1 or v2, as root).
# Every client's line also shows nginx's own CPU per request and how busy its one worker was:
# at ~100 % of a core the server, not the client, set the pace, and the ratio says so little
# about the client that only the CPU figures compare them.
# Exit status: 0, or 1 when hubload's request count does not match nginx's.
set -euo pipefail

CONCURRENCY=${CONCURRENCY:-50}
DURATION=${DURATION:-10}
RUNTIMES=${RUNTIMES:-current}
ROUNDS=${ROUNDS:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BENCH_BIN="$CARGO_TARGET_DIR/release/examples/http_bench"
# With HUBLOAD_BIN (a built `hubload`), measure the whole CLI instead of the client alone.
if [[ -n ${HUBLOAD_BIN:-} ]]; then
    HUBLOAD_CMD=${HUBLOAD_CMD:-hubload_cli}
    RUNTIMES=${RUNTIMES_CLI:-cli}
fi
HUBLOAD_CMD=${HUBLOAD_CMD:-'"$BENCH_BIN" -c "$CONCURRENCY" -d "$DURATION" --body-file "$BODY_FILE" --runtime "$RUNTIME" "$URL"'}

# One hubload run against the hub URL (one shared topic, so registration is one request),
# printed in wrk's terms from its aggregate.csv TOTAL row (# Samples, Throughput).
hubload_cli() {
    rm -rf "$WORK/report"
    # --threads 1: one load thread, like wrk -t1 (on 2 cores a second thread would take CPU
    # from the one-worker nginx being measured).
    /usr/bin/time -f %M -o "$WORK/rss" "$HUBLOAD_BIN" --hub-url "${URL%%\?*}" --concurrency "$CONCURRENCY" --duration "${DURATION}s" \
        --threads "${HUBLOAD_THREADS:-1}" --quiet ${TLS_FLAGS:-} \
        --tenants 1 --topics shared ${HUBLOAD_ARGS:-} --out "$WORK/report" >"$WORK/hubload.log" 2>&1 ||
        { cat "$WORK/hubload.log" >&2; return 1; }
    awk -F, '$1 == "TOTAL" { print $2 + 1 " requests in (incl. 1 registration)"; print "Requests/sec: " $11 }' \
        "$WORK/report/aggregate.csv"
}

# --- tools -------------------------------------------------------------------------------
if ! command -v nginx >/dev/null || ! command -v wrk >/dev/null; then
    echo "installing nginx and wrk" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light wrk >/dev/null 2>&1 ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx wrk >/dev/null
fi
if [[ ${TLS:-} == 1 && -z ${HUBLOAD_BIN:-} ]]; then
    echo "TLS=1 needs HUBLOAD_BIN (the http_bench example speaks plain http)" >&2
    exit 2
fi
# The example is only needed when it is what is measured (the CLI is checked with curl).
[[ -n ${HUBLOAD_BIN:-} ]] || (cd "$ROOT" && cargo build --quiet --release --example http_bench)

REQUEST=${REQUEST:-$([[ -n ${HUBLOAD_BIN:-} ]] && echo hubload || echo login)}
if [[ $REQUEST == hubload && -z ${HUBLOAD_BIN:-} ]]; then
    echo "REQUEST=hubload needs HUBLOAD_BIN (the http_bench example sends the login event)" >&2
    exit 2
fi

# --- server ------------------------------------------------------------------------------
WORK=$(mktemp -d)
NGINX_PID=""
cleanup() {
    if [[ -n $NGINX_PID ]]; then kill "$NGINX_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
    if [[ -n ${CGROUP:-} ]]; then
        echo $$ >"$(dirname "$CGROUP")/cgroup.procs"
        rmdir "$CGROUP"
    fi
}
trap cleanup EXIT

source "$ROOT/bench/nginx.sh"
# shellcheck disable=SC2034 # read by cpu_us (bench/nginx.sh)
TCK=$(getconf CLK_TCK)
PORT=$(free_port)
# stub_status on a plain port of its own, so the counts can be read over /dev/tcp with TLS too.
STATUS_PORT=$PORT
LISTEN="listen 127.0.0.1:$PORT;"
SCHEME=http
STATUS_SERVER=""
if [[ ${TLS:-} == 1 ]]; then
    STATUS_PORT=$(free_port)
    SCHEME=https
    tls_cert "$WORK"
    LISTEN="listen 127.0.0.1:$PORT ssl; ssl_certificate $WORK/leaf.pem; ssl_certificate_key $WORK/leaf.key;"
    STATUS_SERVER="server { listen 127.0.0.1:$STATUS_PORT; location = /nginx_status { stub_status; } }"
    export TLS_FLAGS="--ca-cert $WORK/ca.pem"
fi
nginx_start "$WORK" "$CONCURRENCY" "server {
        $LISTEN
        location = /nginx_status { stub_status; }
        $HUB_ACCEPT
    }
    $STATUS_SERVER"

BODY_FILE=$WORK/login-event.json
login_event >"$BODY_FILE"
URL="$SCHEME://127.0.0.1:$PORT/hub?hub.mode=publish&hub.topic=T"
REQ_HEADERS=()
if [[ $REQUEST == hubload ]]; then
    # hubload's publish as it goes on the wire (the same flags as the measured runs), so wrk
    # and oha send the same path, headers and mean length: nginx's work per request depends
    # on all three, and with its one worker saturated it sets every client's pace.
    # shellcheck disable=SC2086 # HUBLOAD_ARGS is a list of flags
    capture_publish "$HUBLOAD_BIN" "$WORK" 3000 ${HUBLOAD_ARGS:-}
    BODY_FILE=$WORK/body.json
    URL="$SCHEME://127.0.0.1:$PORT$REQ_PATH"
    echo "wrk and oha send hubload's publish: ${#REQ_HEADERS[@]} headers as it sends them, $REQ_PATH," \
        "a body of $(wc -c <"$BODY_FILE") B (hubload's mean over $REQ_COUNT publishes: $REQ_MEAN B a request)"
fi
wrk_post_lua "$BODY_FILE" "${REQ_HEADERS[@]}" >"$WORK/post.lua"

# Check the server answers the POST as a hub would before measuring anything.
if [[ -z ${HUBLOAD_BIN:-} ]]; then
    "$BENCH_BIN" --check --body-file "$BODY_FILE" "$URL" >/dev/null ||
        { echo "nginx did not accept the POST; see $WORK/error.log" >&2; exit 2; }
elif [[ $(curl -sk -X POST -H 'Content-Type: application/json' --data-binary "@$BODY_FILE" "$URL") != hub.mode=accepted ]]; then
    echo "nginx did not accept the POST; see $WORK/error.log" >&2
    exit 2
fi
# CLIENT_CPUS: this shell, and so every client it starts from now on, into a CPU-limited
# cgroup (nginx, started above, stays outside it).
CGROUP=""
if [[ -n ${CLIENT_CPUS:-} ]]; then
    QUOTA=$(awk -v c="$CLIENT_CPUS" 'BEGIN { printf "%d", c * 100000 }')
    if [[ -d /sys/fs/cgroup/cpu && -f /sys/fs/cgroup/cpu/cgroup.procs ]]; then
        CGROUP=/sys/fs/cgroup/cpu/hubload-bench-$$
        mkdir "$CGROUP"
        echo 100000 >"$CGROUP/cpu.cfs_period_us"
        echo "$QUOTA" >"$CGROUP/cpu.cfs_quota_us"
    elif [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
        CGROUP=/sys/fs/cgroup/hubload-bench-$$
        echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
        mkdir "$CGROUP"
        echo "$QUOTA 100000" >"$CGROUP/cpu.max"
    else
        echo "CLIENT_CPUS needs a cgroup cpu controller (v1 or v2) under /sys/fs/cgroup" >&2
        exit 2
    fi
    echo $$ >"$CGROUP/cgroup.procs"
fi
echo "request $REQUEST, body $(wc -c <"$BODY_FILE") B, concurrency $CONCURRENCY, ${DURATION}s, nginx 1 worker, $(nproc) cores, $SCHEME${CLIENT_CPUS:+, each client limited to $CLIENT_CPUS cores}"

rps() { awk '/^Requests\/sec:/ { print $2 }'; }
# Requests the client says it completed (`N requests in …`, as wrk prints).
count() { awk '/ requests in / { print $1; exit }'; }
# nginx's own request count (stub_status); this request itself is counted in it.
served() { nginx_served "$STATUS_PORT"; }

# Run a command, keep its stdout in $OUT, its CPU seconds in $USR (user) and $SYS (kernel),
# its wall-clock seconds in $REAL, and nginx's worker's CPU µs over it in $NGINX_CPU. An
# external command's peak resident memory (KiB) goes to $WORK/rss (hubload_cli writes it
# itself: /usr/bin/time cannot run a shell function).
measure() {
    local t before
    rm -f "$WORK/rss"
    [[ $1 == eval ]] || set -- /usr/bin/time -f %M -o "$WORK/rss" "$@"
    before=$(cpu_us "$NGINX_WORKER")
    t=$({ TIMEFORMAT='%U %S %R'; time "$@" >"$WORK/out"; } 2>&1)
    NGINX_CPU=$(($(cpu_us "$NGINX_WORKER") - before))
    OUT=$(cat "$WORK/out")
    read -r USR SYS REAL <<<"$t"
}
# nginx's CPU µs per request it served ($1) over the last measure, and the share of a core its
# worker was busy over the client's run (its wall-clock time, start-up and reports included).
nginx_per_req() {
    awk -v c="$NGINX_CPU" -v n="$1" -v d="$REAL" 'BEGIN {
        printf "  nginx: %.2f µs CPU/req, its worker %.0f%% of a core%s", c / n, c / d / 1e4,
            (c / d / 1e4 >= 95 ? " (server-bound: nginx set the pace)" : "") }'
}
# CPU µs per request (user + sys, then each), from the CPU seconds and req/s over DURATION.
per_req() {
    awk -v u="$USR" -v s="$SYS" -v r="$1" -v d="$DURATION" 'BEGIN {
        n = r * d; printf "%5.2f µs CPU/req (user %.2f, sys %.2f)", (u + s) * 1e6 / n, u * 1e6 / n, s * 1e6 / n }'
    [[ ! -s $WORK/rss ]] || awk '{ printf ", max RSS %.1f MiB", $1 / 1024 }' "$WORK/rss"
}

# Append this round's figures of client $1 (req/s $2, nginx served $3) to $WORK/tally.$1, one
# line per round: req/s, ratio to this round's wrk, user µs/req, sys µs/req, max RSS MiB,
# nginx µs/req, nginx's worker's % of a core; for the final table.
tally() {
    local rss=0
    [[ ! -s $WORK/rss ]] || rss=$(awk '{ printf "%.1f", $1 / 1024 }' "$WORK/rss")
    awk -v u="$USR" -v s="$SYS" -v r="$2" -v w="$WRK_RPS" -v d="$DURATION" -v m="$rss" \
        -v c="$NGINX_CPU" -v k="$3" -v t="$REAL" 'BEGIN {
        n = r * d; printf "%.0f %.2f %.2f %.2f %s %.2f %.0f\n", r, r / w, u * 1e6 / n, s * 1e6 / n, m, c / k, c / t / 1e4 }' >>"$WORK/tally.$1"
    echo "$1" >>"$WORK/clients"
}
# Column $2 of $WORK/tally.$1: its median over the rounds (max for RSS, column 5).
col() {
    if [[ $2 == 5 ]]; then awk '$5 > m { m = $5 } END { print m }' "$WORK/tally.$1"; return; fi
    awk -v c="$2" '{ print $c }' "$WORK/tally.$1" | sort -n |
        awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
final_table() {
    echo
    echo "final table: median over $ROUNDS round(s) of ${DURATION}s, $CONCURRENCY connections, $SCHEME, nginx 1 worker, $(nproc) cores${CLIENT_CPUS:+, clients limited to $CLIENT_CPUS cores} (RSS: max)"
    printf '%-22s %10s %10s %13s %13s %9s %13s %11s\n' client "req/s" "x wrk" "user µs/req" "sys µs/req" "RSS MiB" "nginx µs/req" "nginx busy"
    local c
    for c in $(awk '!seen[$0]++' "$WORK/clients"); do
        printf '%-22s %10s %10s %13s %13s %9s %13s %10s%%\n' "$c" "$(col "$c" 1)" "$(col "$c" 2)" "$(col "$c" 3)" \
            "$(col "$c" 4)" "$(col "$c" 5)" "$(col "$c" 6)" "$(col "$c" 7)"
    done
}

# One round: wrk, then each runtime; prints a line per client and appends the ratios to
# $WORK/ratio.<runtime> (one per round) for the medians at the end.
STATUS=0
round() {
    BEFORE=$(served)
    measure wrk -t1 -c"$CONCURRENCY" -d"${DURATION}s" -s "$WORK/post.lua" "$URL"
    WRK_RPS=$(rps <<<"$OUT")
    if grep -q "Non-2xx" <<<"$OUT"; then grep "Non-2xx" <<<"$OUT" >&2; fi
    WRK_SERVED=$(($(served) - BEFORE - 1))
    printf '%-22s %10.0f req/s   %s\n' "wrk -t1" "$WRK_RPS" "$(per_req "$WRK_RPS")"
    tally wrk-t1 "$WRK_RPS" "$WRK_SERVED"
    # wrk does not count the requests in flight when it stops: nginx may see up to C more.
    echo "  wrk counted $(count <<<"$OUT"), nginx served $WRK_SERVED"
    nginx_per_req "$WRK_SERVED"
    echo

    # oha (the Rust load generator the issue names), when installed (`cargo install oha`).
    OHA_RPS=""
    if [[ -n $OHA ]]; then
        BEFORE=$(served)
        local oha_headers=(-H "Accept: application/json" -T application/json) h
        if ((${#REQ_HEADERS[@]})); then
            oha_headers=()
            for h in "${REQ_HEADERS[@]}"; do oha_headers+=(-H "$h"); done
        fi
        measure "$OHA" -z "${DURATION}s" -c "$CONCURRENCY" -m POST "${oha_headers[@]}" \
            -D "$BODY_FILE" --no-tui "$URL"
        OHA_RPS=$(awk '/Requests\/sec:/ { print $2; exit }' <<<"$OUT")
        OHA_SERVED=$(($(served) - BEFORE - 1))
        printf '%-22s %10.0f req/s   %s\n' "oha" "$OHA_RPS" "$(per_req "$OHA_RPS")"
        tally oha "$OHA_RPS" "$OHA_SERVED"
        echo "  nginx served $OHA_SERVED"
        nginx_per_req "$OHA_SERVED"
        echo
    fi

    for RUNTIME in $RUNTIMES; do
        export URL CONCURRENCY DURATION BODY_FILE RUNTIME BENCH_BIN WORK
        BEFORE=$(served)
        measure eval "$HUBLOAD_CMD"
        SERVED=$(($(served) - BEFORE - 1))
        HL_RPS=$(rps <<<"$OUT")
        if grep -q "[1-9][0-9]* not accepted" <<<"$OUT"; then head -1 <<<"$OUT" >&2; fi
        RATIO=$(awk -v a="$HL_RPS" -v b="$WRK_RPS" 'BEGIN { printf "%.2f", a / b }')
        echo "$RATIO" >>"$WORK/ratio.$RUNTIME"
        printf '%-22s %10.0f req/s   %s   ratio %sx wrk\n' "hubload ($RUNTIME)" \
            "$HL_RPS" "$(per_req "$HL_RPS")" "$RATIO"
        tally "hubload-$RUNTIME" "$HL_RPS" "$SERVED"
        if [[ -n $OHA_RPS ]]; then
            OHA_RATIO=$(awk -v a="$HL_RPS" -v b="$OHA_RPS" 'BEGIN { printf "%.2f", a / b }')
            echo "$OHA_RATIO" >>"$WORK/ratio_oha.$RUNTIME"
            echo "  ratio ${OHA_RATIO}x oha"
        fi
        # Every request the client counts must be one nginx served, and the other way round.
        echo "  hubload counted $(count <<<"$OUT"), nginx served $SERVED"
        nginx_per_req "$SERVED"
        echo
        if [[ $(count <<<"$OUT") != "$SERVED" ]]; then
            echo "MISMATCH: the client's count does not reconcile with nginx's" >&2
            STATUS=1
        fi
    done
}

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
OHA=$(command -v oha || { [[ -x $HOME/.cargo/bin/oha ]] && echo "$HOME/.cargo/bin/oha"; } || true)
[[ ${TLS:-} != 1 ]] || OHA=""

for ((r = 1; r <= ROUNDS; r++)); do
    ((ROUNDS == 1)) || echo "round $r/$ROUNDS"
    round
done
if ((ROUNDS > 1)); then
    for RUNTIME in $RUNTIMES; do
        echo "median ratio, hubload ($RUNTIME) / wrk over $ROUNDS rounds: $(median "$WORK/ratio.$RUNTIME")x"
        if [[ -f $WORK/ratio_oha.$RUNTIME ]]; then
            echo "median ratio, hubload ($RUNTIME) / oha over $ROUNDS rounds: $(median "$WORK/ratio_oha.$RUNTIME")x"
        fi
    done
fi
final_table
exit "$STATUS"
