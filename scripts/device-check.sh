#!/usr/bin/env bash
# The executor's check on a GPU machine, in one prepared run.
#
#   scripts/device-check.sh --prepare        here (Debian, scripts/build.sh done): put what the GPU
#                                            machine lacks into .device-deps/ (git-ignored)
#   scripts/device-check.sh [--out DIR]      there, with .device-deps/ carried along
#   scripts/device-check.sh --cpu [--out DIR] [--reuse-build DIR]
#                                            every step that needs no GPU, on this machine's CPUs
#
# On the GPU machine it builds pipetwin and pipetwin-exec against that machine's LibTorch (no
# simulator build: the carried pipetwin-sim predicts), runs the executor's correctness tests on the
# GPU (every schedule's weights against a sequential reference computed on the CPU; staged
# messages; an error on a rank's device and a hung rank end the run naming it), profiles a GPT of
# about 1.2B parameters by CUDA events under bf16 autocast, calibrates the GPU (GEMMs, copies,
# messages), then runs `pipetwin compare` on it in 1, 2 and 4 stages with GPipe, Flush and 2BW
# (stages beyond the GPUs share them: messages staged through host memory over Gloo, the
# simulator's shared_cores). DIR (default device-check/) receives device-check.md (the table of
# predicted against measured throughput and peak memory: tensor bytes and the CUDA allocator's
# peaks), device-check.csv, device-check.log, the profile, the cluster file and compares.tar.gz.
# The whole run stays under 8 minutes: each step has its own time limit and the script stops,
# in one line, when the next step would not fit.
#
# What it assumes of the GPU machine (each checked first, one line when it does not hold): an
# x86-64 Linux with an NVIDIA GPU that python3's torch sees; python3's torch 2.11 built for CUDA
# (its LibTorch and CMake config); a C++17 compiler, CMake >= 3.18, ninja and the CUDA toolkit
# (nvcc), which LibTorch's CMake config asks for; nccl.h in the toolkit or in torch's NVIDIA
# packages (else the copy in .device-deps); 40 GB of free GPU memory; and .device-deps/ from
# --prepare: Debian 12's Boost.Program_options, nlohmann/json, Gloo and GoogleTest headers and
# libraries, zlib, and a pipetwin-sim built here with the shared libraries it needs (SimGrid,
# ns-3, GSL, ...), which run on any newer x86-64 glibc.
#
# --cpu runs the same steps on this machine (CI does): the GPU assumptions are reported as where a
# GPU-less machine stops, the build is configured against .device-deps/ and, with --reuse-build,
# not compiled again (that folder's binaries are used), and the tests, profile, calibration and
# comparisons run with --device cpu on a small GPT.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps=$root/.device-deps
mode=gpu
out=device-check
reuse=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prepare) mode=prepare; shift ;;
    --cpu) mode=cpu; shift ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --reuse-build) reuse=${2:?--reuse-build needs a build folder}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "device-check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

