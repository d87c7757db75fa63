#!/usr/bin/env bash
# End-to-end tests of the hone binary: exit codes, output forms, files.
# Usage: cli_test.sh HONE_BINARY SOURCE_DIR
set -uo pipefail
HONE=$1
SRC=$2
source "$(dirname "$0")/lib.sh"

# Version, help, usage errors.
check version 0 "$HONE" --version
expect_out version "hone 0."
check help 0 "$HONE" --help
expect_out help "check"
check no-subcommand 2 "$HONE"
check unknown-option 2 "$HONE" check --frobnicate x.map
check bad-diagnostics-format 2 "$HONE" check --diagnostics=xml "$SRC/examples/mappers/circuit.map"
# The first hour: a misspelt command or option gets a did-you-mean, `hone help` works, nonsense values
# are refused rather than taken.
check misspelt-command 2 "$HONE" tunee --app circuit
expect_err misspelt-command "hone: unknown command 'tunee'; did you mean 'tune'?"
check help-command 0 "$HONE" help
expect_out help-command "Subcommands:"
check help-tune 0 "$HONE" help tune
expect_out help-tune "--iterations"
check misspelt-option 2 "$HONE" tune --app circuit --itertions 3
expect_err misspelt-option "hone: "
expect_err misspelt-option "did you mean '--iterations' for '--itertions'?"
check seed-negative 2 "$HONE" tune --app circuit --seed -1
check time-limit-negative 2 "$HONE" tune --app circuit --time-limit -3
check target-negative 2 "$HONE" tune --app circuit --target -1
check patience-negative 2 "$HONE" tune --app circuit --patience -2
check point-and-all-points 2 "$HONE" eval "$SRC/examples/mappers/circuit.map" --machine gpus=4 --task calculate_new_currents --space 4 --point 1 --all-points
check llm-check-help 0 "$HONE" llm-check --help
expect_out llm-check-help "--llm-url"
expect_out llm-check-help "--llm-model"

