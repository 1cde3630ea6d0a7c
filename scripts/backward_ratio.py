#!/usr/bin/env python3
"""A stage's backward against its forward, in its profile and in a traced run.

The simulator charges each op what the profile timed it; if a run's backwards cost more than the
profile's relative to its forwards, the machine's speed (which moves both alike) does not explain
it. For each stage: the profile's forwards and backwards summed over the stage's layers, the run's
median forward and backward op by thread CPU time (the trace's `cpu_ms`, the last four fifths of
its ops), their ratio B/F in each, and the run over the profile.

    python3 scripts/backward_ratio.py PROFILE.json TRACE.json --stages 0-1,2-3

PROFILE.json is `pipetwin profile SCENARIO --json` (or `compare --keep DIR`'s profile.json);
TRACE.json is `pipetwin run SCENARIO --trace TRACE.json`; --stages gives each stage's first and
last layer (0-based, as the scenario's plan), stage k being the trace's worker k.
"""
import argparse
import json
import statistics

from message_cpu import load  # the trace's complete events, in time order


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("profile")
    p.add_argument("trace")
    p.add_argument("--stages", required=True, help="first-last layer of each stage: 0-1,2-3")
    p.add_argument("--skip", type=float, default=0.2)
    args = p.parse_args()
    with open(args.profile) as f:
        layers = json.load(f)["layers"]
    ops = [e for e in load(args.trace)
           if e.get("cat") in ("forward", "backward") and "cpu_ms" in e.get("args", {})]
    ops = ops[int(len(ops) * args.skip):]
    for stage, span in enumerate(args.stages.split(",")):
        first, last = (int(v) for v in span.split("-"))
        pf = sum(l["forward_ms"] for l in layers[first:last + 1])
        pb = sum(l["backward_ms"] for l in layers[first:last + 1])
        mine = [e for e in ops if e["pid"] == stage]
        rf = statistics.median(e["args"]["cpu_ms"] for e in mine if e["cat"] == "forward")
        rb = statistics.median(e["args"]["cpu_ms"] for e in mine if e["cat"] == "backward")
        print(f"stage {stage} (layers {first}-{last}): profile F {pf:.3f} B {pb:.3f} ms (B/F {pb / pf:.2f}); "
              f"run F {rf:.3f} B {rb:.3f} ms (B/F {rb / rf:.2f}); run over profile F {rf / pf:.3f} "
              f"B {rb / pb:.3f}")


if __name__ == "__main__":
    main()
