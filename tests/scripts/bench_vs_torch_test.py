#!/usr/bin/env python3
"""scripts/bench_vs_torch.py's account of where torch's steady state goes, checked on real runs.

  bench_vs_torch_test.py ROOT

Runs the torch side of the benchmark (two ranks under torch.distributed.run, 3 iterations) on
the benchmark's MLP under 1F1B and under interleaved 1F1B, and checks what its JSON line and
report say: every rank counted each of its actions (a forward and a backward per micro-batch and
chunk: 2 m per stage it holds) and no more; the compute inside the actions is less than the
actions (the runtime's own share is not negative: a wrapped function that is not nested in the
actions would make it so); the loss is counted apart, on the rank that holds the last stage
only; the rest of the step is not negative; the report holds one step time per timed iteration. Exits 77 (skipped) where torch cannot be imported.
"""
import json
import os
import random
import subprocess
import sys
import tempfile

try:
    import torch  # noqa: F401
except ImportError:
    print("skipped: no torch in this Python (scripts/setup-torch.sh)")
    sys.exit(77)

root = sys.argv[1]
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAILED:", what)


for name, stages_per_rank in (("mlp-2s-flush", 1), ("mlp-2x2-interleaved", 2)):
    scenario = os.path.join(root, "scenarios", "bench-vs-torch", name + ".json")
    m = json.load(open(scenario))["training"]["microbatches"]
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        run = subprocess.run(
            [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
             "--master-port", str(29500 + random.randrange(2000)),
             os.path.join(root, "scripts", "bench_vs_torch.py"), scenario, "--iterations", "3",
             "--pin", "--report", report],
            capture_output=True, text=True, timeout=240,
            env=dict(os.environ, OMP_NUM_THREADS="1"))
        if run.returncode != 0:
            check(False, f"{name}: bench_vs_torch.py exited {run.returncode}: {run.stderr[-400:]}")
            continue
        line = json.loads(run.stdout.strip().splitlines()[-1])
        print(name, json.dumps(line["per_rank"]))
        check(line["pinned"] is True, f"{name}: --pin not reported")
        check(len(line["per_rank"]) == 2, f"{name}: {len(line['per_rank'])} ranks reported")
        for rank, r in enumerate(line["per_rank"]):
            check(r["actions_per_iteration"] == 2 * m * stages_per_rank,
                  f"{name} rank {rank}: {r['actions_per_iteration']} actions an iteration, "
                  f"expected {2 * m * stages_per_rank}")
            check(r["runtime_ms_per_action"] >= 0,
                  f"{name} rank {rank}: the runtime's share {r['runtime_ms_per_action']} ms < 0")
            check(r["compute_ms_per_iteration"] > 0, f"{name} rank {rank}: no compute")
            # Rank 1 holds the last stage (1 of 2, or 3 of 4 interleaved): the loss is its alone.
            check((r["loss_ms_per_iteration"] > 0) == (rank == 1),
                  f"{name} rank {rank}: loss {r['loss_ms_per_iteration']} ms an iteration")
            check(r["other_ms_per_iteration"] >= -0.01,
                  f"{name} rank {rank}: the rest of the step {r['other_ms_per_iteration']} ms < 0")
            check(r["compute_ms_per_iteration"] < 1e3 * line["iteration_s"],
                  f"{name} rank {rank}: more compute than the iteration")
        steps = json.load(open(report))["details"]["step_s"]
        check(len(steps) == line["iterations"],
              f"{name}: {len(steps)} step times for {line['iterations']} timed iterations")

sys.exit(1 if failures else 0)
