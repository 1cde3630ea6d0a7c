#!/usr/bin/env bash
# The SVG pictures looked at in a real browser: `pipetwin simulate --svg` of 4, 64 and 1,024
# workers and `pipetwin schedule --format svg` of interleaved 1F1B, rendered by headless Chromium
# (Debian's chromium) to PNG, 1,600 px wide and as tall as the picture's viewBox says at that
# width. Each PNG must have that size and not be blank (png_check.py). Skipped (exit 77) without
# chromium.
#   svg_render_test.sh PIPETWIN [DIR]    DIR keeps the SVGs and PNGs (default: a temporary one)
set -euo pipefail
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pipetwin=$1
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then echo "skipped: no chromium (scripts/install-deps.sh)"; exit 77; fi
if [ -n "${2:-}" ]; then dir=$2; mkdir -p "$dir"; else
  dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT; fi
width=1600

"$pipetwin" simulate "$source_dir/scenarios/local-gpt-4stage-2bw.json" --svg "$dir/4.svg" >/dev/null
"$pipetwin" simulate "$source_dir/scenarios/sim-gpt3-64.json" --svg "$dir/64.svg" >/dev/null
"$pipetwin" simulate "$source_dir/scenarios/sim-gpt3-1024.json" --svg "$dir/1024.svg" >/dev/null
"$pipetwin" schedule --kind interleaved --stages 4 --chunks 2 --microbatches 8 --format svg \
  --output "$dir/interleaved.svg"

for name in 4 64 1024 interleaved; do
  svg="$dir/$name.svg"
  read -r vw vh < <(sed -n 's/.*viewBox="0 0 \([0-9.]*\) \([0-9.]*\)".*/\1 \2/p' "$svg" | head -1)
  height=$(python3 -c "import math; print(math.ceil($width * $vh / $vw))")
  workers=$(grep -o '[0-9]* workers in [0-9]* rows' "$svg" | head -1)
  # --no-sandbox: Chromium refuses to run as root with its sandbox; the page is our own file.
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$dir/profile" --window-size="$width,$height" \
    --screenshot="$dir/$name.png" "file://$svg" >"$dir/$name.chromium.log" 2>&1 || {
      cat "$dir/$name.chromium.log" >&2; exit 1; }
  echo "$name: $workers, $(stat -c %s "$svg") bytes of SVG"
  python3 "$source_dir/tests/scripts/png_check.py" "$dir/$name.png" "$width" "$height"
done
