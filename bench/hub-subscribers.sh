#!/usr/bin/env bash
# Publish and delivery throughput of the reference hub (release build) with 0, 1 and 10
# subscribers on one topic. wrk (1 thread, C connections) POSTs a ~550-byte identity event to
# ?hub.mode=publish; the subscribers are callback paths on a one-worker nginx (a server we
# did not write) answering every delivery POST 204 and echoing the verification challenge.
# Everything stays on 127.0.0.1. Usage: bench/hub-subscribers.sh [duration, e.g. 5s] [connections]
# Extra hub flags: HUB_FLAGS="--delivery-concurrency 8" bench/hub-subscribers.sh
# Then (RATED=1, the default) a rate-limited publisher: hubload's open model at RATE events/s
# (default: half the publish-only rate wrk measured) for the same duration, one subscriber,
# RATED_ROUNDS times (default 3), each printing a yes/no verdict: did the hub deliver every
# accepted publish at that rate with none dropped. PUB_THREADS (default 1): the publisher's --threads.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10s}
CONNS=${2:-50}
SUBS_LIST=${SUBS_LIST:-"0 1 10"}
HUB_FLAGS=${HUB_FLAGS:-}
TOPIC="acme.0d5e7f.schema.WSO2.v1.event.login"
SECS=${DURATION%s}
[[ "$SECS" =~ ^[0-9]+$ ]] || { echo "duration: expected whole seconds such as 5s, got $DURATION" >&2; exit 2; }
for tool in wrk nginx curl python3; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: apt-get install -y $tool" >&2; exit 2; }
done
RATED=${RATED:-1}
RATE=${RATE:-}
RATED_ROUNDS=${RATED_ROUNDS:-3}
PUB_THREADS=${PUB_THREADS:-1}
source bench/nginx.sh
bench_setup
# HUB_BIN: another hub binary to measure (for example a copy of an earlier build).
HUB_BIN=${HUB_BIN:-$BIN/hubload-hub}

cat > "$WORK/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["activityid"] = "3f0e2c1a-8d4b-4f7e-9a61-2b5c7d9e0f11"
wrk.body = '{"iss":"https://api.asgardeo.io/t/acme","jti":"6f1c2e0a-93b7-4c55-8d1e-0b9f7a3c2d41","iat":1764480000000,"events":{"https://schemas.identity.wso2.org/events/login/event-type/loginSuccess":{"user":{"id":"5b2d8f1e-7c3a-4e9b-a0d6-1f4e8c2b7a93","ref":"https://api.asgardeo.io/t/acme/scim2/Users/5b2d8f1e-7c3a-4e9b-a0d6-1f4e8c2b7a93"},"tenant":{"id":"12402","name":"acme"},"userStore":{"id":"UFJJTUFSWQ==","name":"PRIMARY"},"application":{"id":"9e3f6a2b-1c4d-4b8e-8f7a-6d5c4b3a2e1f","name":"console"},"authenticationMethods":["BasicAuthenticator"]}}}'
LUA

# The subscriber: one nginx worker. Deliveries (POST) get 204 and their body is discarded.
# The verification GET carries hub.challenge; nginx's $arg_NAME cannot name an argument with
# a dot in it ($arg_hub_challenge looks for "hub_challenge"), so a map over $args extracts it.
# stub_status counts the requests nginx answered, to reconcile with the hub's count.
# Free ports unless given (a fixed port in the ephemeral range can be held by a TIME-WAIT).
HUB_PORT=${HUB_PORT:-$(free_port)}
SINK_PORT=${SINK_PORT:-$(free_port)}
HUB="http://127.0.0.1:$HUB_PORT"
nginx_start "$WORK/nginx" 3072 "map \$args \$challenge { \"~(^|&)hub\\.challenge=(?<c>[^&]*)\" \$c; default \"\"; }
  server {
    listen 127.0.0.1:$SINK_PORT;
    location = /nginx_status { stub_status; }
    location / {
      if (\$challenge) { return 200 \$challenge; }
      return 204;
    }
  }"; PIDS+=("$NGINX_PID")

