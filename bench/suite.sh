#!/usr/bin/env bash
# Runs hone over every program of an external suite given as a folder, the way a user brings one:
# `hone kernel init` per program (plus the suite's generator: only what init cannot know), `hone
# kernel check`, then `hone tune --kernel` per agent; every accepted variant and each run's best are
# measured again side by side with the unmodified program and with the same program at
# `-O3 -march=native` (the compiler-only baseline) in one `hone kernel measure` per program. Prints an
# Optimas-style table per agent and writes it, with the details, to OUT/suite-results.{md,json}.
# A benchmark, not a test: timings are noisy on a shared machine. It never downloads anything.
#   bench/suite.sh SUITE_DIR [--agent A]... [--iterations N] [--size MEDIUM] [--only prog,...]
#                  [--rounds R] [--out DIR] [--hone PATH] [--no-profile] [--bests-only] [--report-only] [--write]
# --report-only: runs nothing; makes the tables again from what an earlier invocation left in OUT
# (its agents, unless --agent names some; give the same --iterations).
# --bests-only: measure again only each run's best (not every variant it accepted): much shorter when
# several agents are compared; the correctness column then says "not re-measured".
# With several agents, a paired table compares the first agent's best with each other's, program by
# program, from the same interleaved rounds (the ratio of their times, round by round).
# Suites: PolyBench/C (recognised by utilities/polybench.h; its programs are those listed in
# utilities/benchmark_list, else every folder NAME holding NAME.c; the generator adds
# -D<SIZE>_DATASET); any other folder whose programs follow the one-folder-per-program layout
# (NAME/NAME.c, init alone; --size unused).
# The suite is copied to OUT/suite first: the user's clone is never written to.
set -euo pipefail
usage="usage: bench/suite.sh SUITE_DIR [--agent A]... [--iterations N] [--size MEDIUM] [--only prog,...] [--rounds R] [--out DIR] [--hone PATH] [--no-profile] [--bests-only] [--report-only] [--write]"
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
suite=$1; shift
agents="" iterations=10 size=MEDIUM only="" rounds=3 out="" hone="${HONE:-}" profile=1 write=0 bests=0 report=0 invocation="bench/suite.sh <$(basename "$suite")> $*"
while [ $# -gt 0 ]; do
  case "$1" in
    --agent) agents="$agents $2"; shift ;;
    --iterations) iterations=$2; shift ;;
    --size) size=$2; shift ;;
    --only) only=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --out) out=$2; shift ;;
    --hone) hone=$2; shift ;;
    --no-profile) profile=0 ;;
    --bests-only) bests=1 ;;
    --report-only) report=1 ;;
    --write) write=1 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$agents" ] || [ "$report" = 1 ] || agents="guided"
[ -d "$suite" ] || { echo "bench/suite.sh: $suite: no such folder" >&2; exit 2; }
case "$iterations$rounds" in *[!0-9]*) echo "bench/suite.sh: --iterations and --rounds take whole numbers" >&2; exit 2 ;; esac
case "$size" in *[!A-Z]*|"") echo "bench/suite.sh: --size takes a dataset name such as MINI, SMALL, MEDIUM, LARGE" >&2; exit 2 ;; esac
repo=$(cd "$(dirname "$0")/.." && pwd)
[ -n "$hone" ] || hone=$repo/build/src/cli/hone
[ -x "$hone" ] || { echo "bench/suite.sh: no hone at $hone (build it: ./scripts/build.sh, or give --hone)" >&2; exit 2; }
[ -n "$out" ] || out=$repo/runs/suite-$(basename "$(cd "$suite" && pwd)")
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ "$report" = 1 ]; then
  [ -f "$out/setup.tsv" ] && [ -f "$out/wall.tsv" ] || { echo "bench/suite.sh: --report-only: $out holds no earlier run" >&2; exit 2; }
  [ -n "$agents" ] || agents=$(cut -f1 "$out/wall.tsv" | tr '\n' ' ')
else
rm -rf "$out/suite" "$out/logs" "$out/hone.db" "$out/hone.db-wal" "$out/hone.db-shm" "$out/variants"
mkdir -p "$out/logs" "$out/variants"
cp -r "$suite" "$out/suite"
fi
kind=generic
[ -f "$out/suite/utilities/polybench.h" ] && kind=polybench

