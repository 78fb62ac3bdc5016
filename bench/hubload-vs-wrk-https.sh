#!/usr/bin/env bash
# The https case of bench/hubload-vs-wrk.sh: the whole hubload CLI vs wrk -t1 over TLS, same
# 543-byte POST, same concurrency, one-worker nginx terminating TLS with a certificate from a
# throw-away CA (hubload trusts it with --ca-cert); counts reconciled with nginx's.
#
# Usage: bench/hubload-vs-wrk-https.sh   (knobs: ROUNDS=3 CONCURRENCY=50 DURATION=10 HUBLOAD_THREADS=1)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
cargo build --quiet --release -p hubload --bin hubload
TLS=1 HUBLOAD_BIN="$ROOT/target/release/hubload" ROUNDS=${ROUNDS:-3} exec bash bench/http-vs-wrk.sh
