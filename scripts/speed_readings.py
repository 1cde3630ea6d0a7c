#!/usr/bin/env python3
"""What the machine's speed readings say about a validation matrix's errors. For every
`NAME.compare.json` under DIR (a `scripts/validate.sh --out DIR` folder, `--repeat K`'s rep-k
sub-folders included) it prints the throughput error, the machine's speed while the profile was
taken and during the run (one core's GEMM rate, `machine_speed` in compare's JSON,
docs/output-schema.md), the run's over the profile's, and the run's compute over the
prediction's (every worker's forward, backward and update per iteration, summed); then how the
speed change relates to the two over the rows (correlation of their logarithms, and the slope of
compute on speed: 1 if the readings told the whole change) and the mean absolute error of the
rows whose speed held within --within against the others.

    python3 scripts/speed_readings.py DIR [--within 0.05]
"""
import argparse
import glob
import json
import math
import os
import sys


def compute_per_iteration(report):
    busy = sum(sum(w.get("busy_by_op_s", {}).values()) for w in report.get("workers", []))
    return busy / max(1, report.get("iterations", 1))


def rows_in(top):
    files = sorted(glob.glob(os.path.join(top, "*.compare.json")) +
                   glob.glob(os.path.join(top, "rep-*", "*.compare.json")))
    rows = []
    for f in files:
        try:
            with open(f) as handle:
                c = json.load(handle)
            predicted, measured = c["predicted"], c["measured"]
            speed = c.get("machine_speed") or {}
            rows.append({
                "name": os.path.relpath(f, top)[:-len(".compare.json")],
                "error": predicted["samples_per_s"] / measured["samples_per_s"] - 1,
                "profile": speed.get("profile_gflops", 0) or 0,
                "run": speed.get("run_gflops", 0) or 0,
                "compute": compute_per_iteration(measured) / max(1e-12, compute_per_iteration(predicted)),
            })
        except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as e:
            print(f"speed_readings.py: {f}: not a `pipetwin compare --json` result "
                  f"({type(e).__name__}: {e})", file=sys.stderr)
            sys.exit(2)
    return rows


def correlation(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return float("nan"), float("nan")
    return sxy / math.sqrt(sxx * syy), sxy / sxx


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--within", type=float, default=0.05,
                        help="a speed change up to this share counts as held (default 0.05)")
    args = parser.parse_args()
    if not os.path.isdir(args.dir):
        print(f"speed_readings.py: {args.dir}: not a folder", file=sys.stderr)
        sys.exit(2)
    rows = rows_in(args.dir)
    read = [r for r in rows if r["profile"] > 0 and r["run"] > 0]
    print(f"{len(rows)} comparisons in {args.dir}, {len(read)} with both speed readings")
    print(f"{'row':40} {'error':>7} {'profile':>8} {'run':>7} {'run/profile':>11} {'compute':>8}")
    for r in rows:
        ratio = r["run"] / r["profile"] if r in read else float("nan")
        print(f"{r['name']:40} {100 * r['error']:+6.1f}% {r['profile']:8.1f} {r['run']:7.1f} "
              f"{ratio:11.3f} {r['compute']:8.3f}")
    if len(read) < 3:
        print("fewer than 3 rows with both readings: no correlation")
        return
    slower = [math.log(r["profile"] / r["run"]) for r in read]
    corr_c, slope_c = correlation(slower, [math.log(r["compute"]) for r in read])
    corr_e, _ = correlation(slower, [r["error"] for r in read])
    print(f"log(profile/run speed) against log(measured/predicted compute): correlation "
          f"{corr_c:.2f}, slope {slope_c:.2f}")
    print(f"log(profile/run speed) against the throughput error: correlation {corr_e:.2f}")
    for label, keep in (("held", lambda r: abs(r["run"] / r["profile"] - 1) <= args.within),
                        ("moved", lambda r: abs(r["run"] / r["profile"] - 1) > args.within)):
        errors = [abs(r["error"]) for r in read if keep(r)]
        if errors:
            print(f"speed {label} (within {100 * args.within:g}%: {'yes' if label == 'held' else 'no'}):"
                  f" {len(errors)} rows, mean absolute error {100 * sum(errors) / len(errors):.1f}%,"
                  f" worst {100 * max(errors):.1f}%")


if __name__ == "__main__":
    main()
