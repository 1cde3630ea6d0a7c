#!/usr/bin/env python3
"""What a run's messages took from its workers' compute: each forward's and backward's wall time
less its thread CPU time, split by what c10d Gloo's threads of the worker did for a message
meanwhile, on the core the worker is pinned to (sim/actors.cc, ChargeComputingPeer):

  - "own send ended": one of the worker's sends ended during the op (its thread pushed the bytes);
  - "peer announced": the peer posted a send to this worker during the op, before this worker
    posted the receive for it (Gloo's NOTIFY_SEND_READY, handled as it arrives);
  - "neither".

    python3 scripts/message_cpu.py TRACE.json [TRACE.json ...] [--skip 0.2]

TRACE.json is a Chrome trace of `pipetwin run --trace` (or `compare --keep DIR`'s
measured-trace.json): per worker (pid) thread 0 computes, each op with its `cpu_ms`; thread 1
sends, thread 2 receives. The first --skip share of the trace's ops (start-up) is left out. Prints
per worker, op kind and class the count and the mean and median gap (microseconds).
"""
import argparse
import json
import statistics


def load(path):
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    return sorted((e for e in events if e.get("ph") == "X"), key=lambda e: e["ts"])


def classify(ops, skip):
    start = ops[int(len(ops) * skip)]["ts"] if ops else 0
    gaps = {}
    for pid in sorted({e["pid"] for e in ops}):
        mine = [e for e in ops if e["pid"] == pid and e["ts"] >= start]
        sends = [e for e in mine if e["cat"].startswith("send")]
        receives = [e for e in mine if e["cat"].startswith("recv")]
        announced = [e for e in ops if e["pid"] != pid and e["cat"].startswith("send")
                     and e["args"].get("peer_pid") == pid]
        for op in mine:
            if op["cat"] not in ("forward", "backward") or "cpu_ms" not in op["args"]:
                continue
            begin, end = op["ts"], op["ts"] + op["dur"]
            if any(begin < s["ts"] + s["dur"] <= end for s in sends):
                kind = "own send ended"
            elif any(begin <= p["ts"] < end and not any(
                    r["ts"] <= p["ts"] and r["args"].get("microbatch") == p["args"].get("microbatch")
                    for r in receives) for p in announced):
                kind = "peer announced"
            else:
                kind = "neither"
            gap_us = op["dur"] - op["args"]["cpu_ms"] * 1e3
            gaps.setdefault((pid, op["cat"], kind), []).append(gap_us)
    return gaps


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--skip", type=float, default=0.2)
    args = parser.parse_args()
    for path in args.traces:
        print(path)
        for (pid, cat, kind), gaps in sorted(classify(load(path), args.skip).items()):
            print(f"  worker {pid} {cat:8s} {kind:15s} {len(gaps):4d} ops: wall - CPU mean "
                  f"{statistics.mean(gaps):6.0f} us, median {statistics.median(gaps):6.0f} us")


if __name__ == "__main__":
    main()
