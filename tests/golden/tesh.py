#!/usr/bin/env python3
"""Golden tests of whole commands, in the spirit of SimGrid's .tesh files.

A .tesh file lists commands and the output each must print, run from the repository root:

    # a comment
    $ pipetwin simulate tests/golden/scenarios/mlp-2s-gpipe.json
    > the expected standard output, line by line
    2> the expected standard error
    ! return 2                 the expected exit status (default 0)
    ! mask-json KEY [KEY...]   standard output is JSON: the values of these keys (at any depth)
                               are wall-clock figures and are compared as "<masked>"

The first word `pipetwin` runs the build's bin/pipetwin (--bin). On a mismatch the test prints
a unified diff and exits 1. --update rewrites each file with what the commands print now (the
commands, comments and directives stay), so that `git diff` shows what changed.

    tests/golden/tesh.py --bin build/bin tests/golden/*.tesh
    tests/golden/tesh.py --bin build/bin --update tests/golden/*.tesh
"""
import argparse
import difflib
import json
import os
import shlex
import subprocess
import sys

MASK = "<masked>"


class Case:
    def __init__(self, command, line):
        self.command = command
        self.line = line
        self.stdout = []
        self.stderr = []
        self.status = 0
        self.masked = []


def parse(path):
    """The file as (cases, header): header holds the comment lines before the first command."""
    cases, header = [], []
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if line.startswith("$ "):
                cases.append(Case(line[2:], number))
            elif not cases:
                if line.startswith("#") or not line.strip():
                    header.append(line)
                else:
                    sys.exit(f"{path}:{number}: expected '$ COMMAND' before any output line")
            elif line == ">" or line.startswith("> "):
                cases[-1].stdout.append(line[2:])
            elif line == "2>" or line.startswith("2> "):
                cases[-1].stderr.append(line[3:])
            elif line.startswith("! return "):
                cases[-1].status = int(line[len("! return "):])
            elif line.startswith("! mask-json "):
                cases[-1].masked = line[len("! mask-json "):].split()
            elif line.startswith("#") or not line.strip():
                continue
            else:
                sys.exit(f"{path}:{number}: expected '$ ', '> ', '2> ', '! return N' or "
                         f"'! mask-json KEYS', got {line!r}")
    return cases, header


def mask(value, keys):
    if isinstance(value, dict):
        return {k: (MASK if k in keys else mask(v, keys)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, keys) for v in value]
    return value


def run(case, binaries, root):
    words = shlex.split(case.command)
    if words and words[0] == "pipetwin":
        words[0] = os.path.join(binaries, "pipetwin")
    env = dict(os.environ, LC_ALL="C")
    done = subprocess.run(words, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    stdout = done.stdout
    if case.masked and done.returncode == 0:
        stdout = json.dumps(mask(json.loads(stdout), set(case.masked)), indent=1) + "\n"
    return stdout.splitlines(), done.stderr.splitlines(), done.returncode


def render(case, stdout, stderr, status):
    lines = [f"$ {case.command}"]
    if status != 0:
        lines.append(f"! return {status}")
    if case.masked:
        lines.append("! mask-json " + " ".join(case.masked))
    lines += [("> " + l) if l else ">" for l in stdout]
    lines += [("2> " + l) if l else "2>" for l in stderr]
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, help="folder of the built pipetwin")
    parser.add_argument("--root", default=os.getcwd(), help="where the commands run")
    parser.add_argument("--update", action="store_true", help="rewrite the files")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    binaries = os.path.abspath(args.bin)
    failed = 0
    for path in args.files:
        cases, header = parse(path)
        if not cases:
            sys.exit(f"{path}: no '$ COMMAND' line")
        expected, actual = list(header), list(header)
        for case in cases:
            stdout, stderr, status = run(case, binaries, args.root)
            expected += render(case, case.stdout, case.stderr, case.status) + [""]
            actual += render(case, stdout, stderr, status) + [""]
        if args.update:
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(actual[:-1]) + "\n")
            continue
        if expected != actual:
            failed += 1
            sys.stdout.writelines(
                difflib.unified_diff([l + "\n" for l in expected], [l + "\n" for l in actual],
                                     path + " (expected)", path + " (printed now)"))
    if failed:
        print(f"\n{failed} of {len(args.files)} golden files differ; "
              "scripts/golden.sh shows the whole change and rewrites them")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
