#!/usr/bin/env bash
# The CI's scale check: bench/scale.sh at 10,000 topics over 3 levels of 2 s (no shards), then
# hubload's peak RSS, the largest gap between one level's end and the next level's start, and
# summary.json's size against bounds. Prints scale.sh's row and the bounds; exits 1 on a bound
# exceeded.
#
# Usage: bench/scale-ci.sh [hubload binary]   (default target/debug/hubload)
# Bounds (knobs), about twice what a debug build measured on a 2-core VM at load 8-12
# (bench/README.md): MAX_RSS_MB=110 MAX_GAP_S=5 MAX_SUMMARY_MB=0.5
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/target/debug/hubload}
MAX_RSS_MB=${MAX_RSS_MB:-110}
MAX_GAP_S=${MAX_GAP_S:-5}
MAX_SUMMARY_MB=${MAX_SUMMARY_MB:-0.5}
OUT=$(TOPICS=10000 LEVELS=3 DURATION=2s SHARDS=0 EXTRA=0 bash "$ROOT/bench/scale.sh" "$BIN")
echo "$OUT"
echo "bounds: rss_MB <= $MAX_RSS_MB, gap_s <= $MAX_GAP_S, summ_MB <= $MAX_SUMMARY_MB"
# The row: topics rss_MB wall_s gap_s summ_MB ...
echo "$OUT" | awk -v rss="$MAX_RSS_MB" -v gap="$MAX_GAP_S" -v summ="$MAX_SUMMARY_MB" '
    $1 == 10000 {
        seen = 1
        if ($2 > rss) { print "scale: peak RSS " $2 " MB > " rss " MB"; bad = 1 }
        if ($4 == "-" || $4 > gap) { print "scale: gap between levels " $4 " s > " gap " s"; bad = 1 }
        if ($5 == "-" || $5 > summ) { print "scale: summary.json " $5 " MB > " summ " MB"; bad = 1 }
    }
    END {
        if (!seen) { print "scale: no row for 10000 topics"; exit 1 }
        exit bad
    }'
