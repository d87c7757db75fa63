#!/usr/bin/env bash
# The performance model against real Legion runs (docs/RESULTS.md, "Model vs real runs"): for each
# of hone's real apps (apps/legion), mappers drawn at random from hone's decision space are built
# into the app and run on this host's CPUs by `hone tune --evaluator command --agent random`; then
# `hone model calibrate` compares the model's predictions with the measured times (Spearman rank
# correlation, median relative error) before and after fitting the machine model's cost numbers.
# Needs a Legion build (scripts/legion.sh LEGION_SRC) and a quiet machine; about 15 minutes per app.
#
#   bench/legion-fidelity.sh [--mappers N] [--reuse] [--write] [APP...]    (default: 24; circuit stencil summa)
#
# --reuse keeps an app's real runs from an earlier call (only the comparison is redone); --write puts
# the table between the markers legion:fidelity:begin/end in docs/RESULTS.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hone=${HONE:-$root/build/src/cli/hone}
mappers=24 write=0 reuse=0 apps=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --mappers) mappers=$2; shift 2 ;;
    --write) write=1; shift ;;
    --reuse) reuse=1; shift ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) apps+=("$1"); shift ;;
  esac
done
[[ ${#apps[@]} -gt 0 ]] || apps=(circuit stencil summa)
legion=${HONE_LEGION_DIR:-$("$root/scripts/legion.sh" --prefix)}
if [[ ! -f "$legion/include/legion.h" ]]; then
  echo "legion-fidelity: no Legion build in $legion (scripts/legion.sh LEGION_SRC)" >&2
  exit 2
fi
export HONE_LEGION_DIR=$legion HONE=$hone
out=${HONE_BENCH_OUT:-$root/build/bench-legion}
mkdir -p "$out"
build="$out/apps"
cpus=4 csize=1024
run_flags="-ll:cpu $cpus -ll:util 1 -ll:csize $csize"
declare -A size=([circuit]=20000 [stencil]=2000 [summa]=768)
declare -A args=([circuit]="-p 4 -w 20000 -l 10" [stencil]="-n 2000 -tx 2 -ty 2 -steps 10" [summa]="-n 768 -gx 2 -gy 2")
if [[ $reuse == 0 || ! -f "$out/host.toml" ]]; then
  "$hone" machine detect --cpus "$cpus" --sysmem-gb "$(awk "BEGIN { print $csize * 1048576 / 1e9 }")" --name host \
    -o "$out/host.toml" 2>/dev/null
fi
rows=()
for app in "${apps[@]}"; do
  db="$out/$app.db"
  if [[ $reuse == 0 || ! -f "$db" ]]; then
  rm -f "$db"
  echo "legion-fidelity: $app: $mappers random mappers, built and run 3 times each" >&2
  "$hone" tune --app "$app" --machine "$out/host.toml" --size "${size[$app]}" --agent random --seed 1 \
    --iterations "$mappers" --db "$db" --workdir "$out/work-$app" --evaluator command --repeats 3 \
    --build "'$root/apps/legion/build.sh' $app {policy} {dir}/app '$build'" \
    --run "{dir}/app $run_flags ${args[$app]}" --metric 'HONE_TIME ([0-9.]+)' --timeout 300 >"$out/$app.tune.log" 2>&1 || true
  fi
  "$hone" show 1 --db "$db" --json >"$out/$app.show.json"
  "$hone" model calibrate --app "$app" --machine "$out/host.toml" --size "${size[$app]}" --runs "$db" \
    -o "$out/host-$app-calibrated.toml" --json >"$out/$app.calibrate.json" 2>"$out/$app.calibrate.err" || {
    cat "$out/$app.calibrate.err" >&2
    continue
  }
  rows+=("$(python3 - "$out/$app.calibrate.json" "$out/$app.show.json" "$app" <<'PY'
import json, statistics, sys
j, run = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
b, a, f = j["before"], j["after"], j["factors"]
m = [s["metrics"] for s in run["trajectory"] if s.get("status") == "ok" and "metric" in s.get("metrics", {})]
times = sorted(x["metric"] for x in m)
noise = statistics.median((x["metric_max"] - x["metric_min"]) / x["metric"] for x in m if "metric_max" in x)
preds = {p["predicted_s"] for p in j["points"] if p["predicted_s"] is not None}
print(f"| {sys.argv[3]} | {j['observations']} | {times[0]:.2f}-{times[-1]:.2f} s ({times[-1] / times[0]:.1f}x) "
      f"| {100 * noise:.0f}% | {b['compared']} | {len(preds)} | {b['spearman']:.2f} | {100*b['median_rel_error']:.0f}% "
      f"| {100*a['median_rel_error']:.0f}% | compute x{f['compute']:.2g}, memory x{f['memory']:.2g}, "
      f"copies x{f['copies']:.2g}, runtime x{f['runtime']:.2g} |")
PY
)")
done
table="| app | mappers run | measured (median of 3 each) | run-to-run spread | model predicts | distinct predictions | Spearman | median error | median error, calibrated | fitted factors |
|---|---|---|---|---|---|---|---|---|---|"
for r in "${rows[@]}"; do table+=$'\n'"$r"; done
echo "$table"
if [[ $write == 1 ]]; then
  echo "$table" | python3 "$root/bench/write-table.py" "$root/docs/RESULTS.md" legion:fidelity
fi
