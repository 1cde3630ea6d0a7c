#!/usr/bin/env bash
# pipetwin's executor against torch.distributed.pipelining's runtime on the same work.
#
#   scripts/bench-vs-torch.sh [--runs K] [--out DIR] [--predict [--profile-during]] [SCENARIO.json ...]
#
# For each scenario (default: scenarios/bench-vs-torch/*.json: the validation matrix's MLP and
# small GPT, two stages, under GPipe, 1F1B and interleaved 1F1B) it runs, K times each (default
# 5) and alternated (pipetwin first in odd rounds, torch first in even ones, so that a drift of
# the machine's speed hits both alike):
#   - `pipetwin run SCENARIO --json`: its workers, c10d Gloo, the schedule's op lists;
#   - torchrun with one process per rank of scripts/bench_vs_torch.py: the same model, stages,
#     micro-batches, optimizer and schedule class (PipelineStage, ScheduleGPipe, Schedule1F1B,
#     ScheduleInterleaved1F1B), Gloo, the same intra-op threads per process, as a user starts it;
#   - the same torch run in the process setup `pipetwin run` gives its workers (torch-pinned):
#     each rank pinned to one core (--pin), and glibc's malloc keeping the memory tensors free
#     at the top of its heap instead of returning it to the kernel (MALLOC_TRIM_THRESHOLD_ and
#     MALLOC_TOP_PAD_ of 1 GiB and 256 MiB), as pipetwin's caching CPU allocator keeps freed
#     blocks (exec/runtime/cpu_allocator.h), and taking tensors of up to 32 MiB from that heap
#     (MALLOC_MMAP_THRESHOLD_): setting either of the first two turns off glibc's dynamic mmap
#     threshold, which would otherwise rise to 32 MiB on 64-bit systems (mallopt(3),
#     M_MMAP_THRESHOLD), and leave every tensor of 128 KiB or more mapped on allocation and
#     unmapped on free, each page faulted in again; what is left between it and pipetwin is the
#     runtimes;
# all over the scenario's iterations with one warm-up left out, on synthetic data. The table
# (DIR/bench-vs-torch.md, default DIR bench-vs-torch) gives the median samples/s of each, the
# ratios and the spread (min-max) of the runs, with the machine and the date, and torch's own
# cost per action (bench_vs_torch.py's per_rank: an action's time beyond the compute inside it,
# the median over the runs and ranks); the runs' numbers are in DIR/runs.csv. Nothing is tuned
# per row.
#
# --predict also asks the simulator: per scenario, before its rounds, `pipetwin compare SCENARIO
# --keep DIR/NAME` profiles the layers, calibrates the machine, predicts and runs pipetwin once.
# Each torch run then first times its own layers under torch's runtime, in its own processes and
# setup (bench_vs_torch.py --profile, the other fields of the workload from pipetwin's profile),
# and writes its measured report (--report) and its JSON line (DIR/NAME.WHO-K.line.json: each
# rank's account of its steps, its thread account included); `pipetwin compare --profile THAT --measured THIS`
# predicts the run from the profile on the same calibration. DIR/predict.md has, per scenario,
# pipetwin's prediction and error, and for torch in each setup the median of its runs'
# predictions against the median of their measurements; and each torch run predicted again from
# its own timers (bench_vs_torch.py --replay: its compute, runtime and optimizer as it measured
# them), which leaves the simulator's own error, run by run. --profile-during: each torch run
# times its layers one round before each of its steps instead of all before the run
# (bench_vs_torch.py --profile-during), so that the profile follows the machine's speed through
# the run; its steps are then timed from one barrier to the next, which changes the torch runs
# the benchmark's table counts (a table from such a run is not the plain benchmark's).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_BUILD_DIR:-$root/build}
venv=${PIPETWIN_VENV:-$root/.venv}
runs=5
out=bench-vs-torch
predict=0
during=()
scenarios=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --predict) predict=1; shift ;;
    --profile-during) during=(--profile-during); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench-vs-torch.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) scenarios+=("$1"); shift ;;
  esac
