#!/usr/bin/env bash
# Remakes the two pictures in docs/ from a trace (default demo-output/slow, which tools/demo.sh
# leaves):
#   docs/report.png  the top of its report.html, rendered by headless Chromium
#   docs/vite.png    ViTE's window on the same trace under Xvfb, message arrows included
#                    (tests/tools/check_vite.py takes it, and fails when the arrows are missing)
# Needs the build in build/ and what tools/install-deps.sh installs (chromium, vite, xvfb,
# imagemagick).
set -euo pipefail
cd "$(dirname "$0")/.."
trace=${1:-demo-output/slow}
export PYTHONPATH="$PWD/postproc${PYTHONPATH:+:$PYTHONPATH}" PERFVAR_LIB="$PWD/build/libperfvar.so"

python3 -m perfvar analyze "$trace" >/dev/null
chromium=$(command -v chromium || command -v chromium-browser)
# Root has no user namespace sandbox to drop into; the page is our own file.
"$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
    --window-size=1280,1800 \
    --virtual-time-budget=20000 --screenshot="$PWD/docs/report.png" \
    "file://$(realpath "$trace")/report.html" 2>/dev/null

shots=$(mktemp -d)
trap 'rm -rf "$shots"' EXIT
python3 tests/tools/check_vite.py "$trace" --out "$shots"
convert "$shots/vite.png" -resize '1280x>' docs/vite.png
echo "docs/report.png and docs/vite.png remade from $trace"
