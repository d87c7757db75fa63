#!/usr/bin/env bash
# Real Legion, end to end (docs/LEGION.md, "Real applications"): hone's apps (apps/legion) built
# against a real Legion with hone-compiled mappers, run on 4 CPUs, checked for correct results, and
# the processor every task ran on (as the runtime reports it) compared with `hone eval`; a mapping
# the runtime rejects fails with the runtime's message; `hone tune --evaluator command` on a real app.
# Skipped (exit 77) without a Legion build: scripts/legion.sh LEGION_SRC makes one (once, about
# 30 CPU-minutes), or set HONE_LEGION_DIR to an installed Legion.
# Usage: legion_test.sh HONE SRC [PART]   PART: apps (default: all) or tune
HONE=$1 SRC=$2 PART=${3:-all}
source "$(dirname "$0")/lib.sh"

legion=${HONE_LEGION_DIR:-$("$SRC/scripts/legion.sh" --prefix)}
if [ ! -f "$legion/include/legion.h" ]; then
  echo "skipped: no Legion build in $legion (build it once with: scripts/legion.sh LEGION_SRC; or set HONE_LEGION_DIR)"
  exit 77
fi
export HONE_LEGION_DIR=$legion HONE
# The apps' build folder outlives the test, so a rerun only recompiles mappers.
BUILD=${HONE_LEGION_APPS_BUILD:-$(cd "$(dirname "$HONE")/../.." && pwd)/legion-apps}
RUN=(-ll:cpu 4 -ll:util 1 -ll:csize 1024)
MACHINE=nodes=1,cpus=4,gpus=0
declare -A ARGS=([circuit]="-p 4 -w 4000 -l 3" [stencil]="-n 400 -tx 2 -ty 2 -steps 3" [summa]="-n 192 -gx 2 -gy 2")
declare -A SIZE=([circuit]=4000 [stencil]=400 [summa]=192) # the same sizes, as the models' size parameter
# The machine these runs use (4 CPUs, Legion's 1 GiB of system memory), for hone's model: random
# mappers are drawn against it.
check "machine detect" 0 "$HONE" machine detect --cpus 4 --sysmem-gb 1.07 --name host4 --no-measure -o "$TMP/host4.toml"

build() { # app policy -> $TMP/bin/<app>-<policy name>
  local out="$TMP/bin/$1-$(basename "$2" .map)"
  if "$SRC/apps/legion/build.sh" "$1" "$2" "$out" "$BUILD" >"$TMP/build.log" 2>&1; then
    echo "$out"
  else
    echo "FAIL build $1 with $2:" >&2
    sed 's/^/  /' "$TMP/build.log" | tail -30 >&2
    return 1
  fi
}

runs_correctly() { # app policy [min points compared]: builds, runs, checks results and placements
  local app=$1 policy=$2 min=${3:-0} bin
  bin=$(build "$app" "$policy") || { fail=$((fail + 1)); return; }
  # shellcheck disable=SC2086
  check "$app with $(basename "$policy") runs" 0 "$bin" "${RUN[@]}" ${ARGS[$app]} -hone:placements
  expect_out "$app with $(basename "$policy") computes the right result" "HONE_CHECK ok"
  expect_out "$app with $(basename "$policy") prints its time" "HONE_TIME "
  cp "$TMP/out" "$TMP/run.out"
  check "$app with $(basename "$policy"): placements agree with hone eval" 0 \
    python3 "$SRC/tests/legion/placements.py" --hone "$HONE" --policy "$policy" --machine "$MACHINE" \
    --min "$min" "$TMP/run.out"
  echo "  $app with $(basename "$policy"): $(tail -1 "$TMP/out")"
}