start=$(date +%s)
budget=480  # seconds: the issue's 8 minutes
elapsed() { echo $(( $(date +%s) - start )); }
say() { printf '[%4ss] %s\n' "$(elapsed)" "$*"; }
fail() { echo "device-check.sh: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# --prepare: here, what the GPU machine lacks, as files under .device-deps/ (their /usr paths
# kept, so that the CMake configs of Debian's packages find their files relative to themselves).
prepare() {
  local sim=${PIPETWIN_BUILD_DIR:-$root/build}/bin/pipetwin-sim
  [ -x "$sim" ] || fail "--prepare needs $sim: run scripts/build.sh first"
  local py=$root/.venv/bin/python3
  [ -x "$py" ] || fail "--prepare needs the project's torch: run scripts/setup-torch.sh first"
  local torch_inc
  torch_inc=$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))')
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  mkdir -p "$tmp/deps"
  # The headers: what one translation unit that includes every third-party header the build
  # uses pulls in from /usr/include (g++ -M), and GoogleTest's whole.
  cat >"$tmp/probe.cc" <<'EOF'
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>
#include <zlib.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
EOF
  g++ -std=c++17 -M -DUSE_C10D_GLOO -DUSE_C10D_NCCL -DUSE_DISTRIBUTED -isystem "$torch_inc" \
    -isystem "$torch_inc/torch/csrc/api/include" -isystem /usr/local/cuda/include \
    "$tmp/probe.cc" -o "$tmp/probe.d"
  tr ' \\' '\n\n' <"$tmp/probe.d" | grep -E '^/usr/include/' | xargs -r realpath -s |
    grep -E '^/usr/include/((boost|nlohmann|gloo)/|(zlib|zconf)\.h$)' | sort -u >"$tmp/files"
  find /usr/include/gtest /usr/include/gmock -type f >>"$tmp/files"
  local arch=/usr/lib/x86_64-linux-gnu
  # Libraries and their CMake configs.
  ls -d $arch/libboost_program_options.so* $arch/libboost_program_options.a \
    $arch/libgtest*.a $arch/libgmock*.a >>"$tmp/files"
  find $arch/cmake/Boost-* $arch/cmake/boost_headers-* $arch/cmake/boost_program_options-* \
    $arch/cmake/BoostDetectToolset-* \
    $arch/cmake/GTest -type f >>"$tmp/files"
  dpkg -L nlohmann-json3-dev | grep -E '\.cmake$' >>"$tmp/files"
  while read -r f; do
    mkdir -p "$tmp/deps$(dirname "$f")"
    cp -P "$f" "$tmp/deps$f"
  done <"$tmp/files"
  cp -L $arch/libz.so "$tmp/deps$arch/libz.so"
  # nccl.h: used on the GPU machine only when neither its toolkit nor torch's packages have one.
  mkdir -p "$tmp/deps/fallback/include"
  cp /usr/local/cuda/include/nccl.h "$tmp/deps/fallback/include/"
  # The simulator, stripped, with the shared libraries it needs beyond glibc and libstdc++.
  mkdir -p "$tmp/deps/sim/lib"
  strip --strip-unneeded -o "$tmp/deps/sim/pipetwin-sim" "$sim"
  ldd "$sim" | awk '/=>/ {print $3}' |
    grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so' |
    while read -r lib; do strip --strip-unneeded -o "$tmp/deps/sim/lib/$(basename "$lib")" "$lib"; done
  {
    echo "prepared $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME") from $(git -C "$root" rev-parse --short HEAD)"
    dpkg-query -W libboost-program-options1.74-dev nlohmann-json3-dev libgloo-dev libgtest-dev \
      zlib1g-dev libsimgrid-dev 2>/dev/null
  } >"$tmp/deps/MANIFEST"
  rm -rf "$deps"
  mv "$tmp/deps" "$deps"
  echo "device-check: $deps holds $(find "$deps" -type f | wc -l) files, $(du -sm "$deps" | cut -f1) MB"
}

if [ "$mode" = prepare ]; then prepare; exit 0; fi

# ---------------------------------------------------------------------------------------------
# The checks of what the GPU machine is assumed to have. On --cpu a GPU check that fails is where
# a GPU-less machine stops; the rest go on with the project's own torch.
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/device-check.log
: >"$log"
exec > >(tee -a "$log") 2>&1
stopped=""
gpu_check() {  # MESSAGE: a GPU assumption that does not hold
  if [ "$mode" = gpu ]; then fail "$1"; fi
  [ -n "$stopped" ] || stopped=$1
  say "a GPU machine would stop here: $1"
}
say "device-check ($mode) on $(hostname), $(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"

[ "$(uname -m)" = x86_64 ] || fail "assumes an x86-64 machine (uname -m says $(uname -m))"
if [ "$mode" = gpu ]; then py=python3; else py=$root/.venv/bin/python3; fi
"$py" -c 'import torch' 2>/dev/null || fail "assumes $py with torch (PyTorch 2.11): it cannot import torch"
read -r torch_version torch_cuda gpus gpu_name free_gb torch_cmake < <("$py" - <<'EOF'
import torch
n = torch.cuda.device_count() if torch.version.cuda else 0
name = torch.cuda.get_device_name(0).replace(" ", "_") if n else "none"
free = torch.cuda.mem_get_info(0)[0] / 1e9 if n else 0
print(torch.__version__, torch.version.cuda or "none", n, name, f"{free:.0f}", torch.utils.cmake_prefix_path)
EOF
) || fail "python3's torch could not describe itself and its GPUs (python3 -c 'import torch; torch.cuda.device_count()')"
case "$torch_version" in 2.11.*) ;; *) fail "assumes torch 2.11, found $torch_version" ;; esac
[ "$torch_cuda" != none ] || fail "assumes a CUDA build of torch, found $torch_version (CPU only)"
[ -f "$torch_cmake/Torch/TorchConfig.cmake" ] || fail "torch's CMake config is not at $torch_cmake/Torch"
say "torch $torch_version (CUDA $torch_cuda), CMake config $torch_cmake/Torch"
if [ "$gpus" -lt 1 ]; then
  gpu_check "assumes an NVIDIA GPU that torch sees: torch.cuda.device_count() is 0"
