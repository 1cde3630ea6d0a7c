#!/usr/bin/env bash
# PipeDream's claim, checked on one machine: as the link between hosts slows, pipeline
# parallelism overtakes data parallelism, and the simulator predicts where.
#
#   scripts/crossover.sh [--rates "10gbit 1gbit 300mbit 100mbit 30mbit"] [--out DIR]
#                        [--microbatch B] [--iterations N] [--repeats R]
#                        [--profile pinned|concurrent|alone]
#
# Two workers in two network namespaces (scripts/netns.sh) joined by a link shaped to each rate:
#   plan A, data parallelism: the whole MLP replicated on both, one gradient all-reduce of all
#           16.8 MB of weights per update;
#   plan B, a 2-stage PipeDream-Flush pipeline: half the MLP each, only the activations (and
#           their gradients) cross the link, 2 micro-batches per update and a bubble of one
#           micro-batch's stage time.
# Both train an MLP of 4 layers 1024 wide (1024 in, 1024 out) on the same global batch of
# 2 x B samples (default B = 1024: a micro-batch's stage time of the order of the all-reduce at
# 1 Gbit/s, which puts the crossover inside the rates; at B = 32 the bubble is small and data
# parallelism would lose on any of these links).
#
# For each rate: the link probed (`netns.sh probe`: round trip, throughput); measured samples/s
# of both plans (`netns.sh run`), the best of --repeats runs (default 2, the plans alternating)
# of --iterations each (default: about 3 s of steady state at the predicted iteration time, 3 to
# 12; the first left out as warm-up), since other work on a shared machine only slows a run; and
# predicted samples/s of both from `pipetwin simulate` on a cluster of 2 servers of 1 device
# whose level-1 link has the rate and the probed one-way latency, under SimGrid's TCP model
# (network_model "tcp": Gloo's transfers are TCP flows; ideal "datacenter" links are simulated
# too, for their crossover), with one all-reduce after the last backward as the executor does it
# (--allreduce-buckets 1), and with the layer times `pipetwin profile` measures on this machine
# while the other core computes too, as in a run. --profile chooses how:
#   concurrent  (default) `pipetwin profile --concurrent 2`: a load process computes the same
#               layers on the second core while the first is timed
#   pinned      the same by hand: the profiler pinned to the first core, a second
#               `pipetwin profile` of the same layers looping on the second core as the load
#   alone       no load
# Writes DIR/crossover.csv and DIR/crossover.md (and prints the latter): the table, which plan
# wins at each rate, and the crossover bandwidth where DP = pipeline, interpolated linearly in
# log(rate) on log(DP / pipeline), predicted against measured.
#
# Needs root (see netns.sh); uses hosts of PIPETWIN_NETNS_ID (default 0). docs/netns.md has a
# dated result and how long it took.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_BUILD_DIR:-$root/build}
export PIPETWIN_BUILD_DIR=$build
netns=$root/scripts/netns.sh
pipetwin=$build/bin/pipetwin

rates="10gbit 1gbit 300mbit 100mbit 30mbit"
out=""
microbatch=1024
iterations=0
repeats=2
profile_mode=concurrent
die() { echo "crossover.sh: $1" >&2; exit 2; }
while (($#)); do
  case $1 in
    --rates) rates=${2:-}; shift 2 ;;
    --out) out=${2:-}; shift 2 ;;
    --microbatch) microbatch=${2:-}; shift 2 ;;
    --iterations) iterations=${2:-}; shift 2 ;;
    --profile) profile_mode=${2:-}; shift 2 ;;
    --repeats) repeats=${2:-}; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
      exit 0 ;;
    *) die "unknown option '$1' (--rates, --out, --microbatch, --iterations, --repeats, --profile)" ;;
  esac
done
[[ $microbatch =~ ^[0-9]+$ && $microbatch -ge 1 ]] || die "--microbatch must be >= 1"
[[ $iterations =~ ^[0-9]+$ && ($iterations -eq 0 || $iterations -ge 2) ]] ||
  die "--iterations must be >= 2 (0: chosen per rate)"