wait_http() { for _ in $(seq 100); do curl -fs "$1" >/dev/null 2>&1 && return 0; sleep 0.05; done; echo "no answer from $1" >&2; exit 2; }
# nginx's own count of requests so far (stub_status "requests", this one included).
nginx_requests() { nginx_served "$SINK_PORT"; }
stat() { curl -fs "$HUB/stats" | python3 -c "import json,sys; s=json.load(sys.stdin); d=s['distribution']; print($1)"; }
# $1 µs over $2 events, one decimal ("-" for no events).
per() { awk -v a="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.1f", a / n; else printf "-" }'; }

# One hub with SUBS nginx subscribers on TOPIC, verified; sets HUB_PID and NGINX_BEFORE.
start_hub() {
  # shellcheck disable=SC2086
  RUST_LOG=warn "$HUB_BIN" --listen "127.0.0.1:$HUB_PORT" $HUB_FLAGS & HUB_PID=$!
  wait_http "$HUB/stats"
  curl -fs -X POST -H 'content-type: application/json' "$HUB/hub?hub.mode=register&hub.topic=$1" >/dev/null
  for i in $(seq "$2"); do
    curl -fs -X POST "$HUB/hub" -d "hub.mode=subscribe&hub.topic=$1&hub.callback=http://127.0.0.1:$SINK_PORT/cb$i" >/dev/null
  done
  for _ in $(seq 100); do
    [ "$(stat "s['topics']['$1']['subscribers']")" = "$2" ] && break; sleep 0.05
  done
  [ "$(stat "s['topics']['$1']['subscribers']")" = "$2" ] || { echo "only some of $2 subscriptions were verified" >&2; exit 1; }
  NGINX_BEFORE=$(nginx_requests)
}

# After the load: wait for the hub to drain (at most 30 s), read its counts and CPU, check
# nginx's count against the hub's attempts, stop the hub. Sets ACC DEL ATT WRITES DROP PEND WHY CPU SEEN.
finish_hub() {
  for _ in $(seq 300); do [ "$(stat "d['pending']")" = 0 ] && break; sleep 0.1; done
  read -r ACC DEL ATT WRITES DROP PEND WHY < <(stat "s['publish']['accepted'], d['delivered'], d['attempts'], d.get('writes', 0), d['dropped'], d['pending'], 'full=%d;bytes=%d;ended=%d' % (d['dropped_queue_full'], d['dropped_queue_bytes'], d['dropped_ended'])" | tr -d "(),'")
  CPU=$(( $(cpu_us "$HUB_PID") - CPU0 ))
  SEEN=$(( $(nginx_requests) - NGINX_BEFORE - 1 ))
  kill -INT "$HUB_PID"; wait "$HUB_PID" || true
  [ "$SEEN" = "$ATT" ] || { echo "nginx saw $SEEN delivery POSTs but the hub counted $ATT attempts" >&2; exit 1; }
}

# publish/s: wrk's rate. delivered/s: deliveries answered 2xx while wrk ran, per second.
# accepted: the hub's count (it includes the requests in flight when wrk stopped).
# delivered/dropped/pending: after the hub drained (at most 30 s), dropped with its reasons.
# nginx-seen: delivery POSTs nginx answered (its stub_status), which must equal attempts.
# cpu/pub, cpu/del: the hub process's CPU (user + sys) over the whole case, per accepted
# publish and per delivery attempt (the latter includes the publishes' share); del-cpu: the
# delivery's own share, (CPU − accepted × the publish-only case's cpu/pub) / attempts.
# att/wr: attempts per write to the callbacks (the hub's `writes`): the mean pipeline depth.
printf "%-5s %10s %10s %11s %10s %10s %8s %8s %10s %8s %8s %8s %6s %s\n" subs publish/s accepted delivered/s delivered attempts dropped pending nginx-seen cpu/pub cpu/del del-cpu att/wr drop-why
PUBLISH_ONLY=""
PUB_CPU=""
# The delivery's own CPU per attempt: what the hub spent beyond the publishes' share.
# Attempts per write, two decimals ("-" when the hub does not count writes or wrote nothing).
depth() { awk -v a="$ATT" -v w="$WRITES" 'BEGIN { if (w > 0) printf "%.2f", a / w; else printf "-" }'; }
del_cpu() { [ -n "$PUB_CPU" ] || { printf -; return; }; awk -v c="$CPU" -v a="$ACC" -v p="$PUB_CPU" -v n="$ATT" 'BEGIN { if (n > 0) printf "%.1f", (c - a * p) / n; else printf "-" }'; }
for SUBS in $SUBS_LIST; do
  start_hub "$TOPIC" "$SUBS"
  CPU0=$(cpu_us "$HUB_PID")
  OUT=$(wrk -t1 -c"$CONNS" -d"$DURATION" -s "$WORK/post.lua" "$HUB/hub?hub.mode=publish&hub.topic=$TOPIC")
  DEL_AT_END=$(stat "d['delivered']")
  RPS=$(echo "$OUT" | awk '/Requests\/sec/ {print $2}')
  [ "$SUBS" = 0 ] && PUBLISH_ONLY=$RPS
  finish_hub
  [ "$SUBS" = 0 ] && PUB_CPU=$(per "$CPU" "$ACC")
  printf "%-5s %10s %10s %11s %10s %10s %8s %8s %10s %8s %8s %8s %6s %s\n" "$SUBS" "$RPS" "$ACC" "$((DEL_AT_END / SECS))" "$DEL" "$ATT" "$DROP" "$PEND" "$SEEN" "$(per "$CPU" "$ACC")" "$(per "$CPU" "$ATT")" "$(del_cpu)" "$(depth)" "$WHY"
