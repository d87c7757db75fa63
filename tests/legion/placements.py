#!/usr/bin/env python3
"""Differential test against the real Legion runtime: where every task of a run actually executed
(the HONE_PLACED lines an app prints with -hone:placements, read from the runtime's executing
processor) against where `hone eval` says the policy places it.

  placements.py --hone HONE --policy P.map --machine nodes=1,cpus=4,gpus=0 RUN_OUTPUT [--min N]

Index launches are compared point by point (the launch's extents are those of the points seen:
apps/legion launch over domains that start at 0); a single task is compared when the policy maps it
(SingleTaskMap), with the parent processor the runtime reports. A point hone does not place (no
map statement applies, or the policy faults there: the generated mapper then keeps Legion's default
mapper's choice, as documented) is counted as not predicted. Exit 1 on any disagreement, or when
fewer than N points were compared.
"""
import argparse
import collections
import json
import subprocess
import sys


def evaluate(hone, policy, machine, task, extra):
    r = subprocess.run([hone, "eval", policy, "--machine", machine, "--task", task, "--json"] + extra,
                       capture_output=True, text=True)
    if not r.stdout.strip():
        return None  # no map statement applies: Legion's default mapper decides
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hone", required=True)
    ap.add_argument("--policy", required=True)
    ap.add_argument("--machine", required=True)
    ap.add_argument("--min", type=int, default=1)
    ap.add_argument("output")
    a = ap.parse_args()

    index = collections.defaultdict(lambda: collections.defaultdict(list))  # task -> point -> [(kind, node, proc)]
    single = collections.defaultdict(list)  # (task, parent) -> [(kind, node, proc)]
    with open(a.output, errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) < 6 or w[0] != "HONE_PLACED":
                continue
            task, point, kind, node, proc = w[1], w[2], w[3], int(w[4]), int(w[5])
            if point != "-":
                index[task][tuple(int(c) for c in point.split(","))].append((kind, node, proc))
            elif len(w) > 6 and w[6].startswith("parent="):
                single[(task, w[6][len("parent="):])].append((kind, node, proc))

    compared = agree = unpredicted = 0
    problems = []
    for task, points in sorted(index.items()):
        dims = len(next(iter(points)))
        extents = [max(p[d] for p in points) + 1 for d in range(dims)]
        kinds = {r[0] for runs in points.values() for r in runs}
        predicted = {}
        for kind in kinds:
            got = evaluate(a.hone, a.policy, a.machine, task,
                           ["--space", ",".join(map(str, extents)), "--all-points", "--kind", kind])
            for pl in (got or {}).get("placements", []):
                if "processors" in pl and len(pl["processors"]) == 1:
                    predicted[(kind, tuple(pl["point"]))] = tuple(pl["processors"][0])
        for point, runs in sorted(points.items()):
            for kind, node, proc in runs:  # every launch of the point
                want = predicted.get((kind, point))
                if want is None:
                    unpredicted += 1
                    continue
                compared += 1
                if want == (node, proc):
                    agree += 1
                else:
                    problems.append(f"{task} point {point}: ran on {kind} ({node}, {proc}), hone eval says {want}")
    for (task, parent), runs in sorted(single.items()):
        for kind, node, proc in runs:
            got = evaluate(a.hone, a.policy, a.machine, task, ["--parent-proc", parent, "--kind", kind])
            pl = (got or {}).get("placements", [])
            if not pl or "processors" not in pl[0] or len(pl[0]["processors"]) != 1:
                unpredicted += 1
                continue
            compared += 1
            want = tuple(pl[0]["processors"][0])
            if want == (node, proc):
                agree += 1
            else:
                problems.append(f"{task} (parent on {parent}): ran on {kind} ({node}, {proc}), hone eval says {want}")
    for p in problems[:20]:
        print("DIFFER", p)
    print(f"placements: {compared} compared, {agree} agree, {len(problems)} differ, "
          f"{unpredicted} left to Legion's default mapper")
    if problems or compared < a.min:
        sys.exit(1)


if __name__ == "__main__":
    main()
