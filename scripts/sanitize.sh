#!/usr/bin/env bash
# An ASan+UBSan build of the core and the simulator with clang (build-sanitize/, or
# $PIPETWIN_SANITIZE_DIR): their test suites run under the sanitizers (any finding is fatal), and
# the libFuzzer targets of tests/fuzz/ are built for scripts/fuzz.sh. SimGrid's actors run as
# threads there (sim/platform.h), so ASan sees no stack switching. Incremental; ccache keeps a
# fresh clone cheap.
#   scripts/sanitize.sh [--build-only]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_SANITIZE_DIR:-$root/build-sanitize}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++ -DPIPETWIN_SANITIZE=address,undefined -DPIPETWIN_FUZZ=ON \
    -DPIPETWIN_WITH_SIM=ON -DPIPETWIN_WITH_EXEC=OFF \
    >"$build.configure.log" 2>&1 || { cat "$build.configure.log" >&2; exit 1; }
fi
start=$(date +%s)
cmake --build "$build" --parallel "$(nproc 2>/dev/null || echo 2)" >"$build.build.log" 2>&1 || {
  grep -E "error|FAILED" -A3 "$build.build.log" | head -60 >&2; exit 1; }
echo "sanitize.sh: built in $(( $(date +%s) - start )) s"
[ "${1:-}" = "--build-only" ] && exit 0
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
cd "$build"
ctest --output-on-failure --timeout 600 -j "$(nproc 2>/dev/null || echo 2)" -R '^[A-Za-z]' \
  -E '^(Golden|Layout|FrontEnd|Scripts)\.'