elif [ "$free_gb" -lt 40 ]; then
  gpu_check "assumes 40 GB of free GPU memory, $gpu_name has $free_gb GB free"
else
  say "$gpus GPU(s): $gpu_name, $free_gb GB free"
fi
cxx=$(command -v c++ || command -v g++ || true)
[ -n "$cxx" ] || fail "assumes a C++17 compiler (c++ or g++ on PATH)"
command -v cmake >/dev/null || fail "assumes CMake on PATH"
cmake_version=$(cmake --version | head -1 | awk '{print $3}')
printf '3.18\n%s\n' "$cmake_version" | sort -V -C || fail "assumes CMake >= 3.18, found $cmake_version"
command -v ninja >/dev/null || fail "assumes ninja on PATH"
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
[ -n "$nvcc" ] || fail "assumes the CUDA toolkit (nvcc on PATH or in /usr/local/cuda/bin), which LibTorch's CMake config needs"
cuda_inc=$(cd "$(dirname "$nvcc")/../include" && pwd)
nccl_inc=""
if [ ! -f "$cuda_inc/nccl.h" ]; then
  nccl_inc=$("$py" -c 'import glob, os, torch; s = os.path.dirname(os.path.dirname(torch.__file__)); print(next(iter(glob.glob(s + "/nvidia/*/include/nccl.h") + glob.glob(s + "/nvidia/*/*/include/nccl.h")), ""))')
  nccl_inc=${nccl_inc:+$(dirname "$nccl_inc")}
  [ -n "$nccl_inc" ] || nccl_inc=$deps/fallback/include
fi
[ -f "$deps/MANIFEST" ] || fail "assumes .device-deps/ (scripts/device-check.sh --prepare here, then carried): $deps/MANIFEST is missing"
say "compiler $cxx, CMake $cmake_version, nvcc $nvcc, nccl.h in ${nccl_inc:-$cuda_inc}; $(head -1 "$deps/MANIFEST")"
"$deps/sim/pipetwin-sim" --help >/dev/null 2>&1 < /dev/null ||
  LD_LIBRARY_PATH=$deps/sim/lib "$deps/sim/pipetwin-sim" --help >/dev/null 2>&1 < /dev/null ||
  fail "the carried pipetwin-sim does not start here: $(LD_LIBRARY_PATH=$deps/sim/lib "$deps/sim/pipetwin-sim" --help 2>&1 </dev/null | head -1)"

step_limit() {  # SECONDS: fail in one line when the step would overrun the 8 minutes
  [ "$mode" = gpu ] || return 0
  [ $(( $(elapsed) + $1 )) -le $budget ] ||
    fail "stopping before the next step: $(elapsed) s spent, it may take $1 s, the budget is $budget s"
}

