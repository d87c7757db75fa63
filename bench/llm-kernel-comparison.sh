#!/usr/bin/env bash
# Optimas' comparison on hone's kernel suite, with a real model: the guided
# knob tuner against the LLM code agent in its single-call and two-agent modes
# at each feedback level, at the same budget of evaluations, each kernel built,
# validated and timed for real on this machine. The LLM settings are passed
# through to `hone tune` (the key comes from HONE_LLM_API_KEY or the config
# file, as always). Every run is stored in --db, every reply cached there:
#   --report   prints the table from the stored runs (no model, nothing run);
#   --replay   runs again answering only from the cache (the kernels are
#              measured again; measured numbers are masked in the cache keys,
#              so a replay follows the stored replies while it makes the same
#              choices of best variant, and stops where noise makes it differ).
#
#   bench/llm-kernel-comparison.sh --llm-url URL --llm-model NAME [--llm-preset P]
#       [--kernels "matmul transpose"] [--iterations 10] [--seed 1] [--db runs/llm-kernel-comparison.db]
#       [--replay | --report]
# Prints one table: each run's best speedup over the unmodified program (in-run measurement), the
# candidates validated / evaluated, and the evidence alignment of the LLM runs; then tokens and cost.
set -euo pipefail
cd "$(dirname "$0")/.."
kernels=$(for m in examples/kernels/*/hone.toml; do basename "$(dirname "$m")"; done | tr '\n' ' ')
iterations=10
seed=1
db=runs/llm-kernel-comparison.db
report_only=0
llm=()
while [ $# -gt 0 ]; do
  case "$1" in
    --kernels) kernels=$2; shift ;;
    --iterations) iterations=$2; shift ;;
    --seed) seed=$2; shift ;;
    --db) db=$2; shift ;;
    --report) report_only=1 ;;
    --replay) llm+=(--replay) ;;
    --llm-url | --llm-model | --llm-preset | --llm-config | --llm-timeout | --token-budget | --money-budget | \
      --price-prompt | --price-completion | --temperature | --llm-max-tokens) llm+=("$1" "$2"); shift ;;
    *) echo "usage: bench/llm-kernel-comparison.sh --llm-url URL --llm-model NAME [--kernels LIST]" \
         "[--iterations N] [--seed S] [--db PATH] [--replay | --report]" >&2; exit 2 ;;
  esac
  shift
done
HONE=${HONE:-./build/src/cli/hone}
[ -x "$HONE" ] || ./scripts/build.sh default >/dev/null
mkdir -p "$(dirname "$db")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# name | arguments (the same budget for every configuration)
configs=(
  "guided|--agent guided"
  "llm single exec+explain+suggest|--agent llm --llm-mode single --feedback exec+explain+suggest"
  "llm single exec+explain|--agent llm --llm-mode single --feedback exec+explain"
  "llm single exec|--agent llm --llm-mode single --feedback exec"
  "llm two-agent exec+explain+suggest|--agent llm --llm-mode two-agent --feedback exec+explain+suggest"
  "llm two-agent exec+explain|--agent llm --llm-mode two-agent --feedback exec+explain"
)
if [ "$report_only" -eq 0 ]; then
  for k in $kernels; do
    for entry in "${configs[@]}"; do
      IFS='|' read -r name args <<<"$entry"
      extra=()
      [[ $name == llm* ]] && extra=("${llm[@]}")
      # shellcheck disable=SC2086
      "$HONE" tune --kernel "examples/kernels/$k" $args --iterations "$iterations" --seed "$seed" --db "$db" \
        --out "$work/best" --json "${extra[@]}" >"$work/run.json" 2>"$work/run.err" ||
        { echo "hone tune failed for $k / $name:" >&2; cat "$work/run.err" >&2; exit 1; }
    done
  done
fi

# The table, from the store: the latest run of each kernel x configuration.
"$HONE" runs --db "$db" --json >"$work/runs.json"
python3 - "$HONE" "$db" "$work/runs.json" "$kernels" "$(printf '%s\n' "${configs[@]}" | cut -d'|' -f1)" <<'PY'
import json, subprocess, sys
hone, db, runs_file, kernels, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(), sys.argv[5].splitlines()
latest = {}
for r in json.load(open(runs_file)):
    if r["domain"] != "kernel":
        continue
    show = json.loads(subprocess.run([hone, "show", str(r["id"]), "--db", db, "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    c = show["config"]
    name = c["agent"] if c["agent"] != "llm" else f"llm {c['llm'].get('mode', 'single')} {c['feedback']}"
    latest[(r["app"], name)] = (r, show)  # runs are listed oldest first: the latest one stays
print("| kernel | " + " | ".join(names) + " |")
print("|---|" + "---:|" * len(names))
tokens = cost = 0
for k in kernels:
    cells = []
    for n in names:
        if (k, n) not in latest:
            cells.append("-")
            continue
        r, show = latest[(k, n)]
        steps = show["trajectory"]
        ok = sum(1 for s in steps if s["status"] == "ok")
        cell = f"{r['best_score']:.2f}x ({ok}/{len(steps)})"
        if n.startswith("llm"):
            corpus = subprocess.run([hone, "export", str(r["id"]), "--db", db, "--corpus"], check=True,
                                    capture_output=True, text=True).stdout.splitlines()
            claims = [json.loads(l)["aligned"] for l in corpus]
            claimed = [a for a in claims if a is not None]
            if claimed:
                cell += f", aligned {sum(claimed)}/{len(claimed)}"
            tokens += r["tokens"]["total"]
            cost += r["cost"]
        cells.append(cell)
    print(f"| {k} | " + " | ".join(cells) + " |")
print()
print("Cells: best speedup over the unmodified program during the run (validated / evaluated candidates"
      "; LLM runs: candidates whose change touches the code of the diagnostics they name / those naming one).")
print(f"LLM runs: {tokens} tokens, cost {cost:.4f} (from the price table; 0 when none is given).")
PY
echo
echo "runs stored in $db (hone runs --db $db; hone export RUN --db $db --corpus for the optimization corpus)"