[[ $repeats =~ ^[0-9]+$ && $repeats -ge 1 ]] || die "--repeats must be >= 1"
[[ $profile_mode =~ ^(pinned|concurrent|alone)$ ]] || die "--profile must be pinned, concurrent or alone"
[[ -n $rates ]] || die "--rates: expected rates such as \"10gbit 1gbit 100mbit\""
[[ -x $pipetwin && -x $build/bin/pipetwin-exec ]] ||
  die "no $pipetwin or pipetwin-exec (build them, or set PIPETWIN_BUILD_DIR)"
out=${out:-$(mktemp -d /tmp/pipetwin-crossover.XXXXXX)}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Refuses without rights before anything else happens; `down` first: hosts left by a killed run.
"$netns" down >/dev/null
trap '"$netns" down >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT TERM

# The two plans as scenarios for the executor; CLUSTER is replaced per rate for the simulator.
write_scenario() {  # FILE NAME WORKLOAD MICROBATCHES STAGES CLUSTER
  cat >"$1" <<JSON
{"name": "$2",
 "workload": $3,
 "cluster": $6,
 "plan": {"planner": "manual", "schedule": "flush", "microbatch_size": $microbatch,
          "microbatches_per_update": $4, "stages": $5},
 "schedule": "flush",
 "training": {"microbatch_size": $microbatch, "microbatches": $4, "iterations": 4,
              "optimizer": "sgd", "learning_rate": 0.01}}
JSON
}
mlp='{"generator": "mlp", "layers": 4, "input": 1024, "width": 1024, "classes": 1024, "batch": '$microbatch'}'
cluster() {  # BANDWIDTH_GBPS LATENCY_US [NETWORK_MODEL]
  echo '{"name": "2 hosts, one network namespace each", "device": {"name": "CPU", "memory_bytes": 8e9},
   "levels": [{"name": "host", "count": 1, "bandwidth_gbps": 1000, "latency_us": 0, "link": "loopback"},
              {"name": "net", "count": 2, "bandwidth_gbps": '"$1"', "latency_us": '"$2"', "link": "ethernet"}],
   "network_model": "'"${3:-datacenter}"'"}'
}
dp_stages='[{"first_layer": 0, "last_layer": 3, "replicas": 2, "devices": [0, 1]}]'
pp_stages='[{"first_layer": 0, "last_layer": 1, "replicas": 1, "devices": [0]},
            {"first_layer": 2, "last_layer": 3, "replicas": 1, "devices": [1]}]'
# The same global batch: data parallelism runs 1 micro-batch on each replica, the pipeline 2.
write_scenario "$out/dp.json" "MLP 4x1024, data parallel on 2 hosts" "$mlp" 1 "$dp_stages" "$(cluster 1 10)"
write_scenario "$out/pipeline.json" "MLP 4x1024, 2-stage PipeDream-Flush on 2 hosts" "$mlp" 2 "$pp_stages" "$(cluster 1 10)"