# ---------------------------------------------------------------------------------------------
# The build against this machine's LibTorch and .device-deps/ (no simulator: the carried one).
bdir=$root/build-device
torch_lib=$(cd "$torch_cmake/../../lib" && pwd)
configure() {  # BUILD_DIR
  cmake -S "$root" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPIPETWIN_WITH_SIM=OFF \
    -DPIPETWIN_WITH_EXEC=ON -DCMAKE_PREFIX_PATH="$deps/usr;$torch_cmake" \
    -DBoost_NO_SYSTEM_PATHS=ON -Dc10_LIBRARY="$torch_lib/libc10.so" \
    -DC10_CUDA_LIBRARY="$torch_lib/libc10_cuda.so" -DCUDAToolkit_ROOT="$(dirname "$(dirname "$nvcc")")" \
    ${nccl_inc:+-DCMAKE_CXX_FLAGS="-isystem $nccl_inc"} >"$out/configure.log" 2>&1 ||
    fail "configuring the build failed: $(grep -m1 -E 'Error|error' "$out/configure.log" || tail -1 "$out/configure.log") ($out/configure.log)"
  # Every third-party package must come from .device-deps/, and LibTorch's parts from python3's
  # torch, not from this machine's /usr.
  local var value
  for var in Boost_DIR boost_program_options_DIR nlohmann_json_DIR GTest_DIR ZLIB_LIBRARY_RELEASE \
             Torch_DIR Caffe2_DIR; do
    value=$(sed -n "s/^$var:[A-Z]*=//p" "$1/CMakeCache.txt")
    case "$var:$value" in
      Torch_DIR:"$torch_cmake"/*|Caffe2_DIR:"$torch_cmake"/*) ;;
      Torch_DIR:*|Caffe2_DIR:*) fail "$var is '$value', not python3's torch's ($torch_cmake)" ;;
      *:"$deps"/*) ;;
      *) fail "$var is '$value', not under $deps: .device-deps/ is incomplete" ;;
    esac
  done
}
step_limit 200
if [ -n "$reuse" ]; then
  [ "$mode" = cpu ] || fail "--reuse-build is for --cpu only"
  say "configuring against .device-deps/ (the compile itself: $reuse's binaries are reused)"
  # A throw-away build folder: only the configure's checks are wanted from it.
  reuse_configured=$(mktemp -d)
  trap 'rm -rf "$reuse_configured"' EXIT
  configure "$reuse_configured"
  bin=$(cd "$reuse/bin" && pwd)
  tests=$(cd "$reuse/tests/exec" && pwd)/pipetwin_exec_tests
else
  say "building pipetwin, pipetwin-exec and the executor's tests in $bdir"
  configure "$bdir"
  # A time limit there, so that a slow or stuck build cannot take the 8 minutes.
  build_limit=300
  [ "$mode" = gpu ] || build_limit=3600
  timeout "$build_limit" ninja -C "$bdir" pipetwin pipetwin-exec pipetwin_exec_tests \
    >"$out/build.log" 2>&1 ||
    fail "the build failed or outran ${build_limit} s: $(grep -m1 -E 'error' "$out/build.log") ($out/build.log)"
  # The front end finds pipetwin-sim beside itself; the carried one with its libraries.
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
    "$deps/sim/lib" "$deps/sim/pipetwin-sim" >"$bdir/bin/pipetwin-sim"
  chmod +x "$bdir/bin/pipetwin-sim"
  bin=$bdir/bin
  tests=$bdir/tests/exec/pipetwin_exec_tests
fi
say "built: $bin"
if [ "$mode" = gpu ] || [ "$gpus" -ge 1 ]; then device=cuda; precision=bf16; else device=cpu; precision=fp32; fi

# ---------------------------------------------------------------------------------------------
# The executor's correctness tests on the device.
step_limit 120
say "correctness tests on $device (PIPETWIN_TEST_DEVICE=$device)"
PIPETWIN_TEST_DEVICE=$device timeout 150 "$tests" \
  --gtest_filter='ExecEquivalence.*:ExecFaults.AnErrorOnARanksDevice*:ExecFaults.AHungWorker*' \
  >"$out/tests.log" 2>&1 || fail "correctness tests failed: $(grep -m1 -E 'FAILED|Failure|Timeout' "$out/tests.log" || tail -1 "$out/tests.log") ($out/tests.log)"
say "$(grep -E '^\[  PASSED' "$out/tests.log")"

# ---------------------------------------------------------------------------------------------
# The workload and its nine scenarios: a GPT of 20 blocks of hidden 2048 (16 heads, 512 tokens,
# a 50304-token vocabulary: 1.2B parameters) on the GPU, a small one on CPUs.
work=$out/work
rm -rf "$work"
mkdir -p "$work/scenarios" "$work/compares"
"$py" - "$work/scenarios" "$device" <<'EOF'
import json, sys
folder, device = sys.argv[1], sys.argv[2]
if device == "cuda":
    blocks, hidden, heads, seq, vocab, mb, m, iters = 20, 2048, 16, 512, 50304, 4, 8, 5
else:
    blocks, hidden, heads, seq, vocab, mb, m, iters = 4, 64, 4, 32, 256, 4, 4, 5
workload = {"generator": "gpt", "layers": blocks, "hidden": hidden, "heads": heads,
            "sequence": seq, "vocabulary": vocab, "microbatch": mb, "dtype_bytes": 4}
last = blocks + 1  # layer 0 the embedding, 1..blocks the blocks, blocks + 1 the head
for stages in (1, 2, 4):
    cuts = [round(blocks * k / stages) for k in range(1, stages)]
    firsts, lasts = [0] + [c + 1 for c in cuts], cuts + [last]
    for schedule in ("gpipe", "flush", "2bw"):
        name = f"gpt-{stages}s-{schedule}"
        plan_stages = [{"first_layer": f, "last_layer": l, "replicas": 1, "devices": [i]}
                       for i, (f, l) in enumerate(zip(firsts, lasts))]
        doc = {"name": f"device check: GPT {blocks} x {hidden} in {stages} stage(s), {schedule}",
               "workload": workload,
               "cluster": {"name": "this machine", "device": {"name": device, "memory_bytes": 40e9},
                           "levels": [{"name": "server", "count": stages, "bandwidth_gbps": 100,
                                       "latency_us": 20, "link": "loopback"}]},
               "plan": {"planner": "manual", "schedule": schedule, "microbatch_size": mb,
                        "microbatches_per_update": m, "stages": plan_stages},
               "schedule": schedule,
               "training": {"microbatch_size": mb, "microbatches": m, "iterations": iters,
                            "optimizer": "adam", "learning_rate": 1e-4}}
        with open(f"{folder}/{name}.json", "w") as f:
            json.dump(doc, f, indent=1)
EOF
pipetwin=$bin/pipetwin
gpu_flags=(--device "$device" --precision "$precision")

step_limit 60
say "profiling the GPT's layers on $device ($precision)"
timeout 90 "$pipetwin" profile "$work/scenarios/gpt-1s-flush.json" --batch 4 --repeats 5 \
  --warmup 3 --max-seconds 15 "${gpu_flags[@]}" --output "$out/profile.json" --force >"$out/profile.log" 2>&1 ||
  fail "profile failed: $(tail -1 "$out/profile.log")"

step_limit 60
say "calibrating this machine's $device"
timeout 90 "$pipetwin" calibrate --device "$device" --quick --max-seconds 8 --output "$out/cluster.json" \
  --force >"$out/calibrate.log" 2>&1 || fail "calibrate failed: $(tail -1 "$out/calibrate.log")"
sed 's/^/         /' "$out/calibrate.log"

# On a GPU the layers are timed alone (workers sharing it take turns), so the one profile serves
# every configuration; on CPUs compare profiles each with as many processes as it has workers.
reuse_profile=(--profile "$out/profile.json")
[ "$device" = cuda ] || reuse_profile=(--profile-seconds 0.5 --profile-max-seconds 2 --threads 1)
for scenario in "$work"/scenarios/*.json; do
  name=$(basename "$scenario" .json)
  step_limit 45
  say "compare $name"
  timeout 90 "$pipetwin" compare "$scenario" "${reuse_profile[@]}" \
    --calibration "$out/cluster.json" "${gpu_flags[@]}" --json --warmup 1 \
    --keep "$work/runs/$name" >"$work/compares/$name.compare.json" 2>"$work/$name.err" ||
    fail "compare $name failed: $(tail -1 "$work/$name.err")"
done

machine="$(hostname): $gpus x $gpu_name, torch $torch_version, $(date -u +%Y-%m-%d)"
[ "$device" = cuda ] || machine="$(hostname), $(nproc) CPUs (--cpu: no GPU), torch $torch_version, $(date -u +%Y-%m-%d)"
command="scripts/device-check.sh"
[ "$mode" = gpu ] || command+=" --cpu"
"$pipetwin" compare --table "$work/compares" --machine "$machine" --command "$command" >/dev/null
mv "$work/compares/validation.md" "$out/device-check.md"
mv "$work/compares/validation.csv" "$out/device-check.csv"
tar -C "$work" -czf "$out/compares.tar.gz" compares scenarios
{
  echo
  echo "Took $(elapsed) s in all ($mode mode)."
  [ -z "$stopped" ] || echo "Without a GPU this machine stops at: $stopped. The steps above ran" \
    "with --device cpu on a small GPT and 4 timed iterations, to show that each step runs: its" \
    "figures are no validation (docs/validation.md has the CPU matrix)."
} >>"$out/device-check.md"
cat "$out/device-check.md"
rm -rf "$work"
say "done: $out/device-check.md"
