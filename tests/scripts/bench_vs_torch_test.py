#!/usr/bin/env python3
"""scripts/bench_vs_torch.py's account of where torch's steady state goes, checked on real runs.

  bench_vs_torch_test.py ROOT

Runs the torch side of the benchmark (two ranks under torch.distributed.run, 3 iterations) on
the benchmark's MLP under 1F1B and under interleaved 1F1B, and checks what its JSON line and
report say: every rank counted each of its actions (a forward and a backward per micro-batch and
chunk: 2 m per stage it holds) and no more; the compute inside the actions is less than the
actions (the runtime's own share is not negative: a wrapped function that is not nested in the
actions would make it so); the loss is counted apart, on the rank that holds the last stage
only; the rest of the step is not negative; the report holds one step time per timed iteration;
each rank's thread account (its wait for a CPU, preemptions, c10d Gloo's threads' CPU) is there
exactly where the kernel keeps schedstat, and Gloo's threads ran.
Both runs also profile their layers (--profile): every layer's times measured, the other fields
kept from --like, each rank's profiled compute and runtime per action of the order of its
run's (and the JSON line's profiled compute and probe figure are the profile's), and --replay
holds the run's own times. The 1F1B run profiles before the run and its
--timeline holds the calls the JSON line sums, one by one; the interleaved run profiles between
its steps (--profile-during), and its throughput counts the steps alone. Exits 77 (skipped)
where torch cannot be imported.
"""
import json
import os
import random
import re
import subprocess
import sys
import tempfile

from checks import Checks, require_torch

require_torch()
root = sys.argv[1]
check = Checks()
# Where the kernel keeps schedstat, each rank also reports its thread account (as pipetwin does).
schedstat = os.path.exists(f"/proc/self/task/{os.getpid()}/schedstat")

