#!/usr/bin/env bash
# Configures and builds pipetwin into build/ (or $PIPETWIN_BUILD_DIR). Incremental and quiet on a
# second run; ccache keeps rebuilds of a fresh clone cheap.
#   scripts/build.sh [--core]   --core: without the LibTorch executor
# The executor builds against the project's LibTorch (scripts/setup-torch.sh's virtual
# environment), naming its libraries so that no other LibTorch on the machine is picked up.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_BUILD_DIR:-$root/build}
exec_flag=()
if [ "${1:-}" = "--core" ]; then
  exec_flag=(-DPIPETWIN_WITH_EXEC=OFF)
else
  torch_cmake=$("$root/scripts/setup-torch.sh" 2>/dev/null | tail -n 1)
  torch_lib=$(cd "$torch_cmake/../../lib" && pwd)
  venv=${PIPETWIN_VENV:-$root/.venv}
  exec_flag=(-DCMAKE_PREFIX_PATH="$torch_cmake" -DPIPETWIN_WITH_EXEC=ON
             -DPIPETWIN_TORCH_PYTHON="$venv/bin/python"
             -Dc10_LIBRARY="$torch_lib/libc10.so" -DC10_CUDA_LIBRARY="$torch_lib/libc10_cuda.so")
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "${exec_flag[@]}" >"$build.configure.log" 2>&1 || { cat "$build.configure.log" >&2; exit 1; }
else
  cmake "$build" "${exec_flag[@]}" >/dev/null
fi
jobs=$(nproc 2>/dev/null || echo 2)
cmake --build "$build" --parallel "$jobs" >"$build.build.log" 2>&1 || {
  grep -E "error|FAILED" -A3 "$build.build.log" | head -60 >&2; exit 1; }
