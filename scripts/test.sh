#!/usr/bin/env bash
# One command from a fresh machine to every test: installs what is missing, builds, runs CTest.
# The executor's suites (LibTorch, several processes) run too: scripts/install-deps.sh sets up the
# project's LibTorch (scripts/setup-torch.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"
start=$(date +%s)
"$root/scripts/build.sh"
echo "test.sh: built in $(( $(date +%s) - start )) s"
cd "${PIPETWIN_BUILD_DIR:-$root/build}"
ctest --output-on-failure --timeout 600 -j "$(nproc 2>/dev/null || echo 2)" "$@"