# The suite's generator: what `hone kernel init` cannot know about a suite's programs.
generator_args() { # PROGRAM.c -> extra init arguments
  case "$kind" in
    polybench) echo "--define ${size}_DATASET" ;; # the size the user asked for; init alone picks the middle one
    *) echo "" ;;
  esac
}

# The programs: PolyBench's own list (utilities/benchmark_list) when it has one, else NAME/NAME.c
# anywhere under the suite (not its utilities), in path order.
if [ "$kind" = polybench ] && [ -f "$out/suite/utilities/benchmark_list" ]; then
  programs=$(sed -e 's|^\./||' -e '/^[[:space:]]*$/d' "$out/suite/utilities/benchmark_list" | sort)
else
  programs=$(cd "$out/suite" && find . -name '*.c' -not -path './utilities/*' | sort | while read -r f; do
    d=$(dirname "$f"); [ "$(basename "$d").c" = "$(basename "$f")" ] && echo "${f#./}"; done)
fi
if [ -n "$only" ]; then
  keep=""
  for p in $programs; do
    case ",$only," in *",$(basename "$p" .c),"*) keep="$keep $p" ;; esac
  done
  programs=$keep
fi
[ -n "$programs" ] || { echo "bench/suite.sh: no programs (NAME/NAME.c) under $suite${only:+ matching --only $only}" >&2; exit 2; }
echo "suite: $suite ($kind), $(echo $programs | wc -w) programs, agents:$agents, $iterations iterations" >&2

if [ "$report" = 0 ]; then
start=$(date +%s)
: > "$out/setup.tsv"
for p in $programs; do
  name=$(basename "$p" .c)
  dir=$out/suite/$(dirname "$p")
  status=ok
  # shellcheck disable=SC2046
  if ! "$hone" kernel init "$dir/$name.c" --force $(generator_args "$p") > "$out/logs/$name-init.log" 2>&1; then
    status=init_failed
  elif ! "$hone" kernel check "$dir" > "$out/logs/$name-check.log" 2>&1; then
    status=check_failed
  fi
  printf '%s\t%s\t%s\n' "$name" "$dir" "$status" >> "$out/setup.tsv"
  echo "== $name: $status" >&2
done

: > "$out/wall.tsv"
for agent in $agents; do
  t0=$(date +%s)
  while IFS=$'\t' read -r name dir status; do
    [ "$status" = ok ] || continue
    extra=""
    [ "$agent" = guided ] && [ "$profile" = 1 ] || extra="--no-profile"
    echo "== $name: $agent@$iterations" >&2
    # shellcheck disable=SC2086
    "$hone" tune --kernel "$dir" --agent "$agent" --iterations "$iterations" --seed 2 --db "$out/hone.db" \
      --out "$out/variants/$name-$agent" --json $extra > "$out/logs/$name-$agent.json" 2> "$out/logs/$name-$agent.log" ||
      echo "   (the run failed: $out/logs/$name-$agent.log)" >&2
  done < "$out/setup.tsv"
  printf '%s\t%s\n' "$agent" "$(( $(date +%s) - t0 ))" >> "$out/wall.tsv"
done

# Every accepted variant of a program's runs, its bests among them, and the program at
# -O3 -march=native, measured side by side with the unmodified program in one interleaved
# `hone kernel measure` (which validates each first, on the seeds of --seed 1: inputs the runs, at
# --seed 2, never saw).
python3 - "$out" "$hone" "$rounds" "$bests" <<'PY'
import json, os, sqlite3, subprocess, sys
out, hone, rounds, bests_only = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
db = os.path.join(out, "hone.db")
c = sqlite3.connect(db) if os.path.exists(db) else None
runs = c.execute("SELECT id, app, agent, config FROM runs ORDER BY id").fetchall() if c else []
by_dir = {}
for rid, app, agent, config in runs:
    by_dir.setdefault(json.loads(config)["options"]["project"], []).append((rid, app, agent))
