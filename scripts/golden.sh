#!/usr/bin/env bash
# Rewrites the golden outputs (tests/golden/*.tesh) with what this build prints now and shows
# what changed (git diff). Check each change is one you meant before committing it.
#   scripts/golden.sh [FILE.tesh ...]     default: every tests/golden/*.tesh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
cd "$root"
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(tests/golden/*.tesh)
python3 tests/golden/tesh.py --bin "$build/bin" --update "${files[@]}"
git --no-pager diff --stat -- "${files[@]}"
git --no-pager diff -- "${files[@]}"
