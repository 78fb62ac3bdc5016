# The one-worker nginx every bench script measures against or uses as a sink. Sourced, not run:
#   source "$(dirname "$0")/nginx.sh"
#
# nginx_start DIR CONNECTIONS 'HTTP-BLOCK BODY'
#   writes DIR/nginx.conf (one worker, no daemon, no access log, every temp path and the pid
#   under DIR, keep-alive requests unbounded, worker_connections CONNECTIONS + 1024 and a
#   matching worker_rlimit_nofile) around the given http { } body (its server blocks, with
#   their listen lines), starts nginx with prefix DIR, sets NGINX_PID (the master, which only
#   forks) and NGINX_WORKER (its one worker, which answers: nginx's CPU time is that
#   process's), and waits until the worker is up and the first `listen 127.0.0.1:PORT` of
#   the body accepts TCP connections (5 s at most).
# free_port
#   prints a free TCP port on 127.0.0.1.
# hub_start BIN LOG
#   a standalone `BIN hub` on a free 127.0.0.1 port, its output to LOG; sets PORT and HUB_PID.
# tls_cert DIR
#   a throw-away CA (DIR/ca.pem) and a leaf for localhost and 127.0.0.1 signed by it
#   (DIR/leaf.pem, DIR/leaf.key), P-256, valid 2 days, made with openssl.
# login_event
#   prints the 543-byte login event of docs/protocol.md §3 (the body every bench POSTs).
# wrk_post_lua BODY_FILE [HEADER...]
#   prints a wrk script POSTing BODY_FILE with Content-Type and Accept application/json, or
#   with the given `Name: value` headers instead when there are any.
# padded_event LENGTH
#   prints the login event with a `"pad"` member of `x`s making it LENGTH bytes (the event
#   itself when LENGTH is shorter than it with an empty pad).
# nginx_served STATUS_PORT
#   prints nginx's own request count (stub_status `requests`; this request is counted in it).
# HUB_ACCEPT
#   the location that answers like a hub accepting a publish (docs/protocol.md §2): 200,
#   application/x-www-form-urlencoded, `hub.mode=accepted`, for every path under /hub.
#
# bench_setup
#   builds the release binaries of the hub and callback benches with one command (the same
#   feature set for every script, so nothing is rebuilt between them; CARGO_TARGET_DIR,
#   default target), and sets BIN (the release directory), TCK (clock ticks per second),
#   WORK (a fresh temporary directory), PIDS (processes to end at exit; add to it) and an
#   EXIT trap that ends them and removes WORK.
# cpu_us PID
#   the CPU time (user + sys) of process PID so far, in µs (/proc/PID/stat fields 14, 15).
# capture_publish HUBLOAD DIR [COUNT [HUBLOAD ARGS...]]
#   runs HUBLOAD for COUNT publishes (default 2,000; one shared topic, plus any further
#   HUBLOAD ARGS) against bench/capture-request.py and
#   sets what a reference client needs to send the same request: REQ_PATH, REQ_HEADERS
#   ('Name: value', Host and Content-Length left out), REQ_BODY_MEAN, REQ_MEAN, REQ_COUNT;
#   H2LOAD_FIELDS (the fields as h2load's -H arguments, names in lowercase as HTTP/2 sends
#   them); and writes DIR/body.json, the login event padded to hubload's mean body length.
#
# Every address is 127.0.0.1.

# shellcheck disable=SC2034 # BIN, TCK, PIDS are for the scripts that source this file
bench_setup() {
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
    cargo build --release -q -p hubload -p hubload-hub --bin hubload --bin hubload-hub --example callback_server
    BIN="$CARGO_TARGET_DIR/release"
    TCK=$(getconf CLK_TCK)
    WORK=$(mktemp -d)
    PIDS=()
    trap bench_cleanup EXIT
}

bench_cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}

