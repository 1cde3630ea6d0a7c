#!/usr/bin/env bash
# Predicted against published: Megatron-LM's measured iteration times on Selene (Korthikanti et
# al. 2022, "Reducing Activation Recomputation in Large Transformer Models", arXiv 2205.05198,
# Table 5: A100-80GB DGX servers, sequence 2048, vocabulary 51,200, bf16), and Megatron-Core
# r0.8.0's weak-scaling table on DGX H100 (Megatron-LM's README, images/model_table.png, added
# in commit f2e5db402c, July 2024: sequence 4096, vocabulary 131,072).
#
#   scripts/validate-published.sh [--out DIR]
#
# For each row, writes the scenario `pipetwin from-megatron` makes of the row's Megatron-LM
# arguments (DIR/scenarios/NAME.json, so that anyone can rerun one with `pipetwin simulate`),
# simulates it, and writes the tables of predicted against measured to DIR/published.md and
# DIR/published.csv (Selene) and DIR/published-h100.md and .csv (H100) with the mean absolute
# percentage error. Nothing is fitted to these times: the device and network parameters are the
# presets' (cluster.cc says where each comes from). The issue's target: MAPE at most 5%, no row
# worse than 10%; the peer analytic model Calculon reports 3.65% mean and 8.87% worst on the
# Selene 8.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_BUILD_DIR:-$root/build}
out=validate-published
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    -h|--help) sed -n 2,18p "$0"; exit 0 ;;
    *) echo "validate-published.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
pipetwin=$build/bin/pipetwin
[ -x "$pipetwin" ] || { echo "validate-published.sh: build first ($pipetwin missing)" >&2; exit 2; }
mkdir -p "$out/scenarios"

# name | layers hidden heads | nodes | TP PP | global micro | layers per virtual stage (0: none)
# | measured full recompute, SP + selective (s)
rows="22B 48 6144 64 1 8 1 4 4 0 1.42 1.10
175B 96 12288 96 8 8 8 64 1 4 18.13 13.75
530B 105 20480 128 35 8 35 280 1 1 49.05 37.83
1T 128 25600 160 64 8 64 512 1 0 94.42 71.49"

csv=$out/published.csv
echo "model,recompute,gpus,tp,pp,dp,measured_s,predicted_s,error_pct,tflops_per_gpu,mfu,peak_memory_gib" > "$csv"
while read -r name layers hidden heads nodes tp pp global micro per_virtual full_s sel_s; do
  for mode in full selective; do
    args=(--num-layers "$layers" --hidden-size "$hidden" --num-attention-heads "$heads"
          --seq-length 2048 --max-position-embeddings 2048 --vocab-size 51200
          --micro-batch-size "$micro" --global-batch-size "$global"
          --tensor-model-parallel-size "$tp" --pipeline-model-parallel-size "$pp" --bf16)
    # The 2022 code these rows ran had no overlap of the interleaved schedule's pipeline
    # communication (--overlap-p2p-communication came later): it waited on every exchange.
    [ "$per_virtual" -gt 0 ] && args+=(--num-layers-per-virtual-pipeline-stage "$per_virtual"
                                       --no-overlap-p2p-communication)
    if [ "$mode" = full ]; then
      args+=(--recompute-granularity full --recompute-method uniform --recompute-num-layers 1)
      measured=$full_s
    else
      args+=(--sequence-parallel --recompute-granularity selective)
      measured=$sel_s
    fi
    scenario=$out/scenarios/$name-$mode.json
    # The 2022 code also sent 1/t of a stage's output without sequence parallelism (its
    # scatter-gather of pipeline tensors, dropped from Megatron-LM in January 2023).
    "$pipetwin" from-megatron --cluster dgx-a100 --nodes "$nodes" --iterations 1 \
      --scatter-gather-pipeline -- "${args[@]}" \
      > "$scenario" 2> "$out/scenarios/$name-$mode.txt"
    "$pipetwin" simulate "$scenario" --no-timeline --json > "$out/$name-$mode.report.json"
    python3 - "$out/$name-$mode.report.json" "$name" "$mode" "$measured" "$((nodes * 8))" \
        "$tp" "$pp" >> "$csv" <<'PY'
import json, sys
report, name, mode, measured, gpus, tp, pp = sys.argv[1:]
r = json.load(open(report))
predicted = r["iteration_s"]
error = 100 * (predicted - float(measured)) / float(measured)
dp = int(gpus) // (int(tp) * int(pp))
peak = r["peak_memory_bytes"] / 2**30
print(f"{name},{mode},{gpus},{tp},{pp},{dp},{measured},{predicted:.3f},{error:.2f},"
      f"{r['tflops_per_gpu']:.1f},{r['mfu']:.3f},{peak:.1f}")
PY
  done
done <<< "$rows"

python3 - "$csv" > "$out/published.md" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("| model | GPUs | TP, PP, DP | recompute | measured (s) | predicted (s) | error | TFLOP/s per GPU | MFU |")
print("|---|---:|---|---|---:|---:|---:|---:|---:|")
for r in rows:
    mode = "full" if r["recompute"] == "full" else "SP + selective"
    print(f"| {r['model']} | {r['gpus']} | {r['tp']}, {r['pp']}, {r['dp']} | {mode} | "
          f"{r['measured_s']} | {float(r['predicted_s']):.2f} | {float(r['error_pct']):+.1f}% | "
          f"{r['tflops_per_gpu']} | {100 * float(r['mfu']):.1f}% |")
