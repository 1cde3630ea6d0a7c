#!/usr/bin/env bash
# Installs the project's LibTorch: PyPI's torch wheel, CUDA-enabled, into a project-local virtual
# environment (.venv at the repository's root, or $PIPETWIN_VENV), never the system Python.
# Idempotent: a second run checks the pinned versions and installs nothing.
#
#   scripts/setup-torch.sh          prints the CMake prefix of its LibTorch on the last line
#
# Why these pins:
#   torch 2.11.0            the GPU machine's PyTorch line (2.11.0+cu130), so that one source
#                           builds against both; the wheel holds LibTorch (headers, libtorch*.so,
#                           share/cmake/Torch) built for CUDA 13.0 with c10d's Gloo and NCCL
#   nvidia-cusparselt-cu13, nvidia-nvshmem-cu13, nvidia-cufile
#                           the libraries of libtorch_cuda.so this machine's CUDA 13 toolkit lacks
#                           (cuSPARSELt, NVSHMEM, cuFile); the rest (cuBLAS, cuDNN, NCCL, ...) are
#                           the toolkit's, found through ld.so.conf, so the wheel's other
#                           dependencies (about 2 GB of CUDA wheels) are not installed
#   filelock ... numpy      what `import torch` needs (the scripts' torch.distributed.pipelining
#                           checks); torch's own requirements, resolved once and pinned
# c10d's headers come in the wheel; Gloo's, which they include, from Debian's libgloo-dev
# (scripts/install-deps.sh): the wheel links Gloo into libtorch_cpu.so but ships no gloo/ headers.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${PIPETWIN_VENV:-$root/.venv}
python=${PIPETWIN_PYTHON:-python3}

pins=(torch==2.11.0 nvidia-cusparselt-cu13==0.8.0 nvidia-nvshmem-cu13==3.4.5
      nvidia-cufile==1.15.1.6 filelock==4.3.1 typing-extensions==4.16.0 sympy==1.14.0
      mpmath==1.3.0 networkx==3.6.1 jinja2==3.1.6 markupsafe==3.0.4 fsspec==2026.9.0
      setuptools==80.9.0 numpy==2.4.6)

installed() {
  [ -x "$venv/bin/python" ] || return 1
  "$venv/bin/python" - "${pins[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version, PackageNotFoundError
for pin in sys.argv[1:]:
    name, wanted = pin.split("==")
    try:
        if version(name) != wanted:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PY
}

start=$(date +%s)
if installed; then
  echo "setup-torch: torch 2.11.0 present in $venv" >&2
else
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  echo "setup-torch: installing ${pins[*]} into $venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: "${pins[@]}"
  installed || { echo "setup-torch: the pinned packages did not install" >&2; exit 1; }
  echo "setup-torch: done in $(( $(date +%s) - start )) s" >&2
fi
"$venv/bin/python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)'