for project, rs in by_dir.items():
    args, files = [hone, "kernel", "measure", project, "--rounds", rounds, "--json"], {}
    o3 = os.path.join(out, "variants", f"o3-{rs[0][1]}.toml")
    open(o3, "w").write('[knobs]\nflags = "-O3 -march=native"\n')
    args += ["--variant", o3]
    for rid, app, agent in rs:
        rows = c.execute("SELECT c.id, c.artifact, e.score, e.sequence FROM evaluations e JOIN candidates c "
                         "ON c.id = e.candidate_id WHERE e.run_id = ? AND e.status = 'ok'", (rid,)).fetchall()
        if bests_only and rows:  # the run's best alone (the first of equal scores, as the run kept it)
            rows = [max(rows, key=lambda r: (r[2], -r[3]))]
        for cid, artifact, score, seq in rows:
            path = os.path.join(out, "variants", f"run{rid}-c{cid}.toml")
            open(path, "w").write(artifact)
            files[path] = (rid, score, seq)
            args += ["--variant", path]
    p = subprocess.run(args, capture_output=True, text=True)
    m = json.loads(p.stdout) if p.stdout.strip() else {"variants": []}
    results = {v["source"]: v for v in m["variants"]}
    for rid, app, agent in rs:
        mine = [(path, score, seq) for path, (r, score, seq) in files.items() if r == rid]
        # Accepted variants: what the run accepted besides its start (step 0, the unmodified program).
        tried = [x for x in mine if x[2] > 0]
        accepted = len(tried)
        correct = sum(1 for path, _, _ in tried if path in results and "error" not in results[path])
        best = max(mine, key=lambda x: (x[1], -x[2]))[0] if mine else None  # the first of equal scores
        rb = results.get(best, {}) if best else {}
        ro3 = results.get(o3, {})
        # What the best changed from the run's start: its knobs that differ, and whether its source does.
        def knobs_of(text):
            try:
                import tomllib
                return tomllib.loads(text)
            except Exception:
                return {}
        start = c.execute("SELECT c.artifact FROM evaluations e JOIN candidates c ON c.id = e.candidate_id "
                          "WHERE e.run_id = ? AND e.sequence = 0", (rid,)).fetchone()
        b = knobs_of(open(best).read()) if best else {}
        s0 = knobs_of(start[0]) if start else {}
        changes = [f"{k}={v}" for k, v in sorted(b.get("knobs", {}).items()) if s0.get("knobs", {}).get(k) != v]
        rec = {"changes": changes, "source_changed": bool(b.get("files")),
               "accepted": None if bests_only else accepted, "correct": None if bests_only else correct,
               "best_source": best or "", "best_samples": rb.get("samples", []),
               "best_speedup": rb.get("speedup", {}).get("median", 0.0),
               "o3_speedup": ro3.get("speedup", {}).get("median", 0.0),
               "o3_error": "" if ro3.get("speedup") else (ro3.get("error") or "not measured")[:300],
               "error": "" if rb.get("speedup") else (rb.get("error") or p.stderr.strip())[:300]}
        json.dump(rec, open(os.path.join(out, "logs", f"measured-{rid}.json"), "w"))
        print(f"re-measured run {rid} ({app}, {agent}): {rec}", file=sys.stderr)
PY
echo $(( $(date +%s) - start )) > "$out/elapsed"
fi