done

[ "$RATED" = 1 ] || exit 0
# The rate-limited publisher: hubload's open model (constant arrivals) publishing the shared
# topic, which the hub already has registered (hubload's 409 is fine), one nginx subscriber, over
# at most C connections like wrk (without a bound the open model opens one per event in flight).
# publish/s and delivered/s are the hub's counts over the duration. The verdict: the
# publisher kept 95 % of the rate, every accepted publish was delivered, none dropped.
if [ -z "$RATE" ]; then
  [ -n "$PUBLISH_ONLY" ] || { echo "RATE is not set and SUBS_LIST has no 0 case to take half of" >&2; exit 2; }
  RATE=$(awk -v r="$PUBLISH_ONLY" 'BEGIN { printf "%d", r / 2 }')
  GOAL="half the publish-only rate ($PUBLISH_ONLY/s)"
else
  GOAL="RATE=$RATE"
fi
SHARED="hubload.shared.schema.WSO2.v1.event"
echo
echo "rate-limited: hubload --rate $RATE --duration $DURATION, 1 subscriber, $RATED_ROUNDS rounds"
printf "%-5s %8s %10s %10s %11s %10s %10s %8s %8s %10s %8s %8s %8s %6s %s\n" round rate publish/s accepted delivered/s delivered attempts dropped pending nginx-seen cpu/pub cpu/del del-cpu att/wr verdict
YES=0
for r in $(seq "$RATED_ROUNDS"); do
  start_hub "$SHARED" 1
  CPU0=$(cpu_us "$HUB_PID")
  "$BIN/hubload" --hub-url "$HUB/hub" --tenants 1 --channels login --topics shared --rate "$RATE" --pool-per-host "$CONNS" \
    --duration "$DURATION" --threads "$PUB_THREADS" --quiet --out "$WORK/report" >"$WORK/hubload.log" 2>&1 \
    || { cat "$WORK/hubload.log" >&2; echo "hubload failed" >&2; exit 1; }
  finish_hub
  # The publisher must have kept the rate (95 %), else the round says nothing about the hub.
  if [ $((ACC * 100)) -lt $((RATE * SECS * 95)) ]; then VERDICT="no(publisher reached $((ACC / SECS))/s)"
  elif [ "$DROP" = 0 ] && [ "$DEL" = "$ACC" ]; then VERDICT=yes; YES=$((YES + 1))
  else VERDICT="no($WHY)"; fi
  printf "%-5s %8s %10s %10s %11s %10s %10s %8s %8s %10s %8s %8s %8s %6s %s\n" "$r" "$RATE" "$((ACC / SECS))" "$ACC" "$((DEL / SECS))" "$DEL" "$ATT" "$DROP" "$PEND" "$SEEN" "$(per "$CPU" "$ACC")" "$(per "$CPU" "$ATT")" "$(del_cpu)" "$(depth)" "$VERDICT"
done
echo "$GOAL, 1 subscriber, rate kept, every accepted publish delivered and 0 dropped: $([ "$YES" = "$RATED_ROUNDS" ] && echo yes || echo no) ($YES of $RATED_ROUNDS rounds)"
