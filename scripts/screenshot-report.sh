#!/usr/bin/env bash
# Takes a PNG screenshot of a hubload HTML report (report.html or compare.html) with headless
# Chromium, installing Chromium first when it is missing (Debian/Ubuntu, as root).
#
#   scripts/screenshot-report.sh REPORT.html [OUT.png] [WIDTH,HEIGHT]
#
# Defaults: OUT.png = report.png next to the page, window 1280,2400.
# docs/report-screenshot.png is a run with subscribers against the reference hub (delivery
# charts included):
#   hubload-hub --listen 127.0.0.1:39401 --delivery-concurrency 2 --queue-size 100000 &
#   hubload --hub-url http://127.0.0.1:39401/ --out /tmp/shot --tenants 2 --sps 2 --users 3 \
#     --concurrency 2,8 --duration 6s --subscribers 1 --subscriber-latency 4ms --delivery-grace 8s
#   scripts/screenshot-report.sh /tmp/shot/report.html docs/report-screenshot.png 1280,2700
# A page from the committed fixture (no subscribers):
#   HUBLOAD_SAMPLE_HTML=/tmp/sample.html cargo test -p hubload --lib write_sample_html -- --ignored
set -euo pipefail

if [ $# -lt 1 ] || [ ! -f "$1" ]; then
    echo "usage: $0 REPORT.html [OUT.png] [WIDTH,HEIGHT]" >&2
    exit 2
fi
page=$(realpath "$1")
out=${2:-$(dirname "$page")/report.png}
size=${3:-1280,2400}

browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
    echo "chromium not found; installing it with apt-get" >&2
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
    browser=$(command -v chromium)
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# Chromium writes the file relative to its working directory; give it an absolute path.
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
"$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
    --user-data-dir="$profile" --screenshot="$out" --window-size="$size" \
    "file://$page" 2>/dev/null
test -s "$out"
echo "$out"
