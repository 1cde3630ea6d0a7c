#!/usr/bin/env python3
"""pipetwin's schedules against torch.distributed.pipelining itself, run here.

  torch_schedules_test.py orders PIPETWIN    every torch schedule class's per-rank order, action
                                             by action, against `pipetwin schedule --format csv`
                                             over a grid of (ranks, micro-batches, stages per
                                             rank); where torch refuses a configuration,
                                             pipetwin must refuse it too (exit 2)
  torch_schedules_test.py csv PIPETWIN DIR   the CSV both ways through torch's own loader:
                                             pipetwin's compute-only and lowered CSVs load in
                                             torch's _load_csv, torch's lowered dump of them (and
                                             torch's own lowered orders, OVERLAP_F_B included)
                                             load, check and replay in pipetwin with the same
                                             compute order, and simulate as a scenario's
                                             schedule_csv

Runs under the project's Python (.venv, scripts/setup-torch.sh); exits 77 (skipped) when torch
cannot be imported. The oracle is torch's code, not a transcription of it.
"""
import concurrent.futures
import csv
import io
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
try:
    import torch_schedules as ts  # exits 77 itself when torch is absent
except SystemExit as e:
    sys.exit(e.code)

# (torch class, pipetwin kind, the stages per rank compared)
CLASSES = [
    ("Schedule1F1B", "flush", [1]),
    ("ScheduleGPipe", "gpipe", [1]),
    ("ScheduleInterleaved1F1B", "interleaved", [2, 3, 4]),
    ("ScheduleLoopedBFS", "looped-bfs", [1, 2, 3, 4]),
    ("ScheduleInterleavedZeroBubble", "interleaved-zb", [1, 2, 3, 4]),
    ("ScheduleInterleavedZeroBubble", "zb-h1", [1]),  # ZB-H1 is its one-stage-per-rank case
    ("ScheduleZBVZeroBubble", "zb-v", [2]),
    ("ScheduleDualPipeV", "dualpipe-v", [2]),
]


# Configurations torch refuses that pipetwin builds on purpose, and why.
WIDER = {
    "ScheduleInterleavedZeroBubble vs zb-h1":
        "micro-batch counts that do not divide into torch's rounds: with one stage per rank the "
        "rounds do not change the order, and ZB-H1 (Qi et al., section 2.1) has no such rule",
    "Schedule1F1B": "fewer micro-batches than stages: torch refuses them, Megatron-LM's 1F1B "
                    "(forward_backward_pipelining_without_interleaving) runs them with "
                    "min(p - s - 1, m) warm-up forwards, and so does pipetwin's flush",
}

CHUNKED = ("interleaved", "looped-bfs", "interleaved-zb")


def expand(cell):
    """A torch cell as the compute actions it runs (an OVERLAP_F_B pair as its two)."""
    action = ts.schedules._Action.from_str(cell)
    return [str(a) for a in (action.sub_actions or (action,))]


def torch_order(cls_name, per_rank, ranks, m):
    try:
        schedule = ts.build(cls_name, per_rank, ranks, m)
    except (ValueError, AssertionError, RuntimeError) as e:
        return None, str(e).splitlines()[0] if str(e) else type(e).__name__
    if ts.is_single_stage(cls_name):  # what its step loop runs, not its pipeline_order
        return ts.executed_single_stage_order(cls_name, ranks, m), ""
    return [[a for cell in row for a in expand(cell)] for row in ts.compute_rows(schedule)], ""


def pipetwin(binary, *args):
    return subprocess.run([binary, *args], capture_output=True, text=True)


def pipetwin_order(binary, kind, per_rank, ranks, m):
    r = pipetwin(binary, "schedule", "--kind", kind, "--stages", str(ranks), "--microbatches",
                 str(m), *(["--chunks", str(per_rank)] if kind in CHUNKED else []),
                 "--format", "csv")
    if r.returncode != 0:
        return None, r.returncode, r.stderr.strip()
    return [row for row in csv.reader(io.StringIO(r.stdout))], 0, ""


def grid():
    for cls_name, kind, per_ranks in CLASSES:
        for per_rank in per_ranks:
            for ranks in range(1, 9 if per_rank == 1 else 7):
                for m in list(range(1, 3 * ranks + 3)) + [4 * ranks + 1, 6 * ranks]:
                    if kind == "looped-bfs" and per_rank == 1 and m > 2 * ranks + 2:
                        continue
                    yield cls_name, kind, per_rank, ranks, m