elapsed=$(cat "$out/elapsed" 2>/dev/null || echo 0)
python3 - "$out" "$iterations" "$elapsed" "$agents" "$kind" <<'PY'
import json, math, os, sqlite3, sys
out, iterations, elapsed, agents, kind = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(), sys.argv[5]
setup = [l.rstrip("\n").split("\t") for l in open(os.path.join(out, "setup.tsv")) if l.strip()]
wall = dict(l.rstrip("\n").split("\t") for l in open(os.path.join(out, "wall.tsv")) if l.strip())
ready = [name for name, _, status in setup if status == "ok"]
db = os.path.join(out, "hone.db")
c = sqlite3.connect(db) if os.path.exists(db) else None
runs = c.execute("SELECT id, app, agent FROM runs ORDER BY id").fetchall() if c else []
gm = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs and all(x > 0 for x in xs) else 0.0
rows, detail = [], {"suite": kind, "programs": [dict(zip(["name", "dir", "status"], s)) for s in setup], "agents": {}}
for agent in agents:
    mine = [(rid, app) for rid, app, a in runs if a == agent]
    evaluated = accepted = correct = improved = 0
    unmeasured = False
    over_orig, over_o3, per = [], [], []
    for rid, app in mine:
        evaluated += c.execute("SELECT COUNT(*) FROM evaluations WHERE run_id = ?", (rid,)).fetchone()[0]
        path = os.path.join(out, "logs", f"measured-{rid}.json")
        m = json.load(open(path)) if os.path.exists(path) else {"accepted": 0, "correct": 0, "best_speedup": 0.0, "o3_speedup": 0.0}
        if m["accepted"] is None:  # --bests-only: the accepted variants were not measured again
            unmeasured = True
        else:
            accepted += m["accepted"]
            correct += m["correct"]
        s, o3 = m["best_speedup"], m["o3_speedup"]
        improved += s > 1.05
        if s > 0:
            over_orig.append(s)
        if s > 0 and o3 > 0:
            over_o3.append(s / o3)
        per.append({"program": app, "run": rid, **m})
    row = {"agent": f"{agent}@{iterations}", "set_up": f"{len(ready)}/{len(setup)}", "evaluated": evaluated,
           "correct": "not re-measured (--bests-only)" if unmeasured else
                      f"{100 * correct / accepted:.0f}% ({correct}/{accepted})" if accepted else "-",
           "improved": f"{improved}/{len(mine)}", "gm_orig": f"{gm(over_orig):.2f}x" if over_orig else "-",
           "gm_o3": f"{gm(over_o3):.2f}x" if over_o3 else "-", "wall": f"{wall.get(agent, '0')} s"}
    rows.append(row)
    detail["agents"][agent] = {"row": row, "runs": per}
cols = ["agent", "programs set up without hand edits", "variants evaluated", "accepted variants correct",
        "programs improved > 5% (re-measured)", "geomean speedup over the original",
        "geomean speedup over -O3 -march=native", "wall time"]
keys = ["agent", "set_up", "evaluated", "correct", "improved", "gm_orig", "gm_o3", "wall"]
lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
lines += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
failed = [f"{n} ({s})" for n, _, s in setup if s != "ok"]
notes = [f"- Suite: {kind}, {len(setup)} programs; not set up: {', '.join(failed) if failed else 'none'} (logs in {out}/logs).",
         "- Accepted variants correct: every variant a run accepted, validated again by `hone kernel measure` on inputs "
         "the run never saw (--seed 1 against the runs' --seed 2; for programs with fixed inputs, the same input).",
         "- Speedups: each run's best, re-measured side by side with the unmodified program and with the program at "
         "-O3 -march=native (medians over interleaved rounds); the geometric means are over the programs measured. "
         "\"not valid\": the -O3 -march=native build's outputs differ from the original's beyond the tolerance "
         "(it contracts to FMA); such a program has no speedup over it and is left out of that geometric mean.",
         f"- {elapsed} s for the invocation that ran it." if elapsed > 0 else "- The invocation's wall time was not recorded."]
per_program = ["| program | agent | best over the original | -O3 -march=native over the original | best over -O3 -march=native | source changed | what the best changed |",
               "|---|---|---|---|---|---|---|"]
for agent in agents:
    for r in detail["agents"][agent]["runs"]:
        s, o3 = r["best_speedup"], r["o3_speedup"]
        # A baseline whose outputs do not validate has no speed to compare with: said, not 0.00x.
        o3_text = f"{o3:.2f}x" if o3 > 0 else ("not valid" if "wrong" in r.get("o3_error", "") else "not measured")
        over = f"{s / o3:.2f}x" if s > 0 and o3 > 0 else "-"
        per_program.append(f"| {r['program']} | {agent} | {s:.2f}x | {o3_text} | {over} | "
                           f"{'yes' if r.get('source_changed') else 'no'} | {', '.join(r.get('changes', [])) or '-'} |")
# Paired: the first agent's best against each other agent's, program by program, from the same
# interleaved rounds of one `hone kernel measure` (round r of both bests ran beside each other).
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23, 11: 2.20,
       12: 2.18, 13: 2.16, 14: 2.14, 15: 2.13, 16: 2.12, 17: 2.11, 18: 2.10, 19: 2.09, 20: 2.09, 25: 2.06, 30: 2.04}