# check: every example passes; a broken file fails with located diagnostics.
check check-examples 0 "$HONE" check "$SRC"/examples/mappers/*.map
expect_out check-examples "circuit.map: ok"
printf 'Task * GPUU;\nmgpu = Machine(GPU)\nIndexTaskMap t f;\n' > "$TMP/bad.map"
check check-bad 1 "$HONE" check "$TMP/bad.map"
expect_err check-bad "bad.map:1:8: error: unknown processor kind 'GPUU'"
expect_err check-bad "bad.map:2:20: error: expected ';' after the assignment"
expect_err check-bad "IndexTaskMap's function undefined"
check check-json 1 "$HONE" check --diagnostics=json "$TMP/bad.map"
expect_out check-json '"severity": "error"'
expect_out check-json '"line": 1'
if command -v python3 >/dev/null; then
  cp "$TMP/out" "$TMP/diags.json"
  check check-json-parses 0 python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d)==3, d; assert all({"file","line","column","severity","message","notes"} <= set(x) for x in d)' "$TMP/diags.json"
fi
check check-missing-file 1 "$HONE" check "$TMP/nope.map"
expect_err check-missing-file "cannot read"
check check-directory 1 "$HONE" check "$TMP"
expect_err check-directory "not a regular file"

# eval: the issue's example, all points, a runtime fault.
check eval-point 0 "$HONE" eval "$SRC/examples/mappers/circuit.map" --machine nodes=2,gpus=4,cpus=8 \
  --task calculate_new_currents --space 8 --point 5
expect_out eval-point "(1, 1)"
check eval-all 0 "$HONE" eval "$SRC/examples/mappers/circuit.map" --machine nodes=2,gpus=4 \
  --task distribute_charge --space 8 --all-points
expect_out eval-all "(7) -> (1, 3)"
check eval-2d 0 "$HONE" eval "$SRC/examples/mappers/cannon.map" --machine nodes=2,gpus=4 --task task_1 --space 4,4 --point 2,0
expect_out eval-2d "(1, 0)"
check eval-json 0 "$HONE" eval "$SRC/examples/mappers/stencil.map" --machine nodes=1,gpus=2 --task stencil --space 4 --all-points --json
expect_out eval-json '"processors"'
printf 'm = Machine(GPU);\ndef f(Task t) {\n    return m[t.ipoint[0], 0];\n}\nIndexTaskMap x f;\nTask * GPU;\n' > "$TMP/oob.map"
check eval-oob 1 "$HONE" eval "$TMP/oob.map" --machine nodes=2,gpus=4 --task x --space 4 --point 3
expect_err eval-oob "oob.map:3:12: error: Sharding node index out of bound"
check eval-oob-json 1 "$HONE" eval "$TMP/oob.map" --machine nodes=2,gpus=4 --task x --space 4 --all-points --json
expect_out eval-oob-json '"line": 3'
expect_out eval-oob-json '"processors"'
check eval-bad-machine 2 "$HONE" eval "$TMP/oob.map" --machine nodes=2,tpus=4 --task x --space 4 --point 3
check eval-no-map 1 "$HONE" eval "$TMP/oob.map" --machine nodes=2,gpus=4 --task y --space 4 --point 3 --kind CPU
expect_err eval-no-map "no IndexTaskMap applies"
check eval-single 0 "$HONE" eval "$SRC/examples/mappers/cannon.map" --machine nodes=2,gpus=4 --task task_4 --parent-proc 1,2
expect_out eval-single "(1, 2)"

# fmt: prints canonical text, -i rewrites, --check reports, errors refuse.
printf 'Task   * GPU ,CPU ;\nx=(1+2)*3;\n' > "$TMP/f.map"
check fmt-print 0 "$HONE" fmt "$TMP/f.map"
expect_out fmt-print "x = (1 + 2) * 3;"
check fmt-check-dirty 1 "$HONE" fmt --check "$TMP/f.map"
check fmt-in-place 0 "$HONE" fmt -i "$TMP/f.map"
check fmt-check-clean 0 "$HONE" fmt --check "$TMP/f.map"
check fmt-refuses-errors 1 "$HONE" fmt -i "$TMP/bad.map"
if grep -q "GPUU" "$TMP/bad.map"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL fmt changed a broken file"; fi

# compile: C++ beside its support header; stdout without -o; broken input refused.
check compile-file 0 "$HONE" compile "$SRC/examples/mappers/circuit.map" -o "$TMP/gen/circuit_mapper.cc"
expect_err compile-file "hone_mapper_support.h"
if [ -f "$TMP/gen/circuit_mapper.cc" ] && [ -f "$TMP/gen/hone_mapper_support.h" ]; then pass=$((pass + 1)); else
  fail=$((fail + 1)); echo "FAIL compile-file: outputs missing"; fi
check compile-stdout 0 "$HONE" compile "$SRC/examples/mappers/stencil.map" --class MyStencil
expect_out compile-stdout "namespace hone_generated_MyStencil"
expect_out compile-stdout "void register_mappers()"
expect_out compile-stdout "stencil.map:8"
check compile-bad-class 2 "$HONE" compile "$SRC/examples/mappers/stencil.map" --class "class"
check compile-broken 1 "$HONE" compile "$TMP/bad.map" -o "$TMP/gen/bad.cc"
if [ ! -e "$TMP/gen/bad.cc" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL compile-broken wrote output"; fi
check compile-ast 0 "$HONE" compile "$SRC/examples/mappers/stencil.map" --emit=ast
expect_out compile-ast "Layout task=* region=* target=* constraints=[SOA F_order]"

# check --fix: the paper's Figure 1 mapper becomes valid; the original is kept.
cat > "$TMP/fig.map" <<'MAP'
Task task0 GPU;
Region * ghost_region GPU ZCMEM
Layout * * * C_order SOA Align==64
def cyclic(Task task):
    ip = task.ipoint;
    mgpu = Machine(GPU);
    return mgpu[ip[0] % mgpu.size[0], ip[0] % mgpu.size[1]];
IndexTaskMap task4 cyclic
MAP
check check-fix 0 "$HONE" check --fix "$TMP/fig.map"
expect_err check-fix "applied 5 fix-its"
check check-fixed-is-valid 0 "$HONE" check "$TMP/fig.map"
check check-fix-kept-original 1 "$HONE" check "$TMP/fig.map.orig"
# A second --fix never replaces the first backup.
cp "$TMP/fig.map.orig" "$TMP/fig.map"
check check-fix-again 0 "$HONE" check --fix "$TMP/fig.map"
expect_err check-fix-again "the original is $TMP/fig.map.orig.1"
cmp -s "$TMP/fig.map.orig" "$TMP/fig.map.orig.1" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL check-fix-again: backups differ"; }
# Output files: a missing folder is created; a device is never replaced.
check compile-new-folder 0 "$HONE" compile "$SRC/examples/mappers/circuit.map" -o "$TMP/new/folder/circuit.cc"
test -s "$TMP/new/folder/circuit.cc" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL compile-new-folder"; }
ln -s /dev/null "$TMP/devlink.cc"
check compile-device 1 "$HONE" compile "$SRC/examples/mappers/circuit.map" -o "$TMP/devlink.cc"
expect_err compile-device "not a regular file"

# dump.
check dump-tokens 0 "$HONE" dump --emit=tokens "$SRC/examples/mappers/stencil.map"
expect_out dump-tokens "processor kind 'GPU'"
check dump-ast 0 "$HONE" dump --emit=ast "$SRC/examples/mappers/stencil.map"
expect_out dump-ast "IndexTaskMap tasks=stencil,increment,check function=block1d"

# simulate and check --app; the JSON profile every consumer reads is golden (scripts/regen-golden.sh).
for mapper in "$SRC"/examples/mappers/*.map; do
  app=$(basename "$mapper" .map)
  check "simulate-$app" 0 "$HONE" simulate "$SRC/examples/mappers/$app.map" --app "$app"
  expect_out "simulate-$app" "status: ok"
  check "simulate-json-$app" 0 "$HONE" simulate "$SRC/examples/mappers/$app.map" --app "$app" --json
  if diff -q "$TMP/out" "$SRC/tests/golden/simulate/$app.json" >/dev/null; then pass=$((pass + 1)); else
    fail=$((fail + 1))
    echo "FAIL simulate-golden-$app: differs from tests/golden/simulate/$app.json (scripts/regen-golden.sh after a deliberate change)"
    diff "$TMP/out" "$SRC/tests/golden/simulate/$app.json" | head -10
  fi
  check "check-app-$app" 0 "$HONE" check "$SRC/examples/mappers/$app.map" --app "$app"
done
check simulate-json 0 "$HONE" simulate "$SRC/examples/mappers/circuit.map" --app circuit --machine p100x4-2nodes --json
expect_out simulate-json '"status": "ok"'
expect_out simulate-json '"throughput_unit": "iterations/s"'
sed 's/SOA F_order/SOA C_order/' "$SRC/examples/mappers/stencil.map" >"$TMP/stencil_c.map"
check simulate-layout-failure 1 "$HONE" simulate "$TMP/stencil_c.map" --app stencil --json
expect_out simulate-layout-failure '"error": "Assertion failed: stride does not match expected value."'
check simulate-unknown-app 2 "$HONE" simulate "$SRC/examples/mappers/circuit.map" --app circut
expect_err simulate-unknown-app "did you mean 'circuit'?"
check simulate-unknown-machine 2 "$HONE" simulate "$SRC/examples/mappers/circuit.map" --app circuit --machine p100
printf 'name = "broken"\nnodes = 1\n[runtime]\n[[processor]]\nkind = "GPU"\nper_node = 1\ngflop = 1\n' >"$TMP/broken.toml"
# One rule for exit codes: a file's content is input (1), an option that names nothing is usage (2).
check simulate-bad-machine-file 1 "$HONE" simulate "$SRC/examples/mappers/circuit.map" --app circuit --machine "$TMP/broken.toml"
expect_err simulate-bad-machine-file "broken.toml:7:1: processor[0]: unknown key 'gflop'; did you mean 'gflops'?"
sed 's/latency_us = 0.1 /latency_us = nan /' "$SRC/models/machines/p100x4.toml" >"$TMP/nan.toml"
check simulate-nan-machine-file 1 "$HONE" simulate "$SRC/examples/mappers/circuit.map" --app circuit --machine "$TMP/nan.toml"
expect_err simulate-nan-machine-file "nan.toml:34:"
expect_err simulate-nan-machine-file "expected a finite number"
check space-nan-machine-file 1 "$HONE" space --app circuit --machine "$TMP/nan.toml"
check describe-nan-machine-file 1 "$HONE" describe --app circuit --machine "$TMP/nan.toml"
check tune-nan-machine-file 1 "$HONE" tune --app circuit --machine "$TMP/nan.toml" --iterations 1 --db "$TMP/nan.db"
expect_err tune-nan-machine-file "nan.toml:34:"
check tune-unknown-machine 2 "$HONE" tune --app circuit --machine p100 --iterations 1 --db "$TMP/nan.db"
# A --db that names a pipe is refused at once, as a wrong option (opening it would wait for a writer
# for ever).
mkfifo "$TMP/pipe.db"
for sub in runs "show 1" "export 1 --jsonl"; do
  # shellcheck disable=SC2086
  check "db-pipe-${sub%% *}" 2 timeout 20 "$HONE" $sub --db "$TMP/pipe.db"
  expect_err "db-pipe-${sub%% *}" "not a regular file"
done
check db-pipe-tune 2 timeout 20 "$HONE" tune --app circuit --iterations 1 --db "$TMP/pipe.db"
expect_err db-pipe-tune "not a regular file"
printf 'Task calculate_new_curents GPU;\n' >"$TMP/typo.map"
check check-app-typo 1 "$HONE" check "$TMP/typo.map" --app circuit
expect_err check-app-typo "did you mean 'calculate_new_currents'?"
check simulate-noise-seeded 0 "$HONE" simulate "$SRC/examples/mappers/circuit.map" --app circuit --noise 0.1 --seed 3 --json
cp "$TMP/out" "$TMP/noise1"
check simulate-noise-again 0 "$HONE" simulate "$SRC/examples/mappers/circuit.map" --app circuit --noise 0.1 --seed 3 --json
if cmp -s "$TMP/out" "$TMP/noise1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL noise: same seed, different output"; fi

# tune, runs, show, export, resume (issue 5).
DB="$TMP/hone.db"
# The default best file goes beside its store (two stores never share one); --db may name a new folder.
check tune-default-out 0 "$HONE" tune --app circuit --iterations 2 --db "$TMP/stores/a.db" --json
expect_out tune-default-out "\"best_file\": \"$TMP/stores/a-best-circuit-run1.map\""
check tune-out-is-start 2 "$HONE" tune --app circuit --iterations 2 --db "$TMP/stores/b.db" --start "$TMP/stores/a-best-circuit-run1.map" --out "$TMP/stores/a-best-circuit-run1.map"
expect_err tune-out-is-start "is the --start file"
: > "$TMP/empty.map"
check tune-empty-start 2 "$HONE" tune --app circuit --iterations 2 --db "$TMP/stores/b.db" --start "$TMP/empty.map"
expect_err tune-empty-start "is empty"
check tune-out-unwritable 2 "$HONE" tune --app circuit --iterations 2 --db "$TMP/stores/c.db" --out "$TMP/empty.map/best.map"
expect_err tune-out-unwritable "--out: cannot create the folder"
test ! -e "$TMP/stores/c.db" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL tune-out-unwritable: a store was created"; }
check tune-out-device 2 "$HONE" tune --app circuit --iterations 2 --db "$TMP/stores/d.db" --out /dev/null
expect_err tune-out-device "exists and is neither a file nor a folder"
# A store in a folder named with spaces and $(...): a path, never a command; the best lands beside it.
Q="$TMP/my runs \$(touch $TMP/PWNED)"
check tune-hostile-db 0 "$HONE" tune --app circuit --iterations 2 --db "$Q/runs.db" --json
test -s "$Q/runs-best-circuit-run1.map" && test ! -e "$TMP/PWNED" && pass=$((pass + 1)) || {
  fail=$((fail + 1)); echo "FAIL tune-hostile-db"; }
check tune-guided 0 "$HONE" tune --app circuit --db "$DB" --out "$TMP/best.map" --json
expect_out tune-guided '"run_id": 1'
expect_out tune-guided '"evaluations": 10'
expect_out tune-guided '"best_file": "'
python3 - "$TMP/out" <<'PY' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL tune-guided-json"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["best_score"] >= 1.0 and d["failures"] >= 0 and d["agent"] == "guided", d
PY
check tune-best-checks 0 "$HONE" check "$TMP/best.map" --app circuit
check tune-table 0 "$HONE" tune --app stencil --agent random --iterations 5 --seed 2 --db "$DB" --out "$TMP/r.map"
expect_out tune-table "step  status"
expect_out tune-table "run 2 in"
check tune-jobs 0 "$HONE" tune --app cannon --agent ensemble --iterations 40 --jobs 3 --db "$DB" --out "$TMP/j.map" --json
expect_out tune-jobs '"evaluations": 40'
check runs-json 0 "$HONE" runs --db "$DB" --json
expect_out runs-json '"id": 3'
expect_out runs-json '"agent": "random"'
check runs-table 0 "$HONE" runs --db "$DB"
expect_out runs-table "circuit"
check show-trajectory 0 "$HONE" show 1 --db "$DB" --trajectory
expect_out show-trajectory "the starting point: the expert mapper"
expect_out show-trajectory "1.000x" # one score format, as tune prints it
check show-step-parent 0 "$HONE" show 1 --db "$DB" --step 1
expect_out show-step-parent "derived from: step 0 ("
check show-best 0 "$HONE" show 1 --db "$DB" --best
expect_out show-best "hone guided edits"
check show-json 0 "$HONE" show 1 --db "$DB" --json
expect_out show-json '"best_so_far"'
check show-missing 2 "$HONE" show 99 --db "$DB"
expect_err show-missing "no run 99"
# Text hone did not write (a model's rationale, a log's first line) reaches the terminal escaped:
# no ESC ]0; (window title) or ESC [2J (clear screen) gets through.
python3 - "$DB" "$TMP/esc.db" <<'PY'
import sqlite3, sys
src, dst = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.execute("UPDATE candidates SET rationale = 'evil' || char(27) || ']0;title' || char(7) || char(27) || '[2J'")
dst.commit()
PY
no_escape() { # name, file: the file holds no ESC byte
  if grep -q $'\x1b' "$2"; then fail=$((fail + 1)); echo "FAIL $1: an escape sequence reached the terminal"; else pass=$((pass + 1)); fi
}
check show-escapes 0 "$HONE" show 1 --db "$TMP/esc.db" --trajectory
expect_out show-escapes 'evil\e]0;title\x07\e[2J'
no_escape show-escapes "$TMP/out"
check show-step-escapes 0 "$HONE" show 1 --db "$TMP/esc.db" --step 1
expect_out show-step-escapes 'rationale: evil\e]0;title'
no_escape show-step-escapes "$TMP/out"
check show-summary-escapes 0 "$HONE" show 1 --db "$TMP/esc.db"
no_escape show-summary-escapes "$TMP/out"
printf '\033]0;pwned\007\033[2J not a log\n' >"$TMP/esc.log"
check legion-prof-escapes 1 "$HONE" legion-prof "$TMP/esc.log"
no_escape legion-prof-escapes "$TMP/err"
check export 0 "$HONE" export 1 --db "$DB" --jsonl
[ "$(wc -l <"$TMP/out")" -eq 10 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL export: not 10 lines"; }
expect_out export '"change":"--- '
expect_out export '"diagnostics":{"execution"'
check no-store 2 "$HONE" runs --db "$TMP/none.db"
check tune-bad-agent 2 "$HONE" tune --app circuit --agent magic --db "$DB"
expect_err tune-bad-agent "not one of guided, ensemble, random"
check tune-bad-feedback 2 "$HONE" tune --app circuit --feedback all --db "$DB"
check tune-bad-start 2 "$HONE" tune --app circuit --start "$TMP/nope.map" --db "$DB"
printf 'Task * GPUU;\n' >"$TMP/badstart.map"
check tune-start-does-not-check 1 "$HONE" tune --app circuit --start "$TMP/badstart.map" --db "$DB"
expect_err tune-start-does-not-check "badstart.map:1:8: error: unknown processor kind 'GPUU'"
printf 'Task * GPU,CPU;\nLayout * * * SOA F_order;\n' >"$TMP/fstart.map"
check tune-repairs-start 0 "$HONE" tune --app cannon --start "$TMP/fstart.map" --iterations 3 --db "$DB" --json --out "$TMP/c.map"
expect_out tune-repairs-start '"failures": 1'

# Killed with SIGKILL in the middle of a run, resumed: ends exactly at its budget, nothing repeated.
"$HONE" tune --app pennant --agent random --iterations 400 --db "$TMP/kill.db" --out "$TMP/k.map" >/dev/null 2>&1 &
victim=$!
for _ in $(seq 1 100); do
  n=$(python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('select count(*) from evaluations').fetchone()[0])" "$TMP/kill.db" 2>/dev/null || echo 0)
  [ "${n:-0}" -ge 20 ] && break
  sleep 0.05
done
kill -9 $victim 2>/dev/null; wait $victim 2>/dev/null
check resume 0 "$HONE" resume 1 --db "$TMP/kill.db" --json --out "$TMP/k.map"
expect_out resume '"evaluations": 400'
python3 - "$TMP/kill.db" <<'PY' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL resume: lost or repeated evaluations"; }
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n = c.execute("select count(*) from evaluations").fetchone()[0]
d = c.execute("select count(distinct candidate_id) from evaluations").fetchone()[0]
assert n == 400 and d == 400, (n, d)
PY
check resume-missing 2 "$HONE" resume 7 --db "$TMP/kill.db"

# The command evaluator: a fake application reading the mapper it is given.
cat >"$TMP/app.sh" <<'SH'
#!/bin/sh
# faster when the shared regions are in framebuffer memory
n=$(grep -c 'FBMEM' "$1")
echo "elapsed time: $(python3 -c "print(10.0 / (1 + $n))") s"
SH
chmod +x "$TMP/app.sh"
check tune-command 0 "$HONE" tune --app circuit --evaluator command --run "$TMP/app.sh {policy}" --metric 'elapsed time: ([0-9.]+)' --iterations 4 --db "$DB" --json --out "$TMP/cmd.map" --workdir "$TMP/work"
expect_out tune-command '"evaluations": 4'
check tune-command-no-metric 2 "$HONE" tune --app circuit --evaluator command --run true --db "$DB"
expect_err tune-command-no-metric "metric regex"
# Found before the first candidate: a metric without a group, a reference that fails.
check tune-command-no-group 2 "$HONE" tune --app circuit --evaluator command --run "$TMP/app.sh {policy}" --metric 'elapsed time: [0-9.]+' --db "$DB"
expect_err tune-command-no-group "has no capture group"
check tune-command-failing-reference 2 "$HONE" tune --app circuit --evaluator command --run "false" --metric 'time: ([0-9.]+)' --iterations 5 --db "$TMP/failref.db" --workdir "$TMP/work"
expect_err tune-command-failing-reference "so no candidate can be compared with it"
# Options that do nothing here are said to do nothing; progress appears off a terminal, a line per evaluation.
check tune-ignored-options 0 "$HONE" tune --app stencil --agent random --start "$SRC/examples/mappers/stencil.map" --build "make" --iterations 2 --db "$TMP/ign.db"
expect_err tune-ignored-options "--start has no effect with --agent random"
expect_err tune-ignored-options "--build has no effect without --evaluator command"
expect_err tune-ignored-options "hone: [2/2] best"

# Ctrl-C in the middle of a real run: the command in flight (and its children) is killed, the run is
# kept as "interrupted" with its best so far, the exit code says so, and resume finishes the budget.
cat >"$TMP/slow.sh" <<'SH'
#!/bin/sh
# the reference (the first run) is quick; every later run leaves a child sleeping, and takes a while
if [ ! -e "$2/reference-ran" ]; then : > "$2/reference-ran"; echo "elapsed time: 5 s"; exit 0; fi
sleep 300 &
echo $! >> "$2/children"
sleep 2
echo "elapsed time: 4 s"
SH
chmod +x "$TMP/slow.sh"
"$HONE" tune --app circuit --evaluator command --run "$TMP/slow.sh {policy} $TMP" --metric 'elapsed time: ([0-9.]+)' \
  --iterations 4 --db "$TMP/int.db" --out "$TMP/int.map" --workdir "$TMP/intwork" \
  >"$TMP/int.out" 2>"$TMP/int.err" &
victim=$!
for _ in $(seq 1 200); do [ -s "$TMP/children" ] && [ "$(wc -l <"$TMP/children")" -ge 2 ] && break; sleep 0.1; done
# A second process may not run the same run meanwhile.
check resume-while-running 2 "$HONE" resume 1 --db "$TMP/int.db"
expect_err resume-while-running "run 1 is being run by process $victim"
kill -INT $victim
wait $victim
rc=$?
[ "$rc" -eq 130 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL interrupt: exit $rc, wanted 130"; cat "$TMP/int.err"; }
grep -q "interrupted by SIGINT; run 1 is kept: hone resume 1" "$TMP/int.err" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL interrupt: no resume hint"; cat "$TMP/int.err"; }
alive=0
for child in $(cat "$TMP/children"); do # a zombie waiting for a parent that reaps is not running
  state=$(ps -o stat= -p "$child" 2>/dev/null | tr -d ' ')
  [ -n "$state" ] && [ "${state#Z}" = "$state" ] && alive=$((alive + 1))
done
[ "$alive" -eq 0 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL interrupt: $alive children still running"; }
test -s "$TMP/int.map" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL interrupt: no best file"; }
check interrupt-runs 0 "$HONE" runs --db "$TMP/int.db" --json
expect_out interrupt-runs '"status": "interrupted"'
check interrupt-resume 0 "$HONE" resume 1 --db "$TMP/int.db" --json --out "$TMP/int.map"
expect_out interrupt-resume '"evaluations": 4'
expect_out interrupt-resume '"stop_reason": "budget of 4 evaluations used"'
for child in $(cat "$TMP/children"); do kill "$child" 2>/dev/null; done

# space and simulate --assign, for external tuners.
check space-json 0 "$HONE" space --app cannon --json
expect_out space-json '"name": "task_4.layout"'
expect_out space-json '"allowed"'
check space-table 0 "$HONE" space --app circuit
expect_out space-table "calculate_new_currents.processor"
printf '{"stencil.processor": "GPU,CPU", "stencil.layout": "SOA F_order"}' >"$TMP/a.json"
check simulate-assign 0 "$HONE" simulate --app stencil --assign "$TMP/a.json" --json
expect_out simulate-assign '"score"'
expect_out simulate-assign '"mapper": "# A mapper for stencil'
printf '{"stencil.procesor": "GPU,CPU"}' >"$TMP/bad.json"
check simulate-assign-bad 1 "$HONE" simulate --app stencil --assign "$TMP/bad.json"
expect_err simulate-assign-bad "did you mean 'stencil.processor'?"
printf '{"stencil.processor": ' >"$TMP/trunc.json"
check simulate-assign-truncated 1 "$HONE" simulate --app stencil --assign "$TMP/trunc.json"
expect_err simulate-assign-truncated "not JSON"
check simulate-nothing 2 "$HONE" simulate --app stencil

# The surrogate: a "real" machine whose numbers differ from the model's (faster zero-copy memory,
# slower NVLink), evaluated by `hone simulate` on it; at the same number of real evaluations, the
# guided agent searching the model first finds a better mapper than the guided agent alone.
sed -e 's/^  bandwidth_gbs = 12.0  .*PCIe.*/  bandwidth_gbs = 30.0/' -e 's/^bandwidth_gbs = 20.0 .*NVLink.*/bandwidth_gbs = 10.0/' \
  "$SRC/models/machines/p100x4.toml" >"$TMP/real.toml"
