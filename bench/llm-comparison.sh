#!/usr/bin/env bash
# The paper's comparison with a real model: the LLM agent (trace at each
# feedback level, opro, and the no-feedback 0-shot / 5-shot modes) against
# the built-in agents (guided, ensemble, random), each for N evaluations x
# S seeds on the chosen apps, with hone's performance model as the evaluator.
# The LLM settings are passed through to `hone tune` (the key comes from
# HONE_LLM_API_KEY or the config file, as always). Every LLM reply is cached
# in the run store, so a second invocation with the same --db replays the
# whole comparison without the network (add --replay to insist on that).
#
#   bench/llm-comparison.sh --llm-url URL --llm-model NAME [--llm-preset P] [--apps "circuit stencil"]
#                           [--seeds 3] [--iterations 10] [--db runs/llm-comparison.db] [--replay]
# Prints one table (mean best score relative to the expert, best / worst over
# seeds) and the tokens and money the LLM runs used.
set -euo pipefail
cd "$(dirname "$0")/.."
apps=$(for m in examples/mappers/*.map; do basename "$m" .map; done | tr '\n' ' ')  # every app with an expert mapper
seeds=3
iterations=10
db=runs/llm-comparison.db
llm=()
while [ $# -gt 0 ]; do
  case "$1" in
    --apps) apps=$2; shift ;;
    --seeds) seeds=$2; shift ;;
    --iterations) iterations=$2; shift ;;
    --db) db=$2; shift ;;
    --replay) llm+=(--replay) ;;
    --llm-url | --llm-model | --llm-preset | --llm-config | --llm-timeout | --token-budget | --money-budget | \
      --price-prompt | --price-completion | --temperature) llm+=("$1" "$2"); shift ;;
    *) echo "usage: bench/llm-comparison.sh --llm-url URL --llm-model NAME [--apps LIST] [--seeds N]" \
         "[--iterations N] [--db PATH] [--replay]" >&2; exit 2 ;;
  esac
  shift
done
HONE=${HONE:-./build/src/cli/hone}
[ -x "$HONE" ] || ./scripts/build.sh default >/dev/null
mkdir -p "$(dirname "$db")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# name | arguments
configs=(
  "llm trace exec+explain+suggest|--agent llm --optimizer trace --feedback exec+explain+suggest"
  "llm trace exec+explain|--agent llm --optimizer trace --feedback exec+explain"
  "llm trace exec|--agent llm --optimizer trace --feedback exec"
  "llm opro|--agent llm --optimizer opro --feedback exec+explain+suggest"
  "llm 0-shot|--agent llm --optimizer 0-shot"
  "llm 5-shot|--agent llm --optimizer 5-shot"
  "guided|--agent guided"
  "ensemble|--agent ensemble"
  "random|--agent random"
)
for app in $apps; do
  for seed in $(seq 1 "$seeds"); do
    for i in "${!configs[@]}"; do
      IFS='|' read -r name args <<<"${configs[$i]}"
      extra=()
      [[ $name == llm* ]] && extra=("${llm[@]}")
      # shellcheck disable=SC2086
      "$HONE" tune --app "$app" $args --iterations "$iterations" --seed "$seed" --db "$db" \
        --out "$work/best.map" --json "${extra[@]}" >"$work/$app-$i-$seed.json" 2>"$work/$app-$i-$seed.err" ||
        { echo "hone tune failed for $app / $name / seed $seed:" >&2; cat "$work/$app-$i-$seed.err" >&2; exit 1; }
    done
  done
done

names=$(printf '%s\n' "${configs[@]}" | cut -d'|' -f1)
python3 - "$work" "$apps" "$seeds" "$iterations" "$names" <<'PY'
import json, sys, statistics
work, apps, seeds, iterations = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), sys.argv[4]
names = sys.argv[5].splitlines()
print(f"| app | " + " | ".join(f"{n} @{iterations}" for n in names) + " |")
print("|---|" + "---:|" * len(names))
tokens = cost = calls = 0
stops = {}
for app in apps:
    cells = []
    for i, name in enumerate(names):
        runs = [json.load(open(f"{work}/{app}-{i}-{s}.json")) for s in range(1, seeds + 1)]
        scores = [r["best_score"] for r in runs]
        cells.append(f"{statistics.mean(scores):.3f} ({max(scores):.3f} / {min(scores):.3f})")
        for r in runs:
            tokens += r["tokens"]["total"]
            cost += r["cost"]
            calls += r["llm_calls"]
            if r["stop_reason"].startswith("the LLM agent stopped"):
                stops[f"{app} / {name} / seed {r['seed']}"] = r["stop_reason"]
    print(f"| {app} | " + " | ".join(cells) + " |")
print()
print(f"LLM runs: {calls} calls, {tokens} tokens, cost {cost:.4f} (from the price table; 0 when none is given).")
for where, why in stops.items():
    print(f"- cut short: {where}: {why}")
PY
echo
echo "runs stored in $db (hone runs --db $db; hone export RUN --db $db --jsonl for every prompt and reply)"