done
[ ${#during[@]} = 0 ] || [ "$predict" = 1 ] || { echo "bench-vs-torch.sh: --profile-during goes with --predict" >&2; exit 2; }
[ ${#scenarios[@]} -gt 0 ] || scenarios=("$root"/scenarios/bench-vs-torch/*.json)
"$root/scripts/build.sh"
pipetwin="$build/bin/pipetwin"
torchrun="$venv/bin/torchrun"
[ -x "$torchrun" ] || { echo "bench-vs-torch.sh: no torchrun in $venv (scripts/setup-torch.sh)" >&2; exit 2; }
mkdir -p "$out"
csv="$out/runs.csv"
echo "scenario,round,runtime,samples_per_s,torch_ms_per_action,note" >"$csv"

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

run_torch() {  # SCENARIO RANKS SETUP [REPORT PROFILE LIKE REPLAY]: prints samples/s and ms per action, or "- -"
  local port=$((29500 + RANDOM % 2000)) line report=() setup=(env) pin=()
  [ -n "${4:-}" ] && report=(--report "$4" --profile "$5" --like "$6" --replay "$7" "${during[@]}")
  if [ "$3" = pinned ]; then
    setup=(env MALLOC_TRIM_THRESHOLD_=1073741824 MALLOC_TOP_PAD_=268435456
           MALLOC_MMAP_THRESHOLD_=33554432)
    pin=(--pin)
  fi
  if line=$("${setup[@]}" "$torchrun" --nproc-per-node "$2" --master-port "$port" \
              "$root/scripts/bench_vs_torch.py" "$1" "${pin[@]}" "${report[@]}" \
              2>"$out/torch.err" | tail -n 1); then
    # The run's JSON line beside its report: each rank's account (per_rank), thread account
    # included.
    [ -n "${4:-}" ] && printf '%s\n' "$line" >"${4%.json}.line.json"
    python3 -c '
import json, statistics, sys
r = json.load(sys.stdin)
print(r["samples_per_s"], statistics.median(x["runtime_ms_per_action"] for x in r["per_rank"]))' <<<"$line"
  else
    echo "- -"
  fi
}

for s in "${scenarios[@]}"; do
  name=$(basename "$s" .json)
  ranks=$(ranks_of "$s")
  if [ "$predict" = 1 ]; then
    echo "bench-vs-torch: $name: profile, calibrate, predict and run pipetwin" >&2
    "$pipetwin" compare "$s" --keep "$out/$name" --force --json >"$out/$name.compare.json" ||
      rm -f "$out/$name.compare.json"
  fi
  for ((r = 1; r <= runs; r++)); do
    order=(pipetwin torch torch-pinned)
    [ $((r % 2)) = 0 ] && order=(torch-pinned torch pipetwin)
    for who in "${order[@]}"; do
      per_action=""
      if [ "$who" = pipetwin ]; then v=$(run_pipetwin "$s"); err="$out/pipetwin.err"
      else
        report=()
        [ "$predict" = 1 ] && [ -f "$out/$name.compare.json" ] &&
          report=("$out/$name.$who-$r.json" "$out/$name.$who-$r.profile.json" "$out/$name/profile.json"
                  "$out/$name.$who-$r.replay.json")
        setup=default
        [ "$who" = torch-pinned ] && setup=pinned
        read -r v per_action < <(run_torch "$s" "$ranks" "$setup" "${report[@]}")
        [ "$per_action" = "-" ] && per_action=""
        err="$out/torch.err"
      fi
      note=""
      [ "$v" = "-" ] && note=$(grep -v '^W[0-9]' "$err" | grep -v '^\s*$' | tail -n 1 | tr ',' ';')
      echo "$name,$r,$who,$v,$per_action,$note" >>"$csv"
      echo "bench-vs-torch: $name round $r $who: ${v} samples/s ${note}" >&2
    done
  done
done

if [ "$predict" = 1 ]; then
  for s in "${scenarios[@]}"; do
    name=$(basename "$s" .json)
    [ -f "$out/$name.compare.json" ] || { echo "bench-vs-torch: $name: no prediction (see above)" >&2; continue; }
    for who in torch torch-pinned; do
      for ((r = 1; r <= runs; r++)); do
        base="$out/$name.$who-$r"
        [ -f "$base.json" ] && [ -f "$base.profile.json" ] || continue
        "$pipetwin" compare "$s" --profile "$base.profile.json" --calibration "$out/$name/cluster.json" \
          --measured "$base.json" --json >"$base.compare.json" || rm -f "$base.compare.json"
        if [ -f "$base.replay.json" ]; then
          "$pipetwin" compare "$s" --profile "$base.replay.json" --calibration "$out/$name/cluster.json" \
            --measured "$base.json" --json >"$base.replay.compare.json" || rm -f "$base.replay.compare.json"
        fi
      done
    done
  done
  BENCH_PROFILING="${during[*]:-}" python3 - "$out" "$out/predict.csv" "$out/predict.md" "${scenarios[@]}" <<'PY'
import csv, glob, json, os, statistics, sys
out, csv_path, md_path, scenarios = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
profiled = ("each torch run's layers profiled one round before each of its steps "
            "(--profile-during)" if os.environ.get("BENCH_PROFILING")
            else "each torch run's layers profiled before the run")
setups = ("torch", "torch-pinned")
rows = []
for s in scenarios:
    name = os.path.basename(s)[:-len(".json")]
    try:
        own = json.load(open(f"{out}/{name}.compare.json"))
    except (OSError, ValueError):
        continue
    row = {"scenario": name, "predicted": own["predicted"]["samples_per_s"],
           "pipetwin": own["measured"]["samples_per_s"],
           "pipetwin_error": own["relative_error"]["samples_per_s"]}
    for who in setups:
        # {who}-[0-9]*: "torch-*" would also take torch-pinned's runs.
        files = sorted(glob.glob(f"{out}/{name}.{who}-[0-9]*.compare.json"))
        runs = [json.load(open(f)) for f in files if not f.endswith(".replay.compare.json")]
        if not runs:
            break
        predicted = statistics.median(r["predicted"]["samples_per_s"] for r in runs)
        measured = statistics.median(r["measured"]["samples_per_s"] for r in runs)
        row.update({f"{who}_predicted": predicted, who: measured,
                    f"{who}_error": (predicted - measured) / measured, f"{who}_runs": len(runs)})
        # Each run predicted again from its own timers (bench_vs_torch.py --replay): the
        # simulator's error alone, run by run.
        replays = [json.load(open(f)) for f in files if f.endswith(".replay.compare.json")]
        row[f"{who}_replay_errors"] = [r["relative_error"]["samples_per_s"] for r in replays]
    else:
        rows.append(row)
fields = ["scenario", "predicted", "pipetwin", "pipetwin_error"] + [
    f"{who}{x}" for who in setups for x in ("_predicted", "", "_error", "_runs")]
with open(csv_path, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
lines = [f"Predictions: {profiled}.", "",
         "| scenario | pipetwin predicted | measured | error | torch predicted (median) | measured "
         "(median) | error | torch pinned, malloc kept: predicted | measured | error |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for r in rows:
    lines.append(f"| {r['scenario']} | {r['predicted']:,.0f} | {r['pipetwin']:,.0f} | "
                 f"{100 * r['pipetwin_error']:+.1f}% | " + " | ".join(
                     f"{r[who + '_predicted']:,.0f} | {r[who]:,.0f} | {100 * r[who + '_error']:+.1f}%"
                     for who in setups) + " |")
if rows:
    for who in ("pipetwin",) + setups:
        errors = [abs(r[who + "_error"]) for r in rows]
        lines.append(f"\n{who}: MAPE {100 * sum(errors) / len(errors):.1f}%, worst "
                     f"{100 * max(errors):.1f}%")
    lines += ["", "Each torch run predicted from its own timers (--replay: its compute, runtime "
              "and optimizer as it measured them; what is left is the simulator's): per run",
              "", "| scenario | torch: errors | torch pinned, malloc kept: errors |",
              "|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['scenario']} | " + " | ".join(
            ", ".join(f"{100 * e:+.1f}%" for e in r.get(who + "_replay_errors", [])) or "-"
            for who in setups) + " |")
    for who in setups:
        errors = [abs(e) for r in rows for e in r.get(who + "_replay_errors", [])]
        if errors:
            lines.append(f"\n{who} from its own timers: {len(errors)} runs, mean |error| "
                         f"{100 * sum(errors) / len(errors):.1f}%, worst {100 * max(errors):.1f}%")
# Where each torch run went against its profile (bench_vs_torch.py's JSON line, per rank).
accounts = []
for r in rows:
    for who in setups:
        for f in sorted(glob.glob(f"{out}/{r['scenario']}.{who}-[0-9]*.line.json")):
            try:
                line = json.load(open(f))
            except (OSError, ValueError):
                continue
            n = line["iterations"]
            for rank, x in enumerate(line["per_rank"]):
                if "profiled_compute_ms_per_iteration" not in x:
                    continue
                p, c = x["profiled_compute_ms_per_iteration"], x["compute_ms_per_iteration"]
                account = (f"{1e3 * x['waited_for_cpu_s'] / n:.1f} | "
                           f"{1e3 * x['helper_threads_cpu_s'] / n:.1f}"
                           if "waited_for_cpu_s" in x else "- | -")
                accounts.append(f"| {os.path.basename(f)[:-len('.line.json')]} | {rank} | "
                                f"{p:.1f} -> {c:.1f} | {100 * (c - p) / p:+.1f}% | {account} | "
                                f"{x['profiled_runtime_ms_per_action']:.2f} -> "
                                f"{x['runtime_ms_per_action_all']:.2f} |")
if accounts:
    lines += ["", "Each torch run against its profile, per rank and iteration: the compute (the loss "
              "in it), the computing thread's wait for a CPU and the CPU of c10d Gloo's threads "
              "in the run (its thread account), and all the rank did besides compute, waits and "
              "the optimizer per action, the runtime probe's against the run's", "",
              "| run | rank | compute, ms: profiled -> run | change | waited for a CPU, ms | "
              "Gloo's threads, ms | runtime per action, ms: probed -> run |",
              "|---|---:|---:|---:|---:|---:|---:|"] + accounts
open(md_path, "w").write("\n".join(lines) + "\n")
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
         "| scenario | pipetwin samples/s (min-max) | torch samples/s (min-max) | pipetwin / torch "
         "| torch pinned, malloc kept (min-max) | pipetwin / that | torch's ms per action |",
         "|---|---:|---:|---:|---:|---:|---:|"]
for name in dict.fromkeys(r["scenario"] for r in rows):
    cells = []
    values = {}
    for who in ("pipetwin", "torch", "torch-pinned"):
        got = [float(r["samples_per_s"]) for r in rows
               if r["scenario"] == name and r["runtime"] == who and r["samples_per_s"] != "-"]
        notes = [r["note"] for r in rows
                 if r["scenario"] == name and r["runtime"] == who and r["samples_per_s"] == "-"]
        if got:
            values[who] = statistics.median(got)
            cells.append(f"{values[who]:,.0f} ({min(got):,.0f}-{max(got):,.0f})")
        else:
            cells.append("not run: " + (notes[0] if notes else "?").replace("|", "/"))
    ratio = lambda who: (f"{values['pipetwin'] / values[who]:.2f}x"
                         if "pipetwin" in values and who in values else "-")
    per_action = [float(r["torch_ms_per_action"]) for r in rows
                  if r["scenario"] == name and r["runtime"].startswith("torch")
                  and r["torch_ms_per_action"]]
    action = f"{statistics.median(per_action):.2f}" if per_action else "-"
    lines.append(f"| {name} | {cells[0]} | {cells[1]} | {ratio('torch')} | {cells[2]} | "
                 f"{ratio('torch-pinned')} | {action} |")
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
