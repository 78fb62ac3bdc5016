#!/usr/bin/env bash
# What the two HTTP/2 benches share (sourced by hubload-vs-h2load.sh and hubload-ab.sh): one
# one-worker nginx with an h2c listener ($H2), a plain HTTP/1.1 listener ($H1) and stub_status
# ($STATUS); hubload's publish captured for h2load to send; h2load's run; and one measured row
# per client run. Needs bench/nginx.sh sourced first, DURATION and CAPTURE_BIN set.

TCK=$(getconf CLK_TCK)
WORK=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
# What a client command runs under: set by `measure` to /usr/bin/time (its rusage), or by a
# caller to strace; empty otherwise.
WRAP=()

H2=$(free_port)
H1=$(free_port)
STATUS=$(free_port)
nginx_start "$WORK/nginx" 200 "server {
        listen 127.0.0.1:$H2 http2;
        listen 127.0.0.1:$H1;
        $HUB_ACCEPT
    }
    server {
        listen 127.0.0.1:$STATUS;
        location /nginx_status { stub_status; }
    }"
PIDS+=("$NGINX_PID")

# What h2load sends is hubload's own publish, captured first (bench/capture-request.py) from
# CAPTURE_BIN (set by the caller: the hubload binary measured): its path, its fields (names in
# lowercase, as HTTP/2 sends them) and a body padded to its mean length, so nginx does the same
# work per request for both clients. One difference stays, in h2load's favour: hubload's
# `activityid` is new on every request (sent as a never-indexed literal), h2load repeats the
# captured one (indexed after the first request: one byte).
capture_publish "$CAPTURE_BIN" "$WORK"
echo "# both send hubload's publish: ${REQ_PATH}, fields ${REQ_HEADERS[*]%%:*}, a body of $(wc -c <"$WORK/body.json") B (hubload's mean over $REQ_COUNT publishes)"

# h2load CONNS STREAMS: prints "REQUESTS REQ_PER_S" (succeeded 2xx requests).
run_h2load() {
    "${WRAP[@]}" h2load -c "$1" -m "$2" -t 1 -D "$DURATION" -d "$WORK/body.json" \
        "${H2LOAD_FIELDS[@]}" "http://127.0.0.1:$H2$REQ_PATH" >"$WORK/h2load.out" 2>&1 ||
        { cat "$WORK/h2load.out" >&2; return 1; }
    awk '/^requests:/ { ok = $8 } /^finished in/ { rps = $4 } END { print ok, rps }' "$WORK/h2load.out"
}

# One measured run: LABEL CLIENT-FUNCTION ARGS...; prints one row: requests, req/s, the
# client's user/sys/total CPU µs per request, nginx's worker CPU µs per request and nginx's own
# count of the run's requests (the status request itself left out).
measure() {
    local label=$1 before nginx_before out n rps served ng
    shift
    before=$(nginx_served "$STATUS")
    nginx_before=$(cpu_us "$NGINX_WORKER")
    WRAP=(/usr/bin/time -f "%U %S" -o "$WORK/cpu")
    out=$("$@")
    WRAP=()
    read -r n rps <<<"$out"
    served=$(($(nginx_served "$STATUS") - before - 1))
    ng=$(($(cpu_us "$NGINX_WORKER") - nginx_before))
    awk -v l="$label" -v n="$n" -v r="$rps" -v s="$served" -v g="$ng" '{
        printf "%-24s %9d %10.0f %8.2f %8.2f %8.2f %9.2f %9d\n", l, n, r, $1 * 1e6 / n, $2 * 1e6 / n, ($1 + $2) * 1e6 / n, g / s, s
    }' "$WORK/cpu"
}

# The header line of measure's rows.
measure_header() {
    printf "%-24s %9s %10s %8s %8s %8s %9s %9s\n" run requests req/s "user µs" "sys µs" "cpu µs" "nginx µs" "nginx saw"
}
