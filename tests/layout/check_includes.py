#!/usr/bin/env python3
"""Checks that every source file includes only the parts it may depend on.

The core's parts depend only on the parts before them (util <- schedule <- model <- cost <-
planners, report <- timeline); the command-line layer on the core and the workloads; the
workloads on the core; each back end on all of those but never on the other back end. Nothing
outside sim/ includes SimGrid and nothing outside exec/ LibTorch. Prints every include that
breaks a rule (file:line) and exits 1, or exits 0.

    tests/layout/check_includes.py [ROOT]
"""
import os
import re
import sys

CORE = ["util", "schedule", "model", "cost", "planners", "report", "timeline"]
ALLOWED = {
    "partition/util": {"partition/util"},
    "partition/schedule": {"partition/util", "partition/schedule"},
    "partition/model": {"partition/util", "partition/schedule", "partition/model"},
    "partition/cost": {"partition/util", "partition/schedule", "partition/model",
                       "partition/cost"},
    "partition/planners": {"partition/util", "partition/schedule", "partition/model",
                           "partition/cost", "partition/planners"},
    "partition/report": {"partition/util", "partition/schedule", "partition/model",
                         "partition/cost", "partition/report"},
    "partition/timeline": {"partition/util", "partition/schedule", "partition/model",
                           "partition/cost", "partition/report", "partition/timeline"},
}
EVERY_CORE_PART = {"partition/" + p for p in CORE}
ALLOWED["workloads"] = EVERY_CORE_PART | {"workloads"}
ALLOWED["partition/cli"] = EVERY_CORE_PART | {"workloads", "partition/cli"}
ALLOWED["partition/bench"] = EVERY_CORE_PART | {"workloads"}
ALLOWED["sim"] = EVERY_CORE_PART | {"workloads", "partition/cli", "sim"}
ALLOWED["exec"] = EVERY_CORE_PART | {"workloads", "partition/cli", "exec"}
FOREIGN = {"simgrid": "sim", "xbt": "sim", "torch": "exec", "c10": "exec", "ATen": "exec"}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def part_of(path):
    """The folder whose rules apply to `path` (relative to the root), or None."""
    for key in sorted(ALLOWED, key=len, reverse=True):
        if path == key or path.startswith(key + "/"):
            return key
    return None


def target_part(header):
    for key in sorted(ALLOWED, key=len, reverse=True):
        if header.startswith(key + "/"):
            return key
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    broken = []
    for top in ("partition", "workloads", "sim", "exec"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.relpath(os.path.join(folder, name), root)
                part = part_of(path)
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        header = m.group(2)
                        if m.group(1) == "<":
                            library = header.split("/")[0]
                            owner = FOREIGN.get(library)
                            if owner and not path.startswith(owner + "/"):
                                broken.append(f"{path}:{number}: <{header}> belongs to {owner}/ only")
                            continue
                        target = target_part(header)
                        if target is None:
                            continue  # tests/ and other helpers are not part of the layout
                        if target not in ALLOWED.get(part, set()):
                            broken.append(f"{path}:{number}: {part}/ may not include {header}")
    for line in broken:
        print(line)
    print(f"{len(broken)} include(s) against the dependency direction")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
