#!/usr/bin/env bash
# Takes a PNG screenshot of a hubload HTML report (report.html or compare.html) with headless
# Chromium, installing Chromium first when it is missing (Debian/Ubuntu, as root).
#
#   scripts/screenshot-report.sh REPORT.html [OUT.png] [WIDTH,HEIGHT]
#
# Defaults: OUT.png = report.png next to the page, window 1280,2400.
# The sample page for the README comes from the committed fixture:
#   HUBLOAD_SAMPLE_HTML=/tmp/sample.html cargo test -p hubload --lib write_sample_html -- --ignored
#   scripts/screenshot-report.sh /tmp/sample.html docs/report-screenshot.png
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