def check_one(binary, case):
    cls_name, kind, per_rank, ranks, m = case
    # Single-stage classes take one stage per rank: `ranks` ranks, `ranks` stages.
    expected, refusal = torch_order(cls_name, per_rank, ranks, m)
    got, rc, err = pipetwin_order(binary, kind, per_rank, ranks, m)
    label = f"{cls_name} vs {kind}: ranks {ranks}, micro-batches {m}, stages per rank {per_rank}"
    if expected is None:
        if got is not None and (cls_name in WIDER or f"{cls_name} vs {kind}" in WIDER):
            return "wider", None
        if got is not None:
            return "compared", f"{label}: torch refuses ({refusal}) but pipetwin builds it"
        if rc != 2:
            return "compared", f"{label}: pipetwin exits {rc}, not 2: {err}"
        return "refused", None
    if got is None:
        return "compared", f"{label}: torch builds it, pipetwin refuses: {err}"
    if len(got) != len(expected):
        return "compared", f"{label}: {len(got)} ranks, torch {len(expected)}"
    for rank, (mine, theirs) in enumerate(zip(got, expected)):
        if mine != theirs:
            i = next((k for k, (a, b) in enumerate(zip(mine, theirs)) if a != b),
                     min(len(mine), len(theirs)))
            return "compared", (f"{label}: rank {rank} differs at action {i}: pipetwin "
                                f"{mine[i:i + 4]}, torch {theirs[i:i + 4]}")
    return "compared", None


def orders(binary):
    cases = list(grid())
    failures, counts = [], {"compared": 0, "refused": 0, "wider": 0}
    per_class = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        for case, (what, failure) in zip(cases, pool.map(lambda c: check_one(binary, c), cases)):
            counts[what] += 1
            tally = per_class.setdefault(f"{case[0]} vs {case[1]}",
                                         {"compared": 0, "refused": 0, "wider": 0})
            tally[what] += 1
            if failure:
                failures.append(failure)
    for pair, tally in per_class.items():
        line = (f"{pair}: {tally['compared']} configurations compared action by action, "
                f"{tally['refused']} refused by both")
        if tally["wider"]:
            why = WIDER.get(pair) or WIDER[pair.split()[0]]
            line += f", {tally['wider']} built by pipetwin only ({why})"
        print(line)
    return finish("MISMATCH", failures,
                  f"{counts['compared']} compared, {counts['refused']} refused by both, "
                  f"{counts['wider']} built by pipetwin only, {len(failures)} mismatches")


def finish(tag, problems, summary):
    """Prints the first problems and the summary; the exit status."""
    for p in problems[:25]:
        print(tag, p)
    print(summary)
    return 1 if problems else 0


def read_rows(path):
    with open(path, newline="") as f:
        return [[c for c in row if c.strip()] for row in csv.reader(f)]


def compute_cells(rows):
    out = []
    for row in rows:
        cells = []
        for cell in row:
            action = ts.schedules._Action.from_str(cell)
            for a in action.sub_actions or (action,):
                if a.computation_type in (ts.schedules.F, ts.schedules.B, ts.schedules.I,
                                          ts.schedules.W):
                    cells.append(str(a))
        out.append(cells)
    return out