for name, stages_per_rank in (("mlp-2s-flush", 1), ("mlp-2x2-interleaved", 2)):
    scenario = os.path.join(root, "scenarios", "bench-vs-torch", name + ".json")
    m = json.load(open(scenario))["training"]["microbatches"]
    during = stages_per_rank == 2
    # The layers each rank holds: stage i on rank i mod 2, as bench_vs_torch.py places them.
    plan_stages = json.load(open(scenario))["plan"]["stages"]
    layers_of_rank = [[l for i, st in enumerate(plan_stages) if i % 2 == rank
                       for l in range(st["first_layer"], st["last_layer"] + 1)]
                      for rank in range(2)]
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        # The 1F1B run also profiles its layers under torch's runtime (--profile), the other
        # fields of the workload from a file written here (its bytes are not measured).
        profile, like = os.path.join(tmp, "profile.json"), os.path.join(tmp, "like.json")
        like_layers = [{"id": f"fc{i}", "forward_ms": 1.0, "backward_ms": 1.0, "update_ms": 1.0,
                        "activation_bytes": 4096.0 * (i + 1), "parameters": 1.0}
                       for i in range(4)]
        json.dump({"name": "like", "layers": like_layers}, open(like, "w"))
        timeline, replay = os.path.join(tmp, "timeline.json"), os.path.join(tmp, "replay.json")
        profiling = ["--profile", profile, "--like", like, "--replay", replay] + (
            ["--profile-during"] if during else ["--timeline", timeline])
        run = subprocess.run(
            [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
             "--master-port", str(29500 + random.randrange(2000)),
             os.path.join(root, "scripts", "bench_vs_torch.py"), scenario, "--iterations", "3",
             "--pin", "--report", report] + profiling,
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
            # The thread account, as pipetwin's report has it: exactly where the kernel keeps
            # schedstat; the wait a share of the timed steps, and c10d Gloo's threads ran (they
            # moved every message).
            account = ("waited_for_cpu_s", "waited_for_cpu_fraction", "preemptions",
                       "helper_threads_cpu_s")
            check(all((k in r) == schedstat for k in account),
                  f"{name} rank {rank}: thread account {[k in r for k in account]}, the kernel "
                  f"{'keeps' if schedstat else 'keeps no'} schedstat")
            if schedstat:
                check(0 <= r["waited_for_cpu_fraction"] < 1 and r["waited_for_cpu_s"] >= 0,
                      f"{name} rank {rank}: waited {r['waited_for_cpu_s']} s, a share of "
                      f"{r['waited_for_cpu_fraction']}")
                check(r["helper_threads_cpu_s"] > 0 and r["preemptions"] >= 0,
                      f"{name} rank {rank}: Gloo's threads ran {r['helper_threads_cpu_s']} s, "
                      f"{r['preemptions']} preemptions")
        steps = json.load(open(report))["details"]["step_s"]
        check(len(steps) == line["iterations"],
              f"{name}: {len(steps)} step times for {line['iterations']} timed iterations")
        if during:
            # --profile-during: the throughput counts the steps alone (each from one barrier
            # to the next), not the profiling rounds between them.
            check(abs(line["iteration_s"] * line["iterations"] - sum(steps)) < 1e-6,
                  f"{name}: {line['iterations']} iterations of {line['iteration_s']} s, the "
                  f"steps took {sum(steps)} s")
        # --timeline: the same calls the sums above count, one by one: per rank as many
        # actions, the same compute (the loss included) to the microsecond, each compute call
        # inside an action, and every call inside the steady state.
        ranks = [] if during else json.load(open(timeline))["ranks"]
        check(during or len(ranks) == 2, f"{name}: the timeline has {len(ranks)} ranks")
        for rank, (t, r) in enumerate(zip(ranks, line["per_rank"])):
            events = t["events"]
            actions = [e for e in events if e[0] == "action_s"]
            check(len(actions) == r["actions_per_iteration"] * line["iterations"],
                  f"{name} rank {rank}: {len(actions)} actions in the timeline")
            compute = sum(e[3] - e[2] for e in events if e[0] in ("compute_s", "loss_s"))
            check(abs(1e3 * compute / line["iterations"] - r["compute_ms_per_iteration"]) < 1e-3,
                  f"{name} rank {rank}: the timeline's compute {compute} s against "
                  f"{r['compute_ms_per_iteration']} ms an iteration")
            outside = [e for e in events if e[0] == "compute_s"
                       and not any(a[2] <= e[2] and e[3] <= a[3] for a in actions)]
            check(not outside, f"{name} rank {rank}: compute outside every action: {outside[:2]}")
            end = t["start_s"] + sum(t["step_s"])
            check(len(t["step_s"]) == line["iterations"] and
                  all(t["start_s"] <= e[2] <= e[3] <= end + 1e-3 for e in events),
                  f"{name} rank {rank}: calls outside the steady state {t['start_s']}..{end}")
        # --replay: the profile again with the run's own times: per rank and iteration its m
        # forwards (the loss included) and m backwards, each with the run's runtime per action,
        # and its optimizer, to the microsecond.
        replayed = json.load(open(replay))["layers"]
        for rank, r in enumerate(line["per_rank"]):
            mine = [replayed[l] for l in layers_of_rank[rank]]
            runtime = stages_per_rank * m * r["runtime_ms_per_action_all"]
            forward = r["forward_ms_per_iteration"] + r["loss_ms_per_iteration"]
            for what, got, want in (
                    ("forwards", m * sum(l["forward_ms"] for l in mine), forward + runtime),
                    ("backwards", m * sum(l["backward_ms"] for l in mine),
                     r["compute_ms_per_iteration"] - forward + runtime),
                    ("optimizer", sum(l["update_ms"] for l in mine),
                     r["optimizer_ms_per_iteration"])):
                check(abs(got - want) < 1e-3 * max(1.0, want),
                      f"{name} rank {rank}: the replay's {what} {got:.4f} ms an iteration, the "
                      f"run's {want:.4f}")
        layers = json.load(open(profile))["layers"]
        check([l["id"] for l in layers] == [l["id"] for l in like_layers],
              f"{name}: the profile's layers {[l['id'] for l in layers]}")
        for mine, theirs in zip(layers, like_layers):
            check(mine["activation_bytes"] == theirs["activation_bytes"],
                  f"{name} {mine['id']}: activation_bytes not kept from --like")
            check(all(mine[k] > 0 and mine[k] != 1.0 for k in ("forward_ms", "backward_ms",
                                                               "update_ms")),
                  f"{name} {mine['id']}: times not measured: {mine}")
            check("torch" in mine["description"], f"{name} {mine['id']}: {mine['description']}")
            check(("between the run's steps" in mine["description"]) == during,
                  f"{name} {mine['id']}: {mine['description']}")
        # The runtime's own cost per action, probed on stand-in stages (probe_runtime), against
        # the run's: all a rank did beyond compute, waits and the optimizer, per action. Not the
        # same figure (the run's holds scaling the gradients, the probe's no compute to hide the
        # exchanges' threads behind), but the same order: a unit slip or a wait counted as the
        # runtime's would not be.
        for rank, r in enumerate(line["per_rank"]):
            found = re.search(r"own ([0-9.]+) ms per action",
                              layers[layers_of_rank[rank][0]]["description"])
            check(found is not None, f"{name} rank {rank}: no runtime per action in the profile")
            if found:
                probed = float(found.group(1))
                check(0.1 < probed / r["runtime_ms_per_action_all"] < 10,
                      f"{name} rank {rank}: the probe's {probed} ms per action, the run's "
                      f"{r['runtime_ms_per_action_all']:.3f}")
                print(name, "rank", rank, f"runtime per action: probed {probed} ms, in the run",
                      f"{r['runtime_ms_per_action_all']:.3f} ms")
        # Each rank's profiled compute an iteration (m micro-batches' forwards and backwards of
        # its two layers) against the compute the run's own timers saw inside its actions: the
        # same work, so the same order of size (a layer timed in ms where s were meant, or a
        # hook that fired at the wrong layer, would not be).
        for rank, r in enumerate(line["per_rank"]):
            mine = [layers[l] for l in layers_of_rank[rank]]
            profiled = m * sum(l["forward_ms"] + l["backward_ms"] for l in mine)
            check(0.5 < profiled / r["compute_ms_per_iteration"] < 2,
                  f"{name} rank {rank}: profiled {profiled:.1f} ms of compute an iteration, "
                  f"the run {r['compute_ms_per_iteration']:.1f}")
            print(name, "rank", rank, f"profiled {profiled:.1f} ms, run",
                  f"{r['compute_ms_per_iteration']:.1f} ms of compute an iteration")
            # The JSON line's own account of the profile: the same compute less the runtime
            # probe's share (two actions per micro-batch and stage), and the probe's figure.
            found = re.search(r"own ([0-9.]+) ms per action", mine[0]["description"])
            if found:
                probed = float(found.group(1))
                want = profiled - 2 * m * stages_per_rank * probed
                check(abs(r["profiled_compute_ms_per_iteration"] - want) < 0.01 * m + 1e-3 * want,
                      f"{name} rank {rank}: the line's profiled compute "
                      f"{r['profiled_compute_ms_per_iteration']:.3f} ms, the profile's {want:.3f}")
                check(abs(r["profiled_runtime_ms_per_action"] - probed) < 5e-4 + 1e-3 * probed,
                      f"{name} rank {rank}: the line's probed runtime "
                      f"{r['profiled_runtime_ms_per_action']} ms per action, the profile's {probed}")

# Bad input: --profile without --like, a --like that is no workload file: one line, exit 2.
for extra, what in ((["--profile", "x.json"], "--like"),
                    (["--profile", "x.json", "--like", os.path.join(root, "README.md")],
                     "$.layers")):
    bad = subprocess.run([sys.executable, os.path.join(root, "scripts", "bench_vs_torch.py"),
                          os.path.join(root, "scenarios", "bench-vs-torch", "mlp-2s-flush.json")]
                         + extra, capture_output=True, text=True, timeout=120)
    check(bad.returncode == 2 and what in bad.stderr and len(bad.stderr.strip().splitlines()) == 1,
          f"{extra}: exit {bad.returncode}, {bad.stderr[-300:]}")

check.finish("torch's steady state accounted for, action by action")
