#!/usr/bin/env bash
# pipetwin's executor against torch.distributed.pipelining's runtime on the same work.
#
#   scripts/bench-vs-torch.sh [--runs K] [--out DIR] [--predict] [SCENARIO.json ...]
#
# For each scenario (default: scenarios/bench-vs-torch/*.json: the validation matrix's MLP and
# small GPT, two stages, under GPipe, 1F1B and interleaved 1F1B) it runs, K times each (default
# 5) and alternated (pipetwin first in odd rounds, torch first in even ones, so that a drift of
# the machine's speed hits both alike):
#   - `pipetwin run SCENARIO --json`: its workers, c10d Gloo, the schedule's op lists;
#   - torchrun with one process per rank of scripts/bench_vs_torch.py: the same model, stages,
#     micro-batches, optimizer and schedule class (PipelineStage, ScheduleGPipe, Schedule1F1B,
#     ScheduleInterleaved1F1B), Gloo, the same intra-op threads per process;
# both over the scenario's iterations with one warm-up left out, on synthetic data. The table
# (DIR/bench-vs-torch.md, default DIR bench-vs-torch) gives the median samples/s of each, their
# ratio and the spread (min-max) of the runs, with the machine and the date; the runs' numbers
# are in DIR/runs.csv. Nothing is tuned per row.
#
# --predict also asks the simulator: per scenario, `pipetwin compare SCENARIO --keep DIR/NAME`
# profiles the layers, calibrates the machine, predicts and runs pipetwin once; then the same
# prediction is compared with torch's K runs (each writes a measured report, bench_vs_torch.py
# --report; `pipetwin compare --measured` takes their median). DIR/predict.md has, per scenario,
# the prediction and its error against pipetwin's run and against torch's.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_BUILD_DIR:-$root/build}
venv=${PIPETWIN_VENV:-$root/.venv}
runs=5
out=bench-vs-torch
predict=0
scenarios=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --predict) predict=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench-vs-torch.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) scenarios+=("$1"); shift ;;
  esac