errors = [abs(float(r["error_pct"])) for r in rows]
print()
print(f"MAPE {sum(errors) / len(errors):.2f}%, worst {max(errors):.2f}% over {len(errors)} rows "
      "(target: at most 5% and 10%; Calculon: 3.65% and 8.87%).")
PY
cat "$out/published.md"

# Megatron-Core r0.8.0 on DGX H100 (Megatron-LM README's model table): GPT blocks (GeLU MLP of
# 4h, LayerNorm), untied embeddings (the parameter counts say so: 1.7B is 12 l h^2 + 2 V h),
# bf16, with the overlaps the README names (--overlap-grad-reduce, --overlap-param-gather,
# --tp-comm-overlap). The table gives no micro-batch size, virtual stages or recomputation;
# taken as Megatron-LM's defaults and what the README's flags imply, stated here and not varied:
# micro-batch 1, no virtual stages, no recomputation, sequence parallelism wherever TP > 1 (which
# --tp-comm-overlap needs), the distributed optimizer, flash attention. The table gives per-GPU
# TFLOP/s; the iteration time is Megatron-LM's own FLOP count (megatron/training/training.py,
# num_floating_point_operations at core_r0.8.0: 72 B s l h^2 (1 + s / 6h + V / 12 l h) for these
# models, Narayanan's model FLOPs) over that rate and the GPUs. Three iterations are simulated,
# the first left out as warm-up, as Megatron-LM's log averages iterations in flight: with
# --overlap-param-gather an iteration's parameter all-gather runs under the next one's forward.
# name | layers hidden heads | TP PP | GPUs | global batch | published TFLOP/s per GPU
h100_rows="1.7B 24 2048 16 1 1 48 192 408.8
7.1B 30 4096 32 2 1 96 192 465.9
16B 32 6144 48 4 1 192 192 489.1
32B 48 7168 56 8 1 384 192 459.6
70B 84 8192 64 8 2 768 384 419.7
119B 92 10240 80 8 4 1536 768 420.5
177B 96 12288 96 8 6 2304 1152 432.8
314B 96 16384 128 8 8 3072 1536 474.4
462B 112 18432 144 8 16 6144 3072 459.9"
csv=$out/published-h100.csv
echo "model,gpus,tp,pp,dp,global_batch,published_tflops_per_gpu,measured_s,predicted_s,error_pct,tflops_per_gpu,mfu,peak_memory_gib" > "$csv"
while read -r name layers hidden heads tp pp gpus global tflops; do
  args=(--num-layers "$layers" --hidden-size "$hidden" --num-attention-heads "$heads"
        --seq-length 4096 --max-position-embeddings 4096 --vocab-size 131072
        --micro-batch-size 1 --global-batch-size "$global"
        --tensor-model-parallel-size "$tp" --pipeline-model-parallel-size "$pp" --bf16
        --untie-embeddings-and-output-weights --use-flash-attn --use-distributed-optimizer
        --overlap-grad-reduce --overlap-param-gather)
  [ "$tp" -gt 1 ] && args+=(--sequence-parallel --tp-comm-overlap)
  scenario=$out/scenarios/h100-$name.json
  "$pipetwin" from-megatron --cluster dgx-h100 --nodes "$((gpus / 8))" --iterations 3 \
    -- "${args[@]}" > "$scenario" 2> "$out/scenarios/h100-$name.txt"
  "$pipetwin" simulate "$scenario" --no-timeline --json > "$out/h100-$name.report.json"
  python3 - "$out/h100-$name.report.json" "$name" "$layers" "$hidden" "$tp" "$pp" "$gpus" \
      "$global" "$tflops" >> "$csv" <<'PY'
import json, sys
report, name = sys.argv[1:3]
layers, hidden, tp, pp, gpus, batch = map(int, sys.argv[3:9])
tflops = float(sys.argv[9])
s, v = 4096, 131072
flops = 72 * batch * s * layers * hidden**2 * (1 + s / (6 * hidden) + v / (12 * layers * hidden))
measured = flops / (tflops * 1e12 * gpus)
r = json.load(open(report))
predicted = r["iteration_s"]
error = 100 * (predicted - measured) / measured
print(f"{name},{gpus},{tp},{pp},{gpus // (tp * pp)},{batch},{tflops},{measured:.3f},"
      f"{predicted:.3f},{error:.2f},{r['tflops_per_gpu']:.1f},{r['mfu']:.3f},"
      f"{r['peak_memory_bytes'] / 2**30:.1f}")
PY
done <<< "$h100_rows"

python3 - "$csv" > "$out/published-h100.md" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("| model | GPUs | TP, PP, DP | batch | published TFLOP/s per GPU | measured (s) | predicted (s) | error | predicted TFLOP/s per GPU | peak GiB |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['model']} | {r['gpus']} | {r['tp']}, {r['pp']}, {r['dp']} | {r['global_batch']} | "
          f"{r['published_tflops_per_gpu']} | {float(r['measured_s']):.3f} | "
          f"{float(r['predicted_s']):.3f} | {float(r['error_pct']):+.1f}% | {r['tflops_per_gpu']} | "
          f"{r['peak_memory_gib']} |")
errors = [abs(float(r["error_pct"])) for r in rows]
print()
print(f"MAPE {sum(errors) / len(errors):.2f}%, worst {max(errors):.2f}% over {len(errors)} rows "
      "(measured: the published TFLOP/s turned into seconds by Megatron-LM's FLOP count).")
PY
echo
cat "$out/published-h100.md"
