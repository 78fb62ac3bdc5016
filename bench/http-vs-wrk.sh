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
#   TLS=1         nginx terminates TLS (a throw-away CA made with openssl; hubload gets it
#                 with --ca-cert, wrk does not verify); needs HUBLOAD_BIN; oha is skipped.
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
        --tenants 1 --topics shared --out "$WORK/report" >"$WORK/hubload.log" 2>&1 ||
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

# --- server ------------------------------------------------------------------------------
WORK=$(mktemp -d)
NGINX_PID=""
cleanup() {
    if [[ -n $NGINX_PID ]]; then kill "$NGINX_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

source "$ROOT/bench/nginx.sh"
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
wrk_post_lua "$BODY_FILE" >"$WORK/post.lua"

# Check the server answers the POST as a hub would before measuring anything.
if [[ -z ${HUBLOAD_BIN:-} ]]; then
    "$BENCH_BIN" --check --body-file "$BODY_FILE" "$URL" >/dev/null ||
        { echo "nginx did not accept the POST; see $WORK/error.log" >&2; exit 2; }
elif [[ $(curl -sk -X POST -H 'Content-Type: application/json' --data-binary "@$BODY_FILE" "$URL") != hub.mode=accepted ]]; then
    echo "nginx did not accept the POST; see $WORK/error.log" >&2
    exit 2
fi
echo "body $(wc -c <"$BODY_FILE") B, concurrency $CONCURRENCY, ${DURATION}s, nginx 1 worker, $(nproc) cores, $SCHEME"

rps() { awk '/^Requests\/sec:/ { print $2 }'; }
# Requests the client says it completed (`N requests in …`, as wrk prints).
count() { awk '/ requests in / { print $1; exit }'; }
# nginx's own request count (stub_status); this request itself is counted in it.
served() { nginx_served "$STATUS_PORT"; }

# Run a command, keep its stdout in $OUT and its CPU seconds in $USR (user) and $SYS (kernel).
# An external command's peak resident memory (KiB) goes to $WORK/rss (hubload_cli writes it
# itself: /usr/bin/time cannot run a shell function).
measure() {
    local t
    rm -f "$WORK/rss"
    [[ $1 == eval ]] || set -- /usr/bin/time -f %M -o "$WORK/rss" "$@"
    t=$({ TIMEFORMAT='%U %S'; time "$@" >"$WORK/out"; } 2>&1)
    OUT=$(cat "$WORK/out")
    read -r USR SYS <<<"$t"
}
# CPU µs per request (user + sys, then each), from the CPU seconds and req/s over DURATION.
per_req() {
    awk -v u="$USR" -v s="$SYS" -v r="$1" -v d="$DURATION" 'BEGIN {
        n = r * d; printf "%5.2f µs CPU/req (user %.2f, sys %.2f)", (u + s) * 1e6 / n, u * 1e6 / n, s * 1e6 / n }'
    [[ ! -s $WORK/rss ]] || awk '{ printf ", max RSS %.1f MiB", $1 / 1024 }' "$WORK/rss"
}

# Append this round's figures of client $1 (req/s $2) to $WORK/tally.$1, one line per round:
# req/s, ratio to this round's wrk, user µs/req, sys µs/req, max RSS MiB; for the final table.
tally() {
    local rss=0
    [[ ! -s $WORK/rss ]] || rss=$(awk '{ printf "%.1f", $1 / 1024 }' "$WORK/rss")
    awk -v u="$USR" -v s="$SYS" -v r="$2" -v w="$WRK_RPS" -v d="$DURATION" -v m="$rss" 'BEGIN {
        n = r * d; printf "%.0f %.2f %.2f %.2f %s\n", r, r / w, u * 1e6 / n, s * 1e6 / n, m }' >>"$WORK/tally.$1"
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
    echo "final table: median over $ROUNDS round(s) of ${DURATION}s, $CONCURRENCY connections, $SCHEME, nginx 1 worker, $(nproc) cores (RSS: max)"
    printf '%-22s %10s %10s %13s %13s %9s\n' client "req/s" "x wrk" "user µs/req" "sys µs/req" "RSS MiB"
    local c
    for c in $(awk '!seen[$0]++' "$WORK/clients"); do
        printf '%-22s %10s %10s %13s %13s %9s\n' "$c" "$(col "$c" 1)" "$(col "$c" 2)" "$(col "$c" 3)" "$(col "$c" 4)" "$(col "$c" 5)"
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
    tally wrk-t1 "$WRK_RPS"
    # wrk does not count the requests in flight when it stops: nginx may see up to C more.
    echo "  wrk counted $(count <<<"$OUT"), nginx served $WRK_SERVED"

    # oha (the Rust load generator the issue names), when installed (`cargo install oha`).
    OHA_RPS=""
    if [[ -n $OHA ]]; then
        BEFORE=$(served)
        measure "$OHA" -z "${DURATION}s" -c "$CONCURRENCY" -m POST -H "Accept: application/json" \
            -T application/json -D "$BODY_FILE" --no-tui "$URL"
        OHA_RPS=$(awk '/Requests\/sec:/ { print $2; exit }' <<<"$OUT")
        OHA_SERVED=$(($(served) - BEFORE - 1))
        printf '%-22s %10.0f req/s   %s\n' "oha" "$OHA_RPS" "$(per_req "$OHA_RPS")"
        tally oha "$OHA_RPS"
        echo "  nginx served $OHA_SERVED"
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
        tally "hubload-$RUNTIME" "$HL_RPS"
        if [[ -n $OHA_RPS ]]; then
            OHA_RATIO=$(awk -v a="$HL_RPS" -v b="$OHA_RPS" 'BEGIN { printf "%.2f", a / b }')
            echo "$OHA_RATIO" >>"$WORK/ratio_oha.$RUNTIME"
            echo "  ratio ${OHA_RATIO}x oha"
        fi
        # Every request the client counts must be one nginx served, and the other way round.
        echo "  hubload counted $(count <<<"$OUT"), nginx served $SERVED"
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
