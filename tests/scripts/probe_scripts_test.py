#!/usr/bin/env python3
"""The machine probes docs/validation.md quotes still run and report what they say they report.

  probe_scripts_test.py ROOT

Runs each mode of scripts/gloo_send_probe.py (two processes over c10d Gloo; the ring with and
without its helper threads under SCHED_BATCH, and as two 1F1B stages; the stages computing in a profile's
order, in 1F1B's and beside their messages) and
scripts/speed_drift.py and scripts/corunner_phase.py briefly, and scripts/backward_ratio.py on a
made-up profile and trace, and checks the lines they print: every figure present and
positive, a median never above its 90th percentile, both kinds of sender reported, the idle
times asked for reported in order with no excess at no idle; and that a malformed option ends the
script with one line naming it and a non-zero status. The figures themselves depend on the
machine and are not checked. Exits 77 (skipped) where torch cannot be imported.
"""
import re
import subprocess
import sys

from checks import Checks, require_torch

require_torch()
root = sys.argv[1]
check = Checks()

def run(script, *args, port=None):
    command = [sys.executable, f"{root}/scripts/{script}", *args]
    if port:
        command += ["--port", str(port)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


ARRIVAL = re.compile(r"sender (idle|computing) +(.*): arrival after mean (\d+) us, median (\d+), "
                     r"90th percentile (\d+) \((\d+) messages\)")


def check_arrivals(mode, out, trials):
    seen = {}
    for line in out.splitlines():
        m = ARRIVAL.match(line)
        if m:
            seen[m[1]] = [int(x) for x in m.group(3, 4, 5, 6)]
    check(set(seen) == {"idle", "computing"}, f"{mode}: both senders reported, got {out!r}")
    for sender, (mean, median, p90, count) in seen.items():
        check(mean > 0 and 0 < median <= p90, f"{mode}, {sender}: mean {mean}, median {median}, "
              f"90th percentile {p90}")
        check(count == trials // 2, f"{mode}, {sender}: {count} messages of {trials // 2}")


trials = 10
for k, mode in enumerate([["--arrival", "--wait-ms", "0.2"],
                          ["--arrival", "--wait-ms", "0.5", "--compute-before", "--yield-first"],
                          ["--late", "--late-ms", "0.5", "--compute-ms", "0.5"]]):
    code, out, err = run("gloo_send_probe.py", *mode, "--trials", str(trials), port=29561 + k)
    check(code == 0, f"gloo_send_probe.py {' '.join(mode)} exited {code}: {err[-400:]}")
    check_arrivals(" ".join(mode), out, trials)

RING = re.compile(r"rank (\d)( \(helpers SCHED_BATCH\))?: a (?:hop|step) took (\d+) us, its GEMMs "
                  r"(\d+) us of thread CPU, the other threads ran (\d+) us; the computing thread "
                  r"waited (\d+) us for its CPU, preempted ([\d.]+) times")
for k, extra in enumerate([[], ["--batch-helpers"], ["--pipeline"]]):
    code, out, err = run("gloo_send_probe.py", "--ring", "--trials", "20", *extra, port=29567 + k)
    check(code == 0, f"--ring {extra}: exited {code}: {err[-400:]}")
    lines = [RING.match(line) for line in out.splitlines() if line.startswith("rank")]
    check(len(lines) == 2 and all(lines), f"--ring {extra}: two ranks' lines, got {out!r}")
    for m in filter(None, lines):
        hop, gemms = int(m[3]), int(m[4])
        check(bool(m[2]) == ("--batch-helpers" in extra),
              f"--ring {extra}: policy said, got {m[0]!r}")
        check((" a step " in m[0]) == ("--pipeline" in extra),
              f"--ring {extra}: hop or step, got {m[0]!r}")
        check(0 < gemms <= hop, f"--ring {extra}: GEMMs {gemms} us within the hop's {hop} us")

# --context: each rank's forward and backward in the three orders; the same ops in each, so of
# the same order of size (a block timed whole, or a kind that skipped its compute, would not be),
# and each change what its two times say.
code, out, err = run("gloo_send_probe.py", "--context", "--trials", "12", port=29570)
check(code == 0, f"--context: exited {code}: {err[-400:]}")
CONTEXT = re.compile(r"rank (\d) (forward|backward): each backward after its forward (\d+) us; "
                     r"in 1F1B's order (\d+) us \(([+-][\d.]+)%\); with its messages (\d+) us "
                     r"\(([+-][\d.]+)%\)$")
found = [CONTEXT.match(line) for line in out.splitlines() if line.startswith("rank")]
check(len(found) == 4 and all(found) and {(m[1], m[2]) for m in found} ==
      {(r, op) for r in "01" for op in ("forward", "backward")},
      f"--context: each rank's forward and backward, got {out!r}")
for m in filter(None, found):
    adjacent, alone, piped = int(m[3]), int(m[4]), int(m[6])
    check(0 < adjacent and 0.5 < alone / adjacent < 2 and 0.5 < piped / alone < 2 and
          abs(100 * (alone / adjacent - 1) - float(m[5])) < 0.2 and
          abs(100 * (piped / alone - 1) - float(m[7])) < 0.2, f"--context: {m[0]!r}")

code, out, err = run("gloo_send_probe.py", "--trials", "6", port=29565)
check(code == 0 and re.search(r"isend\(\) returned in \d+ us \(median\)", out),
      f"gloo_send_probe.py (default): exited {code}, printed {out!r} {err[-300:]}")
code, out, err = run("gloo_send_probe.py", "--trials", "1", port=29566)
check(code != 0 and "--trials must be at least 2" in err, f"--trials 1: exited {code}, {err!r}")

code, out, err = run("speed_drift.py", "--after-idle", "--idle-ms", "3,0.5", "--trials", "5")
check(code == 0, f"speed_drift.py --after-idle exited {code}: {err[-400:]}")
idle = [(float(m[1]), float(m[2]), float(m[3])) for m in re.finditer(
    r"after ([\d.]+) ms idle: the work took ([\d.]+) ms \(median of 5\), ([+-][\d.]+) ms", out)]
check([w for w, _, _ in idle] == [0, 0.5, 3], f"--after-idle: idle times {idle} from {out!r}")
check(all(t > 0 for _, t, _ in idle), f"--after-idle: every work timed, got {idle}")
check(idle and idle[0][2] == 0, f"--after-idle: no excess at no idle, got {idle[:1]}")
code, out, err = run("speed_drift.py", "--after-idle", "--idle-ms", "1,x")
check(code != 0 and "--idle-ms" in err and len(err.strip().splitlines()) == 1,
      f"--idle-ms 1,x: exited {code}, {err!r}")

code, out, err = run("speed_drift.py", "--seconds", "1", "--window", "0.5")
check(code == 0 and re.search(r"GFLOP/s per 0.5-s window: mean [\d.]+", out),
      f"speed_drift.py --seconds 1: exited {code}, printed {out!r} {err[-300:]}")

# scripts/corunner_phase.py: every mode's forward and backward, with steps counted.
code, out, err = run("corunner_phase.py", "--seconds", "2", "--block", "0.1", "--width", "256")
phases = {m[1]: (int(m[2]), float(m[3]), float(m[4])) for m in re.finditer(
    r"^(all|bwd|fwd|idle) +(\d+) steps: forward median ([\d.]+) ms, backward median ([\d.]+) ms",
    out, re.M)}
check(code == 0 and sorted(phases) == ["all", "bwd", "fwd", "idle"],
      f"corunner_phase.py: exited {code}, modes {sorted(phases)} from {out!r} {err[-300:]}")
check(all(n > 0 and f > 0 and b > 0 for n, f, b in phases.values()),
      f"corunner_phase.py: every mode stepped and timed, got {phases}")

# scripts/backward_ratio.py on a profile and a trace made up here: the stage sums, the run's
# medians (its first fifth skipped) and the ratios worked out by hand.
import json
import os
import tempfile
with tempfile.TemporaryDirectory() as d:
    layers = [{"forward_ms": 1.0, "backward_ms": 1.5}, {"forward_ms": 2.0, "backward_ms": 3.0},
              {"forward_ms": 1.0, "backward_ms": 2.0}]
    events = [{"ph": "X", "cat": "forward", "pid": 0, "ts": 0, "args": {"cpu_ms": 99.0}}]
    for k in range(1, 10):
        events += [{"ph": "X", "cat": "forward", "pid": 0, "ts": 10 * k, "args": {"cpu_ms": 3.0 + k % 3}},
                   {"ph": "X", "cat": "backward", "pid": 0, "ts": 10 * k + 1, "args": {"cpu_ms": 6.0}},
                   {"ph": "X", "cat": "forward", "pid": 1, "ts": 10 * k + 2, "args": {"cpu_ms": 2.0}},
                   {"ph": "X", "cat": "backward", "pid": 1, "ts": 10 * k + 3, "args": {"cpu_ms": 5.0}}]
    with open(os.path.join(d, "p.json"), "w") as f:
        json.dump({"layers": layers}, f)
    with open(os.path.join(d, "t.json"), "w") as f:
        json.dump({"traceEvents": events}, f)
    code, out, err = run("backward_ratio.py", f"{d}/p.json", f"{d}/t.json", "--stages", "0-1,2-2")
    check(code == 0, f"backward_ratio.py exited {code}: {err[-300:]}")
    check("stage 0 (layers 0-1): profile F 3.000 B 4.500 ms (B/F 1.50); run F 4.000 B 6.000 ms "
          "(B/F 1.50); run over profile F 1.333 B 1.333" in out, f"backward_ratio.py stage 0: {out!r}")
    check("stage 1 (layers 2-2): profile F 1.000 B 2.000 ms (B/F 2.00); run F 2.000 B 5.000 ms "
          "(B/F 2.50); run over profile F 2.000 B 2.500" in out, f"backward_ratio.py stage 1: {out!r}")

check.finish("the probe scripts' modes")