# The layer times, measured while the other core computes too, as in a run.
profile_layers() {
  local target=(profile "$out/pipeline.json" --output "$out/workload.json")
  mapfile -t cores < <(python3 -c 'import os; print("\n".join(map(str, sorted(os.sched_getaffinity(0)))))')
  if [[ $profile_mode != pinned ]] || ((${#cores[@]} < 2)); then
    local concurrent=()
    [[ $profile_mode != concurrent ]] || concurrent=(--concurrent 2)
    "$pipetwin" "${target[@]}" "${concurrent[@]}" >"$out/profile.txt"
    return
  fi
  # pinned: the profiler on the first core, a second profile of the same layers looping on the
  # second core as the load (killed when the first is done).
  taskset -c "${cores[1]}" "$pipetwin" profile "$out/pipeline.json" --repeats 1000000 --warmup 0 --target-spread 0 \
    >/dev/null 2>&1 &
  local load=$!
  sleep 2  # its start-up (loading LibTorch, building the model) over, it computes
  local status=0
  taskset -c "${cores[0]}" "$pipetwin" "${target[@]}" >"$out/profile.txt" || status=$?
  kill "$load" 2>/dev/null || true
  wait "$load" 2>/dev/null || true
  return "$status"
}
echo "crossover.sh: profiling the layers at micro-batch $microbatch ($profile_mode)" >&2
profile_layers

json_field() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
rate_gbps() {  # RATE in tc's units -> Gbit/s
  awk -v r="$1" 'BEGIN { r = tolower(r); n = r + 0; u = r; sub(/^[0-9.]+/, "", u)
    f = u == "tbit" ? 1e3 : u == "gbit" ? 1 : u == "mbit" ? 1e-3 : u == "kbit" ? 1e-6 : 1e-9
    printf "%.9g", n * f }'
}
# Iterations of a measured run: about 3 s of steady state at the predicted iteration time, 3 to 12.
iterations_for() {  # PREDICTED_ITERATION_S
  if ((iterations > 0)); then echo "$iterations"; return; fi
  awk -v t="$1" 'BEGIN { n = int(3 / t + 0.999) + 1; if (n < 3) n = 3; if (n > 12) n = 12; print n }'
}

echo "rate,rate_gbps,rtt_us,one_way_latency_us,probed_gbps,predicted_dp,predicted_pipeline,\
ideal_dp,ideal_pipeline,measured_dp,measured_pipeline" >"$out/raw.csv"
for rate in $rates; do
  echo "crossover.sh: $rate" >&2
  "$netns" up 2 --rate "$rate" >/dev/null
  probe=$("$netns" probe --json)
  echo "$probe" >"$out/probe-$rate.json"
  latency_us=$(json_field one_way_latency_us <<<"$probe")
  probed=$(awk -v b="$(json_field throughput_bits_per_s <<<"$probe")" 'BEGIN { printf "%.6g", b / 1e9 }')
  gbps=$(rate_gbps "$rate")
  row="$rate,$gbps,$(json_field rtt_us <<<"$probe"),$latency_us,$probed"
  # Predicted: SimGrid's TCP model (the executor's Gloo runs over TCP) and, beside it, ideal links.
  declare -A runs=()
  for model in tcp datacenter; do
    for plan in dp pipeline; do
      stages=$dp_stages microbatches=1
      [[ $plan == dp ]] || stages=$pp_stages microbatches=2
      name=$plan-$rate-$model
      write_scenario "$out/sim-$name.json" "$plan at $rate ($model)" '{"file": "workload.json"}' \
        "$microbatches" "$stages" "$(cluster "$gbps" "$latency_us" "$model")"
      "$pipetwin" simulate "$out/sim-$name.json" --json --no-timeline --allreduce-buckets 1 \
        >"$out/simulated-$name.json"
      row+=",$(json_field samples_per_s <"$out/simulated-$name.json")"
      [[ $model == datacenter ]] ||
        runs[$plan]=$(iterations_for "$(json_field iteration_s <"$out/simulated-$name.json")")
    done
  done
  # Measured: the best of --repeats runs, the plans alternating, so that both meet the same
  # background load (a shared machine's other work only ever slows a run down).
  declare -A best=([dp]=0 [pipeline]=0)
  for ((r = 1; r <= repeats; ++r)); do
    for plan in dp pipeline; do
      "$netns" run "$out/$plan.json" --json --warmup 1 --iterations "${runs[$plan]}" \
        >"$out/measured-$plan-$rate-$r.json"
      measured=$(json_field samples_per_s <"$out/measured-$plan-$rate-$r.json")
      best[$plan]=$(awk -v a="${best[$plan]}" -v b="$measured" 'BEGIN { print (b > a ? b : a) }')
    done
  done
  echo "$row,${best[dp]},${best[pipeline]}" >>"$out/raw.csv"
  "$netns" down >/dev/null
done

python3 - "$out" "$microbatch" <<'PY'
import csv, math, sys

out, microbatch = sys.argv[1], int(sys.argv[2])
rows = list(csv.DictReader(open(f"{out}/raw.csv")))
for r in rows:
    for k in r:
        if k != "rate":
            r[k] = float(r[k])


def crossover(kind):
    """The rate (Gbit/s) where DP = pipeline: log(DP / pipeline) interpolated linearly in
    log(rate) between the two neighbouring rates where it changes sign."""
    points = sorted((r["rate_gbps"], math.log(r[f"{kind}_dp"] / r[f"{kind}_pipeline"])) for r in rows)
    found = []
    for (r0, d0), (r1, d1) in zip(points, points[1:]):
        if d0 == 0:
            found.append(r0)
        elif d0 * d1 < 0:
            t = d0 / (d0 - d1)
            found.append(math.exp(math.log(r0) + t * (math.log(r1) - math.log(r0))))
    if points and points[-1][1] == 0:
        found.append(points[-1][0])
    return found


def rate_text(gbps):
    return f"{gbps:.3g} Gbit/s" if gbps >= 1 else f"{gbps * 1e3:.3g} Mbit/s"


def winner(dp, pp):
    return "DP" if dp > pp else "pipeline"


with open(f"{out}/crossover.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["rate", "rate_gbps", "rtt_us", "probed_gbps",
                "predicted_dp_samples_per_s", "predicted_pipeline_samples_per_s", "predicted_winner",
                "measured_dp_samples_per_s", "measured_pipeline_samples_per_s", "measured_winner",
                "ideal_links_dp_samples_per_s", "ideal_links_pipeline_samples_per_s"])
    for r in rows:
        w.writerow([r["rate"], r["rate_gbps"], f"{r['rtt_us']:.1f}", f"{r['probed_gbps']:.4g}",
                    f"{r['predicted_dp']:.1f}", f"{r['predicted_pipeline']:.1f}",
                    winner(r["predicted_dp"], r["predicted_pipeline"]),
                    f"{r['measured_dp']:.1f}", f"{r['measured_pipeline']:.1f}",
                    winner(r["measured_dp"], r["measured_pipeline"]),
                    f"{r['ideal_dp']:.1f}", f"{r['ideal_pipeline']:.1f}"])

lines = [
    "# Data parallelism against a 2-stage pipeline on 2 network namespaces",
    "",
    f"MLP 4 x 1024 (16.8 MB of weights), micro-batch {microbatch}, global batch {2 * microbatch}: "
    "2 replicas against PipeDream-Flush with 2 micro-batches; samples/s, predicted with SimGrid's "
    "TCP model.",
    "",
    "| link (tbf) | probed | RTT us | predicted DP | predicted pipeline | predicted winner "
    "| measured DP | measured pipeline | measured winner |",
    "|---|---|---|---|---|---|---|---|---|",
]
for r in rows:
    lines.append(
        f"| {r['rate']} | {rate_text(r['probed_gbps'])} | {r['rtt_us']:.0f} | {r['predicted_dp']:.0f} "
        f"| {r['predicted_pipeline']:.0f} | {winner(r['predicted_dp'], r['predicted_pipeline'])} "
        f"| {r['measured_dp']:.0f} | {r['measured_pipeline']:.0f} "
        f"| {winner(r['measured_dp'], r['measured_pipeline'])} |")
predicted, ideal, measured = crossover("predicted"), crossover("ideal"), crossover("measured")
fmt = lambda xs: ", ".join(rate_text(x) for x in xs) if xs else "none within the rates"
lines += ["", f"crossover (DP = pipeline, log-interpolated): predicted {fmt(predicted)}; "
          f"measured {fmt(measured)}"]
if len(predicted) == 1 and len(measured) == 1:
    lines[-1] += f"; predicted / measured = {predicted[0] / measured[0]:.2f}"
lines.append(f"with ideal links (network_model datacenter) the predicted crossover is {fmt(ideal)}")
text = "\n".join(lines) + "\n"
open(f"{out}/crossover.md", "w").write(text)
print(text, end="")
print(f"(files in {out})")
PY
