#!/usr/bin/env bash
# The paper's protocol on all nine apps with hone's performance model: each
# built-in agent for 10 evaluations x 5 seeds, the ensemble also for 1000
# evaluations x 5 seeds. Scores are throughput relative to the app's expert
# mapper (1.0 = expert, 0 = failed). Prints the tables; with --write, also
# rewrites them in docs/RESULTS.md (between <!-- tune:begin/end -->).
#   bench/tune-results.sh [--write] [--seeds N]
set -euo pipefail
cd "$(dirname "$0")/.."
write=0
seeds=5
while [ $# -gt 0 ]; do
  case "$1" in
    --write) write=1 ;;
    --seeds) seeds=$2; shift ;;
    *) echo "usage: bench/tune-results.sh [--write] [--seeds N]" >&2; exit 2 ;;
  esac
  shift
done
./scripts/build.sh default >/dev/null
HONE=./build/src/cli/hone
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
apps=$(for m in examples/mappers/*.map; do basename "$m" .map; done | tr '\n' ' ')  # every app with an expert mapper

for app in $apps; do
  for seed in $(seq 1 "$seeds"); do
    for agent in guided ensemble random; do
      "$HONE" tune --app "$app" --agent "$agent" --iterations 10 --seed "$seed" --db "$work/runs.db" \
        --out "$work/best.map" --json >"$work/$app-$agent-10-$seed.json"
    done
    "$HONE" tune --app "$app" --agent ensemble --iterations 1000 --seed "$seed" --db "$work/runs.db" \
      --out "$work/best.map" --json >"$work/$app-ensemble-1000-$seed.json"
  done
done
# 1000 random evaluations of circuit, timed.
start=$(date +%s.%N)
"$HONE" tune --app circuit --agent random --iterations 1000 --seed 1 --db "$work/random.db" --out "$work/best.map" \
  --json >"$work/random-1000.json"
end=$(date +%s.%N)

tables=$(python3 - "$work" "$apps" "$seeds" "$start" "$end" <<'PY'
import json, sys, statistics
work, apps, seeds, start, end = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
configs = [("guided", 10), ("ensemble", 10), ("random", 10), ("ensemble", 1000)]
def load(app, agent, n, seed):
    return json.load(open(f"{work}/{app}-{agent}-{n}-{seed}.json"))
print("| app | " + " | ".join(f"{a} @{n}: mean (best / worst)" for a, n in configs) + " | guided@10 >= 1.0 | guided@10 >= ensemble@1000 |")
print("|---|" + "---:|" * len(configs) + "---|---|")
met_expert = met_ensemble = 0
evals = fails = 0
for app in apps:
    cells, means = [], {}
    for agent, n in configs:
        runs = [load(app, agent, n, s) for s in range(1, seeds + 1)]
        scores = [r["best_score"] for r in runs]
        means[(agent, n)] = statistics.mean(scores)
        cells.append(f"{statistics.mean(scores):.3f} ({max(scores):.3f} / {min(scores):.3f})")
        if agent == "random":
            evals += sum(r["evaluations"] for r in runs)
            fails += sum(r["failures"] for r in runs)
    g, e = means[("guided", 10)], means[("ensemble", 1000)]
    tie = abs(g - e) < 0.0005  # equal at the table's precision
    ok1, ok2 = g >= 1.0, g >= e or tie
    met_expert += ok1
    met_ensemble += ok2
    verdict = "tie" if tie else ("yes" if ok2 else f"no ({g - e:+.3f})")
    print(f"| {app} | " + " | ".join(cells) + f" | {'yes' if ok1 else 'no'} | {verdict} |")
print()
print(f"guided at 10 evaluations reaches the expert on {met_expert} of {len(apps)} apps and the ensemble at 1000 "
      f"evaluations (or ties with it at three digits) on {met_ensemble} of {len(apps)}.")
print()
r = json.load(open(f"{work}/random-1000.json"))
print(f"Random mappers fail in {fails} of {evals} evaluations ({100.0 * fails / evals:.0f}%; the paper: 82%). "
      f"1000 random evaluations of circuit: {r['failures']} failed, {end - start:.1f} s wall time including "
      f"start-up and the store.")
PY
)
stamp="$(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d), $seeds seeds"
printf '%s\n\nmachine: %s\n' "$tables" "$stamp"
if [ "$write" = 1 ]; then
  tmp=$(mktemp)
  awk -v table="$tables" -v stamp="$stamp" '
    $0 == "<!-- tune:begin -->" { print; print table; print ""; print "Measured on " stamp " by `bench/tune-results.sh --write`."; skip=1; next }
    $0 == "<!-- tune:end -->" { skip=0 }
    !skip { print }' docs/RESULTS.md >"$tmp"
  mv "$tmp" docs/RESULTS.md
  echo "wrote docs/RESULTS.md"
fi