done
[ ${#scenarios[@]} -gt 0 ] || scenarios=("$root"/scenarios/bench-vs-torch/*.json)
"$root/scripts/build.sh"
pipetwin="$build/bin/pipetwin"
torchrun="$venv/bin/torchrun"
[ -x "$torchrun" ] || { echo "bench-vs-torch.sh: no torchrun in $venv (scripts/setup-torch.sh)" >&2; exit 2; }
mkdir -p "$out"
csv="$out/runs.csv"
echo "scenario,round,runtime,samples_per_s,note" >"$csv"

ranks_of() {  # the workers the scenario's plan needs: its stages over the chunks per worker
  python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
chunks = max(2, d["training"].get("chunks", 2)) if d.get("schedule") == "interleaved" else 1
print(len(d["plan"]["stages"]) // chunks)
PY
}

run_pipetwin() {  # prints samples/s, or "-" and the reason on stderr
  local json
  if json=$("$pipetwin" run "$1" --json 2>"$out/pipetwin.err"); then
    python3 -c 'import json,sys; print(json.load(sys.stdin)["samples_per_s"])' <<<"$json"
  else
    echo "-"
  fi
}

run_torch() {  # SCENARIO RANKS [REPORT]
  local port=$((29500 + RANDOM % 2000)) line report=()
  [ -n "${3:-}" ] && report=(--report "$3")
  if line=$("$torchrun" --nproc-per-node "$2" --master-port "$port" \
              "$root/scripts/bench_vs_torch.py" "$1" "${report[@]}" 2>"$out/torch.err" | tail -n 1); then
    python3 -c 'import json,sys; print(json.load(sys.stdin)["samples_per_s"])' <<<"$line"
  else
    echo "-"
  fi
}

for s in "${scenarios[@]}"; do
  name=$(basename "$s" .json)
  ranks=$(ranks_of "$s")
  for ((r = 1; r <= runs; r++)); do
    order=(pipetwin torch)
    [ $((r % 2)) = 0 ] && order=(torch pipetwin)
    for who in "${order[@]}"; do
      if [ "$who" = pipetwin ]; then v=$(run_pipetwin "$s"); err="$out/pipetwin.err"
      else
        report=""
        [ "$predict" = 1 ] && report="$out/$name.torch-$r.json"
        v=$(run_torch "$s" "$ranks" "$report"); err="$out/torch.err"
      fi
      note=""
      [ "$v" = "-" ] && note=$(grep -v '^W[0-9]' "$err" | grep -v '^\s*$' | tail -n 1 | tr ',' ';')
      echo "$name,$r,$who,$v,$note" >>"$csv"
      echo "bench-vs-torch: $name round $r $who: ${v} samples/s ${note}" >&2
    done
  done
done

if [ "$predict" = 1 ]; then
  echo "scenario,predicted,pipetwin,pipetwin_error,torch,torch_error" >"$out/predict.csv"
  for s in "${scenarios[@]}"; do
    name=$(basename "$s" .json)
    echo "bench-vs-torch: $name: profile, calibrate, predict and run pipetwin" >&2
    measured=()
    for f in "$out/$name".torch-*.json; do [ -f "$f" ] && measured+=(--measured "$f"); done
    if "$pipetwin" compare "$s" --keep "$out/$name" --force --json >"$out/$name.compare.json" &&
       [ ${#measured[@]} -gt 0 ] &&
       "$pipetwin" compare "$s" --profile "$out/$name/profile.json" \
         --calibration "$out/$name/cluster.json" "${measured[@]}" --json \
         >"$out/$name.vs-torch.json"; then
      python3 - "$name" "$out/$name.compare.json" "$out/$name.vs-torch.json" >>"$out/predict.csv" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[2:4])
print(",".join([sys.argv[1], f"{a['predicted']['samples_per_s']:.1f}",
                f"{a['measured']['samples_per_s']:.1f}", f"{a['relative_error']['samples_per_s']:.4f}",
                f"{b['measured']['samples_per_s']:.1f}", f"{b['relative_error']['samples_per_s']:.4f}"]))
PY
    else
      echo "bench-vs-torch: $name: no prediction (see above)" >&2
    fi
  done
  python3 - "$out/predict.csv" "$out/predict.md" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
lines = ["| scenario | predicted samples/s | pipetwin measured | error | torch measured (median) "
         "| error |", "|---|---:|---:|---:|---:|---:|"]
for r in rows:
    lines.append(f"| {r['scenario']} | {float(r['predicted']):,.0f} | {float(r['pipetwin']):,.0f} | "
                 f"{100 * float(r['pipetwin_error']):+.1f}% | {float(r['torch']):,.0f} | "
                 f"{100 * float(r['torch_error']):+.1f}% |")
if rows:
    for who in ("pipetwin", "torch"):
        errors = [abs(float(r[who + "_error"])) for r in rows]
        lines.append(f"\n{who}: MAPE {100 * sum(errors) / len(errors):.1f}%, worst "
                     f"{100 * max(errors):.1f}%")
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
fi

python3 - "$csv" "$out/bench-vs-torch.md" "$runs" <<'PY'
import csv, os, platform, statistics, subprocess, sys, time
rows = list(csv.DictReader(open(sys.argv[1])))
cpu = "?"
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
except OSError:
    pass
lines = [f"pipetwin run against torch.distributed.pipelining, {sys.argv[3]} alternated runs each, "
         f"{os.cpu_count()} cores ({cpu}), {time.strftime('%Y-%m-%d %H:%M %Z')}, "
         "`scripts/bench-vs-torch.sh`", "",
         "| scenario | pipetwin samples/s (min-max) | torch samples/s (min-max) | pipetwin / torch |",
         "|---|---:|---:|---:|"]
for name in dict.fromkeys(r["scenario"] for r in rows):
    cells = []
    values = {}
    for who in ("pipetwin", "torch"):
        got = [float(r["samples_per_s"]) for r in rows
               if r["scenario"] == name and r["runtime"] == who and r["samples_per_s"] != "-"]
        notes = [r["note"] for r in rows
                 if r["scenario"] == name and r["runtime"] == who and r["samples_per_s"] == "-"]
        if got:
            values[who] = statistics.median(got)
            cells.append(f"{values[who]:,.0f} ({min(got):,.0f}-{max(got):,.0f})")
        else:
            cells.append("not run: " + (notes[0] if notes else "?").replace("|", "/"))
    ratio = (f"{values['pipetwin'] / values['torch']:.2f}x"
             if len(values) == 2 else "-")
    lines.append(f"| {name} | {cells[0]} | {cells[1]} | {ratio} |")
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