if part apps; then
  for app in circuit stencil summa; do
    # The CPU policy places every launch: every index point (and summa's leaf GEMMs) is compared.
    runs_correctly "$app" "$SRC/apps/legion/mappers/${app}_cpu.map" 4
    # The paper's expert mapper (written for GPUs; on CPUs its GPU placements fall back to Legion's
    # default mapper, as documented).
    runs_correctly "$app" "$SRC/examples/mappers/$app.map"
    # Random mappers that hone's model accepts, drawn for this 4-CPU machine.
    drawn=0
    for seed in 1 2; do
      "$HONE" tune --app "$app" --machine "$TMP/host4.toml" --size "${SIZE[$app]}" --agent random --iterations 12 \
        --seed "$seed" --db "$TMP/random.db" --out "$TMP/random-$app-$seed.map" >/dev/null 2>&1
      if [ -f "$TMP/random-$app-$seed.map" ]; then
        runs_correctly "$app" "$TMP/random-$app-$seed.map"
        drawn=$((drawn + 1))
      fi
    done
    if [ "$drawn" -eq 0 ]; then fail=$((fail + 1)); echo "FAIL $app: no random mapper drawn"; fi
  done
  # A mapping the runtime rejects: leaf tasks cannot map their regions virtually. The run fails
  # with Legion's message, which hone's command evaluator reports as the evaluation's error.
  printf 'Task * CPU;\nRegion * * CPU VIRTUAL;\n' >"$TMP/virtual.map"
  if bin=$(build stencil "$TMP/virtual.map"); then
    # (through sh, so that this shell does not announce the abort)
    # shellcheck disable=SC2086
    sh -c '"$@"' sh "$bin" "${RUN[@]}" ${ARGS[stencil]} >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -ne 0 ] && grep -q "LEGION ERROR" "$TMP/err" "$TMP/out"; then pass=$((pass + 1)); else
      fail=$((fail + 1)); echo "FAIL a virtual mapping of leaf regions: exit $rc"; tail -5 "$TMP/err"
    fi
  else
    fail=$((fail + 1))
  fi
fi

if part tune; then
  # hone tune on real runs: each candidate's mapper is compiled into the app, run 3 times, timed,
  # and profiled with Legion Prof; the profile is what the guided agent and AutoGuide read.
  # It starts from the CPU policy: the expert mapper's GPU placements fault on a machine without GPUs
  # (the real mapper then falls back to Legion's default mapper; the model counts it as failed).
  check "tune --evaluator command on the real stencil" 0 "$HONE" tune --app stencil --machine "$TMP/host4.toml" \
    --start "$SRC/apps/legion/mappers/stencil_cpu.map" \
    --size 1200 --evaluator command --agent guided --iterations 3 --db "$TMP/tune.db" --workdir "$TMP/work" \
    --build "'$SRC/apps/legion/build.sh' stencil {policy} {dir}/app '$BUILD'" \
    --run "{dir}/app ${RUN[*]} -n 1200 -tx 2 -ty 2 -steps 5 -lg:prof 1 -lg:prof_logfile {prof}" \
    --metric 'HONE_TIME ([0-9.]+)' --repeats 3 --json
  cp "$TMP/out" "$TMP/tune.json"
  check "the run's steps were measured for real" 0 python3 - "$TMP/tune.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(json.dumps(r)[:400])
sys.exit(0 if r.get("evaluations", 0) >= 1 and r.get("best_score", 0) > 0 else 1)
PY
  run_id=$(python3 -c "import json; print(json.load(open('$TMP/tune.json'))['run_id'])")
  check "a step's profile is the real run's Legion Prof profile" 0 "$HONE" show "$run_id" --db "$TMP/tune.db" \
    --step 0 --json
  expect_out "the profile comes from Legion Prof" '"source": "legion-prof"'
  expect_out "it times the stencil task" '"name": "stencil"'
  expect_out "the median of 3 runs, with its spread" '"metric_max"'
  expect_out "setup work outside the timed part is left out of the task statistics" '"untimed_tasks_left_out"'
  # The model against these real runs (few of them: the numbers are not the point here).
  check "model calibrate reads the real runs" 0 "$HONE" model calibrate --app stencil --machine "$TMP/host4.toml" \
    --size 1200 --runs "$TMP/tune.db" --json
  expect_out "it compares the model with the measurements" '"spearman"'
fi

echo "legion e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
