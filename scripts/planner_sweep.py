#!/usr/bin/env python3
"""Planner against simulator: for each configuration, the throughput the planner predicts for the
plan it picks (`pipetwin plan --json`) and what `pipetwin simulate` gives for that same plan.

  scripts/planner_sweep.py [--bin build/bin] [--out DIR] [--only SUBSTRING]

Configurations: PipeDream-2BW's GPT 2.2B and 3.8B (ICML'21 section 5: 32 blocks, h 2304 / 3072,
sequence 512) on 4 and 8 p3.16xlarge servers at global batch 64, 256, 512, 1,024 and 2,048 with the 2bw,
gpipe (with and without recomputation, which GPipe uses), flush and data-parallel planners; VGG-16 and ResNet-50 (the generators) on
PipeDream's Cluster-A (4 servers of 4 V100) with both PipeDream planners and data parallelism.
Writes DIR/planner_sweep.md and .csv (one row each) and prints the table; the gap is
(planned - simulated) / simulated.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile


def gpt(size, servers, batch, planner):
    hidden = {"2.2b": 2304, "3.8b": 3072}[size]
    recompute = planner.endswith("+recompute")
    planner = planner.replace("+recompute", "")
    schedule = {"2bw": "2bw", "gpipe": "gpipe", "flush": "flush", "data-parallel": "flush"}[planner]
    return {
        "name": f"gpt-{size} {8 * servers}xv100 batch {batch} {planner}"
                + (" +recompute" if recompute else ""),
        "workload": {"generator": "gpt", "layers": 32, "hidden": hidden, "heads": 32,
                     "sequence": 512, "vocabulary": 51200, "microbatch": 1, "dtype_bytes": 2},
        "cluster": {"preset": "p3.16xlarge", "servers": servers},
        "planner": planner,
        "schedule": schedule,
        "training": {"global_batch_size": batch, "microbatch_size": 1, "microbatches": 32,
                     "iterations": 16, "optimizer": "adam", "optimizer_bytes_per_parameter": 8,
                     "recompute": recompute},
    }


def cnn(model, planner):
    batch = 64
    schedule = "flush" if planner == "data-parallel" else "pipedream"
    return {
        "name": f"{model} cluster-a 4x4 {planner}",
        "workload": {"generator": model, "image_size": 224, "batch": batch, "dtype_bytes": 4},
        "cluster": {"preset": "cluster-a", "servers": 4},
        "planner": planner,
        "schedule": schedule,
        # Asynchronous 1F1B over replicated stages fills for several iterations: 16 of them
        # make the simulator's steady-state window long enough (4 give a single interval).
        "training": {"microbatch_size": batch, "microbatches": 16, "iterations": 16,
                     "optimizer": "momentum", "learning_rate": 0.01},
    }


def configurations():
    for size in ("2.2b", "3.8b"):
        for servers in (4, 8):
            for batch in (64, 256, 512, 1024, 2048):
                for planner in ("2bw", "gpipe", "gpipe+recompute", "flush", "data-parallel"):
                    yield gpt(size, servers, batch, planner)
    for model in ("vgg16", "resnet50"):
        for planner in ("pipedream", "pipedream-compat", "data-parallel"):
            yield cnn(model, planner)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(p.stdout), ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    pipetwin = os.path.join(args.bin, "pipetwin")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, scenario in enumerate(configurations()):
            if args.only not in scenario["name"]:
                continue
            path = os.path.join(tmp, f"s{i}.json")
            with open(path, "w") as f:
                json.dump(scenario, f)
            plan, why = run([pipetwin, "plan", path, "--json"])
            row = {"configuration": scenario["name"], "depth": "", "width": "",
                   "planned": "", "simulated": "", "gap_percent": "", "note": why}
            if plan:
                stages = plan["stages"]
                row["depth"] = len(stages)
                row["width"] = stages[0]["replicas"]
                row["planned"] = round(plan["predicted_samples_per_s"], 2)
                report, why = run([pipetwin, "simulate", path, "--json"])
                if report:
                    row["simulated"] = round(report["samples_per_s"], 2)
                    row["gap_percent"] = round(
                        100 * (plan["predicted_samples_per_s"] / report["samples_per_s"] - 1), 1)
                else:
                    row["note"] = why
            rows.append(row)
            print(f"{row['configuration']:<42} depth {row['depth']:>3} width {row['width']:>3} "
                  f"planned {row['planned']:>9} simulated {row['simulated']:>9} "
                  f"gap {row['gap_percent']:>6}% {row['note']}", flush=True)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "planner_sweep.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        with open(os.path.join(args.out, "planner_sweep.md"), "w") as f:
            f.write("| configuration | depth | width | planned samples/s | simulated | gap |\n")
            f.write("|---|---:|---:|---:|---:|---:|\n")
            for r in rows:
                gap = f"{r['gap_percent']}%" if r["gap_percent"] != "" else r["note"]
                if "fits" in gap or "does not fit" in gap:
                    gap = "no plan fits the memory"
                f.write(f"| {r['configuration']} | {r['depth']} | {r['width']} | {r['planned']} "
                        f"| {r['simulated']} | {gap} |\n")
    gaps = [abs(r["gap_percent"]) for r in rows if r["gap_percent"] != ""]
    if gaps:
        within = sum(g <= 5 for g in gaps)
        print(f"{len(gaps)} configurations compared, {within} within 5%, worst {max(gaps)}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