def t95(df):  # Student's t, two-sided 95%, for df degrees of freedom (the next smaller tabulated df: wider)
    return T95.get(df) or T95[max(k for k in T95 if k <= df)] if df >= 1 else float("inf")
def paired(a, b):  # round-by-round ratios b/a of two bests' times -> (median, 95% half-width or None)
    rs = sorted(y / x for x, y in zip(a, b) if x > 0 and y > 0)
    if not rs:
        return None, None
    med = rs[len(rs) // 2] if len(rs) % 2 else (rs[len(rs) // 2 - 1] + rs[len(rs) // 2]) / 2
    if len(rs) < 2:
        return med, None
    mean = sum(rs) / len(rs)
    sd = (sum((r - mean) ** 2 for r in rs) / (len(rs) - 1)) ** 0.5
    return med, t95(len(rs) - 1) * sd / len(rs) ** 0.5
paired_lines = []
if len(agents) >= 2:
    first = agents[0]
    mine = {r["program"]: r for r in detail["agents"][first]["runs"]}
    for other in agents[1:]:
        theirs = {r["program"]: r for r in detail["agents"][other]["runs"]}
        rows_p, at_least, not_slower, counted, rows_json = [], 0, 0, 0, []
        for program in list(mine) + [p for p in theirs if p not in mine]:
            a, r = mine.get(program), theirs.get(program)
            if not a or not r:
                rows_p.append(f"| {program} | only {first if a else other} ran it | - | - |")
                continue
            med, half = paired(a.get("best_samples", []), r.get("best_samples", []))
            if med is None:
                rows_p.append(f"| {program} | not measured | - | - |")
                continue
            counted += 1
            at_least += med >= 1.0
            if half is None:  # one round: no interval
                verdict = "one round: no interval"
                not_slower += med >= 1.0
            else:
                verdict = f"{first} faster" if med - half > 1.0 else f"{other} faster" if med + half < 1.0 else "within noise"
                not_slower += med + half >= 1.0
            rows_json.append({"program": program, "ratio": med, "ci95": half, "verdict": verdict})
            rows_p.append(f"| {program} | {med:.2f}x | {'+- %.2f' % half if half is not None else '-'} | {verdict} |")
        missing = len(rows_p) - counted
        detail.setdefault("paired", {})[other] = {"programs": counted, "at_least": at_least, "not_slower": not_slower,
                                                  "not_compared": missing, "rows": rows_json}
        pct = lambda n: f"{100 * n / counted:.0f}%" if counted else "-"
        paired_lines += [f"{first}@{iterations} against {other}@{iterations}, paired (each program's two bests in the "
                         f"same interleaved rounds; the ratio is {other}'s time over {first}'s, round by round, "
                         f"its median and 95% CI): {first} at least as fast on {at_least}/{counted} ({pct(at_least)}) "
                         f"by the median, not slower beyond the 95% CI on {not_slower}/{counted} ({pct(not_slower)})"
                         + (f"; {missing} program(s) not compared (below)" if missing else "") + ".", "",
                         f"| program | {other}'s time / {first}'s | 95% CI | verdict |", "|---|---|---|---|"] + rows_p + [""]
text = "\n".join(lines + [""] + per_program + [""] + paired_lines + notes) + "\n"
print(text)
open(os.path.join(out, "suite-results.md"), "w").write(text)
json.dump(detail, open(os.path.join(out, "suite-results.json"), "w"), indent=2)
PY

if [ "$write" = 1 ]; then
  python3 - "$out/suite-results.md" "$invocation" "$(hostname) ($(nproc) cores)" "$repo/docs/RESULTS.md" <<'PY'
import sys
table, invocation, machine, path = sys.argv[1:5]
begin, end = "<!-- suite:begin -->", "<!-- suite:end -->"
block = f"{begin}\n`{invocation}` on {machine}:\n\n{open(table).read()}{end}"
doc = open(path).read()
if begin in doc:
    doc = doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
else:
    doc += "\n## An external suite: PolyBench/C (`bench/suite.sh SUITE_DIR --write`)\n\n" + block + "\n"
open(path, "w").write(doc)
print(f"written to {path}")
PY
fi