def run_checked(binary, *args):
    r = pipetwin(binary, *args)
    if r.returncode != 0:
        raise RuntimeError(f"pipetwin {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def round_trip(binary, directory, kind, ranks, m, chunks):
    """pipetwin -> torch's loader (both forms) -> torch's lowered dump -> pipetwin."""
    label = f"{kind} ranks {ranks} m {m} chunks {chunks}"
    base = ["schedule", "--kind", kind, "--stages", str(ranks), "--microbatches", str(m)]
    if chunks > 1:
        base += ["--chunks", str(chunks)]
    problems = []
    compute = os.path.join(directory, f"{kind}-{ranks}-{m}-{chunks}.csv")
    lowered = os.path.join(directory, f"{kind}-{ranks}-{m}-{chunks}-comms.csv")
    run_checked(binary, *base, "--format", "csv", "--output", compute, "--force")
    run_checked(binary, *base, "--format", "csv-comms", "--output", lowered, "--force")
    original = read_rows(compute)
    for path, form in ((compute, "compute_only"), (lowered, "compute_comms")):
        dumped = path + f".torch-{form}.csv"
        try:
            ts.load_and_dump(path, form, dumped)
        except Exception as e:  # whatever torch's loader raises is the finding
            problems.append(f"{label}: torch's _load_csv({form}) refuses pipetwin's CSV: "
                            f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            continue
        back = run_checked(binary, "schedule", "--import", dumped, "--check", "--format", "csv")
        if compute_cells([r for r in csv.reader(io.StringIO(back))]) != original:
            problems.append(f"{label}: torch's lowered dump ({form}) imports with another "
                            "compute order")
    return problems


def torch_written(binary, directory, cls_name, per_rank, ranks, m):
    """torch's own lowered order (OVERLAP_F_B included) -> pipetwin import, check, replay."""
    label = f"{cls_name} ranks {ranks} m {m}"
    schedule = ts.build(cls_name, per_rank, ranks, m)
    path = os.path.join(directory, f"torch-{cls_name}-{ranks}-{m}.csv")
    with open(path, "w", newline="") as f:
        order = schedule.pipeline_order_with_comms
        ts.write_rows([[str(a) for a in order[r]] for r in sorted(order)], f)
    back = run_checked(binary, "schedule", "--import", path, "--check", "--format", "csv")
    expected = [[a for cell in row for a in expand(cell)] for row in ts.compute_rows(schedule)]
    if [r for r in csv.reader(io.StringIO(back))] != expected:
        return [f"{label}: pipetwin's import of torch's lowered CSV has another compute order"]
    text = run_checked(binary, "schedule", "--import", path)
    if "check: ok" not in text:
        return [f"{label}: the import does not check"]
    # ... and runs: the simulator takes it as a scenario's schedule_csv (one layer per stage).
    stages = per_rank * ranks
    scenario = {
        "name": label,
        "workload": {"generator": "mlp", "layers": stages, "input": 16, "width": 32,
                     "classes": 8, "batch": 4},
        "cluster": {"levels": [{"count": ranks, "bandwidth_gbps": 10}]},
        "plan": {"stages": [{"first_layer": g, "last_layer": g} for g in range(stages)]},
        "schedule_csv": os.path.basename(path),
        "training": {"microbatch_size": 4, "microbatches": m, "iterations": 2},
    }
    scenario_path = path + ".scenario.json"
    with open(scenario_path, "w") as f:
        json.dump(scenario, f)
    r = pipetwin(binary, "simulate", scenario_path)
    if r.returncode != 0 or "imported" not in r.stdout:
        return [f"{label}: simulate with it as schedule_csv: exit {r.returncode}: "
                f"{r.stderr.strip()[:200]}"]
    return []


def csv_both_ways(binary, directory):
    problems, trips = [], 0
    for kind, chunks in (("gpipe", 1), ("flush", 1), ("zb-h1", 1), ("zb-h2", 1), ("interleaved", 2),
                         ("interleaved", 3), ("looped-bfs", 2), ("interleaved-zb", 2),
                         ("zb-v", 2), ("dualpipe-v", 2)):
        for ranks in (1, 2, 4):
            for m in (2 * ranks, 3 * ranks + 1 if kind not in ("interleaved",
                                                               "interleaved-zb") else 4 * ranks):
                if kind == "dualpipe-v" and m < 2 * ranks:
                    continue
                problems += round_trip(binary, directory, kind, ranks, m, chunks)
                trips += 1
    written = 0
    for cls_name, per_rank in (("ScheduleDualPipeV", 2), ("ScheduleZBVZeroBubble", 2),
                               ("ScheduleInterleaved1F1B", 2), ("ScheduleLoopedBFS", 3),
                               ("ScheduleInterleavedZeroBubble", 2)):
        for ranks in (2, 3, 4):
            problems += torch_written(binary, directory, cls_name, per_rank, ranks, 2 * ranks + 2)
            written += 1
    return finish("FAIL", problems,
                  f"{trips} pipetwin schedules through torch's loader in both forms and back, "
                  f"{written} torch-written lowered schedules imported; {len(problems)} problems")


def main(argv):
    if len(argv) >= 3 and argv[1] == "orders":  # (a third argument, a directory, is unused)
        return orders(argv[2])
    if len(argv) >= 4 and argv[1] == "csv":
        os.makedirs(argv[3], exist_ok=True)
        return csv_both_ways(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