check surrogate-machine-differs 1 cmp -s "$SRC/models/machines/p100x4.toml" "$TMP/real.toml"
REAL=(--evaluator command --run "$HONE simulate {policy} --app cannon --machine $TMP/real.toml --json"
  --metric '"time_s": ([0-9.eE+-]+)' --workdir "$TMP/sur-work" --iterations 6 --agent guided)
best_of() { python3 -c 'import json,sys; print(json.load(sys.stdin)["best_score"])' <"$TMP/out"; }
check surrogate-without 0 "$HONE" tune --app cannon "${REAL[@]}" --db "$TMP/sur1.db" --out "$TMP/s1.map" --json
plain=$(best_of)
check surrogate-with 0 "$HONE" tune --app cannon "${REAL[@]}" --surrogate model --db "$TMP/sur2.db" --out "$TMP/s2.map" --json
model=$(best_of)
check surrogate-beats-plain 0 python3 -c "import sys; sys.exit(0 if $model > $plain * 1.05 else 1)"
check surrogate-records-predictions 0 bash -c "'$HONE' show 1 --step 1 --db '$TMP/sur2.db' --json | python3 -c '
import json, sys
n = json.load(sys.stdin)[\"agent_notes\"][\"surrogate\"]
sys.exit(0 if n[\"predicted\"] > 0 and n[\"simulations\"] > 0 else 1)'"
check surrogate-on-the-model 2 "$HONE" tune --app cannon --surrogate model --db "$TMP/sur3.db"
expect_err surrogate-on-the-model "needs a real evaluator"
check surrogate-with-llm 2 "$HONE" tune --app cannon "${REAL[@]/guided/llm}" --surrogate model --llm-url http://127.0.0.1:9/v1 --llm-model m \
  --db "$TMP/sur4.db"
expect_err surrogate-with-llm "not llm"

echo "e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
