#!/usr/bin/env bash
# Installs pipetwin's build and test dependencies from Debian's archive, and only what is missing.
# Idempotent: a second run installs nothing and takes about a second.
#
#   scripts/install-deps.sh            core + simulator + executor (LibTorch, Gloo headers, data set)
#   scripts/install-deps.sh --core     only what the planners and the simulator need
#
# Why each package matters:
#   libopenblas0-pthread  without it LibTorch silently runs on the reference BLAS (about 7x slower)
#   libgloo-dev           the c10d Gloo headers include gloo's; LibTorch's headers do not compile without them
#   python3               the scripts' helpers (netns probe, crossover and sched-idle analyses)
#   clang                 the sanitizer build and the libFuzzer targets (scripts/sanitize.sh, fuzz.sh)
set -euo pipefail

core_pkgs=(cmake g++ make ninja-build ccache pkg-config python3 libsimgrid-dev nlohmann-json3-dev
           libboost-program-options-dev libgtest-dev libbenchmark-dev clang)
exec_pkgs=(libtorch-dev libgloo-dev libopenblas0-pthread dataset-fashion-mnist)

want=("${core_pkgs[@]}")
if [ "${1:-}" != "--core" ]; then want+=("${exec_pkgs[@]}"); fi

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#want[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null; then sudo=sudo; else
    echo "install-deps: missing ${missing[*]} and not root (no sudo): install them and rerun" >&2; exit 2
  fi
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
