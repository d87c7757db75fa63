#!/usr/bin/env bash
# hone tune on a real Legion app (docs/RESULTS.md, "Tuning a real Legion app"): the guided agent with
# --evaluator command, each candidate built into the app, run --repeats times with Legion Prof on,
# its profile the agent's evidence. Then the best mapper it found and Legion's default mapper (a policy
# that decides nothing but the processor kind, which the CPU-only apps have one of) are measured side
# by side, runs interleaved, so that the comparison does not rest on the tuning run's own (selected,
# so optimistic) measurement.
# Needs a Legion build (scripts/legion.sh LEGION_SRC) and a quiet machine.
#
#   bench/legion-tune.sh [--iterations N] [--repeats R] [--reuse] [--write] [APP...]   (default: 10, 5; circuit stencil)
#
# Both sides run with Legion Prof on, as the tuning runs do: on this 2-core host it changes the times
# (4 Legion CPUs and a utility processor share the cores), so only equal conditions compare.
# --reuse keeps an app's tuning run from an earlier call and redoes only the side-by-side runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hone=${HONE:-$root/build/src/cli/hone}
iterations=10 repeats=5 write=0 reuse=0 apps=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --iterations) iterations=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --write) write=1; shift ;;
    --reuse) reuse=1; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) apps+=("$1"); shift ;;
  esac
done
[[ ${#apps[@]} -gt 0 ]] || apps=(circuit stencil)
legion=${HONE_LEGION_DIR:-$("$root/scripts/legion.sh" --prefix)}
[[ -f "$legion/include/legion.h" ]] || { echo "legion-tune: no Legion build in $legion (scripts/legion.sh LEGION_SRC)" >&2; exit 2; }
export HONE_LEGION_DIR=$legion HONE=$hone
out=${HONE_BENCH_OUT:-$root/build/bench-legion-tune}
mkdir -p "$out"
build="$out/apps"
run_flags="-ll:cpu 4 -ll:util 1 -ll:csize 1024"
declare -A size=([circuit]=20000 [stencil]=2000 [summa]=768)
declare -A args=([circuit]="-p 4 -w 20000 -l 10" [stencil]="-n 2000 -tx 2 -ty 2 -steps 10" [summa]="-n 768 -gx 2 -gy 2")
"$hone" machine detect --cpus 4 --sysmem-gb 1.07 --name host -o "$out/host.toml" 2>/dev/null
printf 'Task * CPU;\n' >"$out/default.map"
median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
rows=()
for app in "${apps[@]}"; do
  echo "legion-tune: $app: guided x $iterations, then the best against Legion's default mapper" >&2
  db="$out/$app.db"
  if [[ $reuse == 0 || ! -f "$out/$app-best.map" ]]; then
  rm -f "$db"
  "$hone" tune --app "$app" --machine "$out/host.toml" --size "${size[$app]}" --agent guided \
    --start "$root/apps/legion/mappers/${app}_cpu.map" --iterations "$iterations" --db "$db" \
    --workdir "$out/work-$app" --evaluator command --repeats "$repeats" --timeout 300 --out "$out/$app-best.map" \
    --build "'$root/apps/legion/build.sh' $app {policy} {dir}/app '$build'" \
    --run "{dir}/app $run_flags ${args[$app]} -lg:prof 1 -lg:prof_logfile {prof}" \
    --metric 'HONE_TIME ([0-9.]+)' --json >"$out/$app.tune.json" 2>"$out/$app.tune.err" || true
  fi
  "$hone" show 1 --db "$db" --json >"$out/$app.show.json"
  "$root/apps/legion/build.sh" "$app" "$out/default.map" "$out/$app-default" "$build" >/dev/null
  "$root/apps/legion/build.sh" "$app" "$out/$app-best.map" "$out/$app-best" "$build" >/dev/null
  dt=() bt=()
  for _ in $(seq $((2 * repeats))); do # interleaved: the same conditions for both
    # shellcheck disable=SC2086
    dt+=("$("$out/$app-default" $run_flags ${args[$app]} -lg:prof 1 -lg:prof_logfile "$out/sbs_%.gz" 2>/dev/null |
      sed -n 's/^HONE_TIME //p')")
    # shellcheck disable=SC2086
    bt+=("$("$out/$app-best" $run_flags ${args[$app]} -lg:prof 1 -lg:prof_logfile "$out/sbs_%.gz" 2>/dev/null |
      sed -n 's/^HONE_TIME //p')")
  done
  rows+=("$(python3 - "$out/$app.show.json" "$app" "$(median "${dt[@]}")" "$(median "${bt[@]}")" <<'PY'
import json, sys
run, app, default, best_again = json.load(open(sys.argv[1])), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
steps = run["trajectory"]
ok = [s for s in steps if s.get("status") == "ok" and s.get("metrics", {}).get("metric")]
best = min(ok, key=lambda s: s["metrics"]["metric"]) if ok else None
spread = sorted((s["metrics"]["metric_max"] - s["metrics"]["metric_min"]) / s["metrics"]["metric"]
                for s in ok if "metric_max" in s["metrics"])
noise = spread[len(spread) // 2] if spread else float("nan")
start = steps[0]["metrics"]["metric"] if steps and steps[0].get("metrics", {}).get("metric") else float("nan")
b = f"{best['metrics']['metric']:.3f} s (step {best['step']})" if best else "-"
print(f"| {app} | {len(steps)} ({len(steps) - len(ok)} failed) | {start:.3f} s | {b} | {100 * noise:.0f}% "
      f"| {default:.3f} s | {best_again:.3f} s | {default / best_again:.2f}x |")
PY
)")
done
table="| app | guided evaluations | start (median of $repeats) | guided's best in the run | run-to-run spread | side by side: Legion's default mapper | side by side: guided's best | speedup over the default mapper |
|---|---|---|---|---|---|---|---|"
for r in "${rows[@]}"; do table+=$'\n'"$r"; done
echo "$table"
if [[ $write == 1 ]]; then
  echo "$table" | python3 "$root/bench/write-table.py" "$root/docs/RESULTS.md" legion:tune
fi
