#!/usr/bin/env bash
# Installs pipetwin's build and test dependencies from Debian's archive, and only what is missing.
# Idempotent: a second run installs nothing and takes about a second.
#
#   scripts/install-deps.sh            core + simulator + executor (LibTorch, Gloo headers, data set)
#   scripts/install-deps.sh --core     only what the planners and the simulator need
#
# LibTorch is PyPI's torch wheel in the project's own virtual environment (scripts/setup-torch.sh,
# run from here), CUDA-enabled; it builds against the CUDA 13 toolkit this project's machines
# carry (nvcc, cuBLAS, cuDNN, NCCL under /usr/local/cuda).
#
# Why each package matters:
#   libgloo-dev           the c10d Gloo headers include gloo's, which the torch wheel does not ship
#   python3-venv          the virtual environment of scripts/setup-torch.sh (Debian's python3)
#   python3               the scripts' helpers (netns probe, crossover and sched-idle analyses)
#   clang                 the sanitizer build and the libFuzzer targets (scripts/sanitize.sh, fuzz.sh)
#   slurm-wlm, munge      a one-node Slurm cluster, started by the test of job-array sweeps
#                         (tests/scripts/slurm_sweep_test.sh, scripts/sweep-slurm.sh)
#   chromium, fonts-dejavu-core
#                         headless Chromium renders the SVG pictures to PNG in a test
#                         (tests/scripts/svg_render_test.sh), in the font the pictures name
set -euo pipefail

core_pkgs=(cmake g++ make ninja-build ccache pkg-config python3 libsimgrid-dev nlohmann-json3-dev
           libboost-program-options-dev libgtest-dev libbenchmark-dev clang slurm-wlm munge
           chromium fonts-dejavu-core)
exec_pkgs=(libgloo-dev python3-venv dataset-fashion-mnist)

want=("${core_pkgs[@]}")
if [ "${1:-}" != "--core" ]; then want+=("${exec_pkgs[@]}"); fi

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

torch() {
  if [ "${1:-}" != "--core" ]; then "$(dirname "${BASH_SOURCE[0]}")/setup-torch.sh" >/dev/null; fi
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#want[@]} packages present"
  torch "$@"
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
torch "$@"