capture_publish() {
    local bin=$1 dir=$2 count=${3:-2000} port pid field
    shift $(($# < 3 ? $# : 3))
    coproc CAPTURE { exec python3 "$(dirname "${BASH_SOURCE[0]}")/capture-request.py" "$count" "$dir/request.sh"; }
    pid=$CAPTURE_PID
    read -r port <&"${CAPTURE[0]}"
    "$bin" --hub-url "http://127.0.0.1:$port/hub" --concurrency 4 --requests "$count" --threads 1 \
        --quiet --tenants 1 --topics shared "$@" --out "$dir/capture" >"$dir/capture.log" 2>&1 ||
        { cat "$dir/capture.log" >&2; kill "$pid"; return 2; }
    wait "$pid" || { echo "the capture of hubload's publish failed" >&2; return 2; }
    # shellcheck disable=SC1091 # written just above
    source "$dir/request.sh"
    padded_event "$REQ_BODY_MEAN" >"$dir/body.json"
    H2LOAD_FIELDS=()
    for field in "${REQ_HEADERS[@]}"; do
        H2LOAD_FIELDS+=(-H "$(tr '[:upper:]' '[:lower:]' <<<"${field%%:*}"):${field#*:}")
    done
}

cpu_us() { awk -v t="$TCK" '{print int(($14 + $15) * 1000000 / t)}' "/proc/$1/stat"; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# hub_start BIN LOG: a standalone reference hub (`BIN hub`) on a free 127.0.0.1 port, its output
# to LOG; sets PORT and HUB_PID and waits (5 s at most) until it accepts TCP connections.
hub_start() {
    PORT=$(free_port)
    "$1" hub --listen "127.0.0.1:$PORT" >"$2" 2>&1 &
    HUB_PID=$!
    for _ in $(seq 100); do
        (echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0
        sleep 0.05
    done
}

# shellcheck disable=SC2034 # used by the scripts that source this file
HUB_ACCEPT='location /hub {
            default_type application/x-www-form-urlencoded;
            return 200 "hub.mode=accepted";
        }'

nginx_start() {
    local dir=$1 conns=$2 body=$3 port
    mkdir -p "$dir/tmp"
    cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
worker_rlimit_nofile $((conns * 2 + 1024));
events { worker_connections $((conns + 1024)); }
http {
    access_log off;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    keepalive_requests 100000000;
    $body
}
CONF
    "$(command -v nginx || echo /usr/sbin/nginx)" -p "$dir" -c "$dir/nginx.conf" &
    NGINX_PID=$!
    port=$(grep -o 'listen 127\.0\.0\.1:[0-9]*' <<<"$body" | head -1 | cut -d: -f2)
    for _ in $(seq 50); do
        # `|| true`: under `set -e -o pipefail` a worker not forked yet would end the caller.
        NGINX_WORKER=$(pgrep -P "$NGINX_PID" | head -1 || true)
        [[ -n $NGINX_WORKER ]] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nginx did not start its worker and listen on 127.0.0.1:$port; see $dir/error.log" >&2
    return 1
}

tls_cert() {
    local ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
    (cd "$1" &&
        openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 2 -subj "/CN=bench CA" &&
        openssl req "${ec[@]}" -keyout leaf.key -out leaf.csr -subj /CN=localhost &&
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >leaf.ext &&
        openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem \
            -days 2 -extfile leaf.ext) >/dev/null 2>&1
}

login_event() {
    printf '%s' '{"iss":"https://api.asgardeo.io/t/tnt7","jti":"3f9c2a1e-7b4d-4e8a-9c61-2d5f0b8e7a13","iat":1764478800000,"events":{"https://schemas.identity.wso2.org/events/login/event-type/loginSuccess":{"user":{"id":"8d1e4c7a-2b9f-4a63-b0d5-6e2f1c9a8b47","ref":"https://api.asgardeo.io/t/tnt7/scim2/Users/8d1e4c7a-2b9f-4a63-b0d5-6e2f1c9a8b47"},"tenant":{"id":"12402","name":"tnt7"},"userStore":{"id":"UFJJTUFSWQ==","name":"PRIMARY"},"application":{"id":"c4a7e2d9-5f1b-4c83-a6e0-9b2d7f4e1a58","name":"app07"},"authenticationMethods":["BasicAuthenticator"]}}}'
}

wrk_post_lua() {
    local body=$1 h
    shift
    (($#)) || set -- "Content-Type: application/json" "Accept: application/json"
    echo 'wrk.method = "POST"'
    for h in "$@"; do
        printf 'wrk.headers["%s"] = "%s"\n' "${h%%:*}" "$(sed 's/^ *//' <<<"${h#*:}")"
    done
    cat <<LUA
local f = io.open("$body", "rb")
wrk.body = f:read("*a")
f:close()
LUA
}

padded_event() {
    local event pad
    event=$(login_event)
    pad=$(($1 - ${#event} - 9)) # 9: ,"pad":""
    if ((pad < 0)); then printf '%s' "$event"; return; fi
    printf '%s,"pad":"%s"}' "${event%\}}" "$(head -c "$pad" /dev/zero | tr '\0' x)"
}

nginx_served() {
    exec 3<>"/dev/tcp/127.0.0.1/$1"
    printf 'GET /nginx_status HTTP/1.0\r\nHost: bench\r\n\r\n' >&3
    awk 'f { print $3; exit } /accepts handled requests/ { f = 1 }' <&3
    exec 3<&-
}
