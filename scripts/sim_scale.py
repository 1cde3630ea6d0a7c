#!/usr/bin/env python3
"""How the simulator's cost grows with the cluster (scripts/sim-scale.sh runs it).

For each configuration (GPT-3 175B, one iteration of 64 micro-batches per pipeline on DGX A100
servers of 8 GPUs) and each GPU count, writes the scenario, runs `pipetwin simulate SCENARIO
--no-timeline --json` in a child process and records its wall time, its peak RSS (the
child's own, from wait4), the SimGrid activities it ran and the replicas it simulated; then the
growth exponent between consecutive GPU counts, log(t2 / t1) / log(n2 / n1), against n log n's.

Configurations:
  pp16       16 stages x n/16 replicas, a replica's stages side by side (the default placement)
  pp64       64 stages x n/64 replicas
  tp8-pp16   Megatron-LM's launch line (`pipetwin from-megatron`): TP 8 x PP 16 x DP n/128,
             data-parallel before pipeline
Each is simulated as `pipetwin simulate` does by default (identical replicas simulated once per
group, sim/symmetry.h) and, with --full, also every replica event by event (--no-symmetry) up to
--full-max GPUs.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gpt_scenario(gpus, stages):
    base = json.load(open(os.path.join(ROOT, "scenarios", "sim-gpt3-1024.json")))
    replicas = gpus // stages
    layers = 98  # the gpt generator's 96 blocks, embedding and head
    base["name"] = "GPT-3 175B on %d A100s: %d stages x %d replicas" % (gpus, stages, replicas)
    base["cluster"]["servers"] = gpus // 8
    base["plan"]["stages"] = [
        {"first_layer": s * layers // stages, "last_layer": (s + 1) * layers // stages - 1,
         "replicas": replicas} for s in range(stages)]
    return base


def megatron_scenario(pipetwin, gpus):
    args = [pipetwin, "from-megatron", "--nodes", str(gpus // 8), "--iterations", "1", "--",
            "--num-layers", "96", "--hidden-size", "12288", "--num-attention-heads", "96",
            "--seq-length", "2048", "--max-position-embeddings", "2048", "--vocab-size", "51200",
            "--tensor-model-parallel-size", "8", "--pipeline-model-parallel-size", "16",
            "--micro-batch-size", "1", "--global-batch-size", str(64 * gpus // 128),
            "--recompute-granularity", "full", "--recompute-method", "uniform",
            "--sequence-parallel", "--use-distributed-optimizer"]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("sim_scale.py: %s failed: %s" % (" ".join(args), out.stderr.strip()))
    return json.loads(out.stdout)


def run(pipetwin, path, full, timeout):
    args = [pipetwin, "simulate", path, "--no-timeline", "--json"] + (["--no-symmetry"] if full else [])
    start = time.monotonic()
    with open(os.path.splitext(path)[0] + (".full" if full else "") + ".out", "w+") as out, \
            open(os.path.splitext(path)[0] + (".full" if full else "") + ".err", "w+") as err:
        child = subprocess.Popen(args, stdout=out, stderr=err)
        # wait4: this run's own rusage (pipetwin execs pipetwin-sim in the same process).
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                child.kill()
                os.wait4(child.pid, 0)
                return {"error": "over %d s" % timeout}
            time.sleep(0.05)
        wall = time.monotonic() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            lines = err.read().strip().splitlines()
            return {"error": lines[-1] if lines else "failed"}
        out.seek(0)
        report = json.load(out)
    d = report["details"]
    return {"wall_s": wall, "peak_rss_mb": usage.ru_maxrss / 1024.0,
            "activities": d["activities"], "simulated_replicas": d["simulated_replicas"],
            "samples_per_s": report["samples_per_s"], "iteration_s": report["iteration_s"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pipetwin", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--gpus", default="1024,4096,16384")
    p.add_argument("--configs", default="pp16,pp64,tp8-pp16")
    p.add_argument("--full", action="store_true")
    p.add_argument("--full-max", type=int, default=4096)
    p.add_argument("--timeout", type=int, default=600)
    a = p.parse_args()
    gpus = sorted(int(g) for g in a.gpus.split(","))
    rows = []
    for config in a.configs.split(","):
        for full in ([False, True] if a.full else [False]):
            for n in gpus:
                if full and n > a.full_max:
                    continue
                if config == "pp16":
                    scenario = gpt_scenario(n, 16)
                elif config == "pp64":
                    scenario = gpt_scenario(n, 64)
                elif config == "tp8-pp16":
                    scenario = megatron_scenario(a.pipetwin, n)
                else:
                    sys.exit("sim_scale.py: unknown configuration %s" % config)
                path = os.path.join(a.out, "%s-%d.json" % (config, n))
                with open(path, "w") as f:
                    json.dump(scenario, f, indent=1)
                r = run(a.pipetwin, path, full, a.timeout)
                r.update({"config": config, "gpus": n, "mode": "every replica" if full else "default"})
                rows.append(r)
                print("%-9s %-13s %6d GPUs: %s" % (config, r["mode"], n,
                      r.get("error") or "%.2f s, %.0f MB, %d activities, %d replicas simulated"
                      % (r["wall_s"], r["peak_rss_mb"], r["activities"], r["simulated_replicas"])),
                      file=sys.stderr, flush=True)
    with open(os.path.join(a.out, "sim-scale.json"), "w") as f:
        json.dump(rows, f, indent=1)
    lines = ["| configuration | simulated | GPUs | replicas simulated | activities | wall s | "
             "peak RSS MB | growth exponent (n log n) |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    prev = {}
    for r in rows:
        key = (r["config"], r["mode"])
        if "error" in r:
            lines.append("| %s | %s | %d | | | %s | | |" % (r["config"], r["mode"], r["gpus"], r["error"]))
            prev.pop(key, None)
            continue
        growth = ""
        if key in prev:
            q = prev[key]
            ratio = math.log(r["gpus"] / q["gpus"])
            nlogn = math.log(r["gpus"] * math.log(r["gpus"]) / (q["gpus"] * math.log(q["gpus"])))
            growth = "%.2f (%.2f)" % (math.log(r["wall_s"] / q["wall_s"]) / ratio, nlogn / ratio)
        prev[key] = r
        lines.append("| %s | %s | %s | %d of %d | %s | %.2f | %.0f | %s |" % (
            r["config"], r["mode"], "{:,}".format(r["gpus"]), r["simulated_replicas"],
            r["gpus"] // {"pp16": 16, "pp64": 64, "tp8-pp16": 128}[r["config"]],
            "{:,}".format(r["activities"]), r["wall_s"], r["peak_rss_mb"], growth))
    table = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "sim-scale.md"), "w") as f:
        f.write(table)
    print(table, end="")


if __name__ == "__main__":
    main()
