#!/usr/bin/env bash
# How long a report.html takes to load in headless chromium: the page's own clock at its load
# event (`performance.now()`: fetch, parse, layout of the inline SVG, the scripts), read back
# from the DOM chromium dumps, and the wall time of the whole chromium process.
#
# The page is copied with one script appended that records the clock at `load` on the root
# element; the report itself is not changed. RUNS runs, the median printed.
#
# Usage: bench/html-load.sh REPORT.html   (RUNS=3, CHROMIUM=chromium)
# Prints: size_MB load_ms wall_s
set -euo pipefail
PAGE=${1:?usage: bench/html-load.sh REPORT.html}
RUNS=${RUNS:-3}
CHROMIUM=${CHROMIUM:-chromium}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp "$PAGE" "$WORK/page.html"
echo "<script>addEventListener('load', () => document.documentElement.setAttribute('data-load-ms', performance.now().toFixed(0)))</script>" >>"$WORK/page.html"
loads=() walls=()
for _ in $(seq "$RUNS"); do
    start=$(date +%s.%N)
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$WORK/profile" --dump-dom "file://$WORK/page.html" >"$WORK/dom.html" 2>/dev/null
    end=$(date +%s.%N)
    ms=$(grep -o 'data-load-ms="[0-9]*"' "$WORK/dom.html" | grep -o '[0-9]*' || true)
    [[ -n $ms ]] || { echo "html-load: no load time in the dumped page" >&2; exit 1; }
    loads+=("$ms")
    walls+=("$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '%.2f %s %s\n' "$(awk -v b="$(stat -c %s "$PAGE")" 'BEGIN { print b / 1048576 }')" \
    "$(median "${loads[@]}")" "$(median "${walls[@]}")"
