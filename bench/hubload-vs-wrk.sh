#!/usr/bin/env bash
# The issue's benchmark: the whole hubload CLI vs wrk (1 thread, a Lua POST script), same
# 543-byte POST, same concurrency, same one-worker nginx, in one run; prints the req/s ratio.
#
# Usage: bench/hubload-vs-wrk.sh   (knobs: ROUNDS=3 CONCURRENCY=50 DURATION=10 HUBLOAD_THREADS=1)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
cargo build --quiet --release -p hubload --bin hubload
HUBLOAD_BIN="$ROOT/target/release/hubload" ROUNDS=${ROUNDS:-3} exec bash bench/http-vs-wrk.sh
