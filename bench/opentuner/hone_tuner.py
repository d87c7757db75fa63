#!/usr/bin/env python3
"""OpenTuner driving hone's performance model, as an outside user would: every decision of
`hone space --json` is an OpenTuner EnumParameter, each configuration is evaluated with
`hone simulate --assign`, a failure is reported as an error, and the score is the throughput
relative to the expert mapper (the expert's throughput is measured first, also through hone).
At most N calls of hone per run (OpenTuner's test limit also counts duplicates it does not rerun).
Prints one JSON line: {"app", "seed", "evaluations", "best_score", "failures"}.

  PYTHONPATH=OPENTUNER_SRC python3 hone_tuner.py --hone HONE --app APP --evaluations N --seed S
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

import opentuner
from opentuner import ConfigurationManipulator, EnumParameter, MeasurementInterface, Result
from opentuner.search.objective import MaximizeAccuracy

STATE = {"evaluations": 0, "failures": 0, "best": 0.0}


def hone(args, *rest):
    return subprocess.run([args.hone, *rest], capture_output=True, text=True)


def simulate(args, assignment_path=None, mapper=None):
    """The model's throughput of an assignment (or a mapper file); None when it fails."""
    what = ["--assign", assignment_path] if assignment_path else [mapper]
    r = hone(args, "simulate", *what, "--app", args.app, "--machine", args.machine, "--json")
    try:
        d = json.loads(r.stdout)
    except json.JSONDecodeError:
        return None
    return d.get("throughput") if d.get("status") == "ok" else None


class HoneTuner(MeasurementInterface):
    def __init__(self, args, space, expert):
        self.space, self.expert, self.hone_args = space, expert, args
        super().__init__(args)

    def manipulator(self):
        m = ConfigurationManipulator()
        for p in self.space["parameters"]:
            m.add_parameter(EnumParameter(p["name"], p["values"]))
        return m

    def run(self, desired_result, input, limit):
        if STATE["evaluations"] >= self.hone_args.evaluations:  # at most N calls of hone, whatever OpenTuner asks
            return Result(state="ERROR", accuracy=0.0, time=0.0)
        cfg = desired_result.configuration.data
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({p["name"]: cfg[p["name"]] for p in self.space["parameters"]}, f)
            path = f.name
        try:
            throughput = simulate(self.hone_args, assignment_path=path)
        finally:
            os.unlink(path)
        STATE["evaluations"] += 1
        if throughput is None:
            STATE["failures"] += 1
            return Result(state="ERROR", accuracy=0.0, time=0.0)
        score = throughput / self.expert
        STATE["best"] = max(STATE["best"], score)
        return Result(time=0.0, accuracy=score)

    def objective(self):
        return MaximizeAccuracy()


def main():
    parser = argparse.ArgumentParser(parents=opentuner.argparsers(), add_help=False)
    parser.add_argument("--hone", required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--machine", default="p100x4")
    parser.add_argument("--expert", required=True, help="the expert mapper (score 1.0)")
    parser.add_argument("--evaluations", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    args.test_limit = args.evaluations
    args.no_dups = True
    random.seed(args.seed)
    try:
        import numpy
        numpy.random.seed(args.seed)
    except ImportError:
        pass
    space = json.loads(hone(args, "space", "--app", args.app, "--machine", args.machine, "--json").stdout)
    expert = simulate(args, mapper=args.expert)
    if not expert:
        sys.exit(f"hone_tuner: the expert mapper {args.expert} does not run on the model")
    HoneTuner.main(args, space, expert)


if __name__ == "__main__":
    try:
        main()
    except SystemExit as e:
        if e.code not in (0, None):
            raise
    print(json.dumps({"evaluations": STATE["evaluations"], "failures": STATE["failures"],
                      "best_score": STATE["best"]}))
