#!/usr/bin/env python3
"""How long each pipeline message took in a run's trace, split by what its sender's computing
thread did meanwhile: computing (c10d Gloo's thread of the sender then shares the core with it,
and a scheduler slice may pass before the payload leaves; cluster.busy_sender_message_us) or not.

    python3 scripts/message_waits.py TRACE.json [--slowest N]

TRACE.json is a Chrome trace of `pipetwin run --trace` or of `pipetwin compare --keep DIR`
(DIR/measured-trace.json, DIR/predicted-trace.json): per worker (pid) thread 0 computes, thread 1
sends, thread 2 receives. A message runs from when both of its ends were posted (the later of the
send's and the receive's start) to the receive's end. It moved while its sender computed if the
sender's thread 0 ran an op at any time in between. Prints each class's count, mean, median, 90th
percentile and the messages over 1 ms, and the slowest messages with the sender's ops around them
(times relative to the message's start, microseconds).
"""
import argparse
import json
import statistics
import sys

SEND = {"recv_activation": "send_activation", "recv_gradient": "send_gradient"}


def load(path):
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    return [e for e in events if e.get("ph") == "X"]


def messages(events):
    """(seconds from both ends posted to received, moved while the sender computed, receive,
    sender's compute spans) for every receive whose send is in the trace."""
    compute, sends = {}, {}
    for e in events:
        if e["tid"] == 0:
            compute.setdefault(e["pid"], []).append((e["ts"], e["ts"] + e["dur"]))
        elif e["tid"] == 1 and e.get("cat") in SEND.values():
            a = e.get("args", {})
            key = (e["pid"], a.get("peer_pid"), e["cat"], a.get("microbatch"), a.get("stage"))
            sends[key] = e
    out = []
    for e in events:
        if e["tid"] != 2 or e.get("cat") not in SEND:
            continue
        a = e.get("args", {})
        sender, stage = a.get("peer_pid"), a.get("stage")
        # The sender's stage: the one before for an activation, after for a gradient.
        sender_stage = stage - 1 if e["cat"] == "recv_activation" else stage + 1
        s = sends.get((sender, e["pid"], SEND[e["cat"]], a.get("microbatch"), sender_stage))
        if s is None:
            continue
        start, end = max(e["ts"], s["ts"]), e["ts"] + e["dur"]
        spans = compute.get(sender, [])
        busy = any(b > start and a0 < end for a0, b in spans)
        out.append((end - start, busy, e, [(a0 - start, b - start) for a0, b in spans
                                           if b > start - 1e3 and a0 < end]))
    return out


def summary(name, waits):
    if not waits:
        return f"{name}: none"
    waits = sorted(waits)
    p90 = waits[min(len(waits) - 1, int(0.9 * len(waits)))]
    return (f"{name}: {len(waits)}, mean {statistics.mean(waits):.0f} us, median "
            f"{statistics.median(waits):.0f} us, 90th percentile {p90:.0f} us, "
            f"{sum(w > 1000 for w in waits)} over 1 ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--slowest", type=int, default=10)
    args = parser.parse_args()
    try:
        found = messages(load(args.trace))
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"message_waits.py: {args.trace}: not a pipetwin trace ({e})", file=sys.stderr)
        return 2
    if not found:
        print(f"message_waits.py: {args.trace}: no message with both its send and receive",
              file=sys.stderr)
        return 2
    busy = [w for w, b, _, _ in found if b]
    idle = [w for w, b, _, _ in found if not b]
    print(f"{len(found)} messages in {args.trace}")
    print(summary("moved while the sender computed", busy))
    print(summary("moved while it did not", idle))
    if busy and idle:
        print(f"the first against the second: {statistics.mean(busy) - statistics.mean(idle):+.0f} "
              f"us a message on average")
    print(f"slowest {min(args.slowest, len(found))}: message, us, sender computing, its ops (us)")
    for wait, b, e, spans in sorted(found, key=lambda m: -m[0])[:args.slowest]:
        ops = ", ".join(f"{a0:.0f}..{b0:.0f}" for a0, b0 in spans)
        print(f"  {e['name']} {wait:.0f} {'yes' if b else 'no'} [{ops}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
