#!/usr/bin/env bash
# Evaluations through a real Slurm (docs/SLURM.md): a single-node cluster started here
# (tests/slurm/cluster.sh: munged, slurmctld and slurmd on loopback), then hone tune --executor slurm
# with the mapping domain's command evaluator and with a kernel project: runs that complete, a job
# that fails, one that times out, Ctrl-C (no job left behind), kill -9 of hone and resume (jobs
# adopted, none submitted twice, no step lost or repeated), and a drained node.
# Skipped (exit 77) where slurm-wlm and munge are missing: scripts/install-deps.sh installs them.
# hone sweep as one array job, killed and started again, is gathered once.
# Usage: slurm_test.sh HONE SRC [PART]   PART: mapping, kernel, sweep (default: all)
HONE=$(realpath "$1") SRC=$2 PART=${3:-all}
source "$(dirname "$0")/lib.sh"

"$SRC/tests/slurm/cluster.sh" check || exit $?
export PATH="$PATH:/usr/sbin:/sbin"
CLUSTER="$TMP/cluster"
eval "$("$SRC/tests/slurm/cluster.sh" start "$CLUSTER")" || { echo "FAIL: the test cluster did not start"; exit 1; }
trap '"$SRC/tests/slurm/cluster.sh" stop "$CLUSTER" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
NODE=$(hostname -s)

queue_empty() { # waits up to 20 s for the queue to empty
  for _ in $(seq 100); do
    [ -z "$(squeue -h -o %i)" ] && return 0
    sleep 0.2
  done
  squeue
  return 1
}
steps_ok() { # db budget: the run's evaluations are sequences 0..budget-1, each candidate once
  python3 - "$1" "$2" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n, distinct = db.execute("SELECT count(*), count(DISTINCT candidate_id) FROM evaluations WHERE run_id = 1").fetchone()
seqs = [r[0] for r in db.execute("SELECT sequence FROM evaluations WHERE run_id = 1 ORDER BY sequence")]
want = int(sys.argv[2])
assert n == distinct == want and seqs == list(range(want)), (n, distinct, seqs)
PY
}
submitted_once() { # job folder: every job folder holds one job id and no earlier one (jobid.N)
  local folders ids again
  folders=$(find "$1" -mindepth 2 -maxdepth 2 -type d ! -name candidates | wc -l)
  ids=$(find "$1" -mindepth 3 -maxdepth 3 -name jobid | wc -l)
  again=$(find "$1" -mindepth 3 -maxdepth 3 -name 'jobid.*' | wc -l)
  [ "$folders" -gt 0 ] && [ "$folders" -eq "$ids" ] && [ "$again" -eq 0 ]
}
count() { if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $*"; fi; }
# A store's run 1 has started its (sequence) evaluation.
evaluations() {
  python3 -c "import sqlite3,sys
try: print(sqlite3.connect(sys.argv[1]).execute('select count(*) from evaluations').fetchone()[0])
except Exception: print(0)" "$1" 2>/dev/null || echo 0
}
wait_for() { # db n: until the store has n evaluations and a job runs (at most 60 s)
  for _ in $(seq 300); do
    [ "$(evaluations "$1")" -ge "$2" ] && squeue -h -t R -o %i | grep -q . && return 0
    sleep 0.2
  done
  return 1
}

if part mapping; then
# The model stands in for a real application: each run is `hone simulate` of the candidate.
APP="$TMP/app.sh"
cat > "$APP" <<SH
#!/bin/sh
sleep "\${HONE_TEST_SLEEP:-0}"
exec "$HONE" simulate --app circuit "\$1"
SH
chmod +x "$APP"
CMD=(tune --app circuit --agent guided --evaluator command --metric 'elapsed: ([0-9.]+) ms' --slurm-poll 0.3
  --executor slurm)

check slurm-tune 0 "$HONE" "${CMD[@]}" --run "$APP {policy}" --iterations 4 --db "$TMP/m.db" --json
expect_out slurm-tune '"evaluations": 4'
expect_out slurm-tune '4 jobs submitted, 0 found'
count steps_ok "$TMP/m.db" 4
count submitted_once "$TMP/m-jobs"
count queue_empty
# Each step's job ran the command in the candidate's folder, on the shared job folder.
count test -n "$(find "$TMP/m-jobs" -path '*candidates/*/mapper.map' | head -1)"

# A command that fails and one that outlives --timeout: the run says what happened, located in the job.
check slurm-fail 2 "$HONE" "${CMD[@]}" --run "echo broken mapper >&2; exit 3" --iterations 2 --db "$TMP/f.db"
expect_err slurm-fail "exit 3: broken mapper"
check slurm-timeout 2 "$HONE" "${CMD[@]}" --run "sleep 30" --timeout 2 --iterations 2 --db "$TMP/t.db"
expect_err slurm-timeout "timed out"
count queue_empty
# A command that finds its job's folder through its own output and writes a status claiming a
# millisecond, then runs on: hone reads no status while the job runs, and the script's own status
# (written last) is what counts; one that also ends the job's script keeps its forgery, which the
# time Slurm showed the job running contradicts.
FORGE="$TMP/forge.sh"
cat > "$FORGE" <<'SH'
#!/bin/sh
d=$(dirname "$(readlink /proc/$$/fd/1)")
printf '0 1000.000 1000.001\n' > "$d/status"
sleep 5
if [ "$1" = kill ]; then # ends the job's script: nothing writes the status after it
  p=$PPID
  while [ "$p" -gt 1 ]; do
    case "$(tr '\0' ' ' < "/proc/$p/cmdline")" in *job.sh*|*slurm_script*) kill -9 "$p"; exit 0 ;; esac
    p=$(ps -o ppid= -p "$p" | tr -d ' ')
  done
fi
echo 'elapsed: 7 ms'
SH
chmod +x "$FORGE"
check slurm-forged 0 "$HONE" "${CMD[@]}" --run "$FORGE" --iterations 1 --db "$TMP/g.db" --json
expect_out slurm-forged '"evaluations": 1'
expect_out slurm-forged '"failures": 0'
check slurm-forged-kill 2 "$HONE" "${CMD[@]}" --run "$FORGE kill" --iterations 1 --db "$TMP/h.db"
expect_err slurm-forged-kill "is not trusted"
count queue_empty

# A drained node: the job waits with Slurm's reason, and --slurm-pending-timeout gives up on it.
scontrol update nodename="$NODE" state=drain reason=hone-test
check slurm-drained 2 "$HONE" "${CMD[@]}" --run "$APP {policy}" --iterations 2 --db "$TMP/d.db" \
  --slurm-pending-timeout 3
expect_err slurm-drained "still pending after 3 s"
expect_err slurm-drained "DRAINED"
count queue_empty
scontrol update nodename="$NODE" state=resume

# Ctrl-C while jobs run: hone cancels them, keeps the run interrupted, and no job is left behind.
HONE_TEST_SLEEP=30 "$HONE" "${CMD[@]}" --run "$APP {policy}" --iterations 4 --db "$TMP/i.db" >/dev/null 2>"$TMP/i.err" &
victim=$!
count wait_for "$TMP/i.db" 0
kill -INT $victim
wait $victim
rc=$?
count test "$rc" -eq 130
count grep -q "interrupted" "$TMP/i.err"
count queue_empty

# kill -9 while jobs run, then resume: the jobs in flight are adopted (their results read), none is
# submitted twice, and the run ends with every step once.
HONE_TEST_SLEEP=2 "$HONE" "${CMD[@]}" --run "$APP {policy}" --iterations 5 --jobs 2 --db "$TMP/k.db" \
  >/dev/null 2>&1 &
victim=$!
count wait_for "$TMP/k.db" 2
kill -9 $victim
wait $victim 2>/dev/null
count test -n "$(squeue -h -o %i)" # the killed hone's jobs run on
HONE_TEST_SLEEP=2 check slurm-resume 0 "$HONE" resume 1 --db "$TMP/k.db" --json
expect_out slurm-resume '"evaluations": 5'
count grep -qE '"executor": ".* [1-9][0-9]* found from an earlier process' "$TMP/out"
count steps_ok "$TMP/k.db" 5
count submitted_once "$TMP/k-jobs"
count queue_empty
fi

if part kernel; then
# A kernel project tuned through Slurm: the reference's build and runs and every candidate's are jobs.
P="$TMP/dot"
cp -r "$SRC/examples/kernels/dot" "$P"
cp "$SRC/examples/kernels/common.h" "$TMP/"
sed -i 's/max_repeats = 10/max_repeats = 3/' "$P/hone.toml"
KCMD=(tune --kernel "$P" --agent random --no-profile --executor slurm --slurm-poll 0.3)
check slurm-kernel 0 "$HONE" "${KCMD[@]}" --iterations 3 --db "$TMP/kt.db" --json --out "$TMP/kbest"
expect_out slurm-kernel '"evaluations": 3'
count steps_ok "$TMP/kt.db" 3
count submitted_once "$TMP/kt-jobs"
count test -f "$TMP/kbest/build.sh"
count queue_empty

# kill -9 in the middle of the kernel run, then resume.
"$HONE" "${KCMD[@]}" --iterations 4 --seed 3 --db "$TMP/kk.db" >/dev/null 2>&1 &
victim=$!
count wait_for "$TMP/kk.db" 1
kill -9 $victim
wait $victim 2>/dev/null
check slurm-kernel-resume 0 "$HONE" resume 1 --db "$TMP/kk.db" --json
expect_out slurm-kernel-resume '"evaluations": 4'
count grep -qE '"executor": ".* [1-9][0-9]* found from an earlier process' "$TMP/out"
count steps_ok "$TMP/kk.db" 4
count submitted_once "$TMP/kk-jobs"
count queue_empty
fi

if part sweep; then
# apps x agents x seeds as one array job, gathered into one store; killed and started again, the same
# command adopts the array (no task submitted twice) and gathers each run once.
SW=(sweep --apps circuit,stencil --agents guided,random --seeds 1 --iterations 3 --jobs 2 --executor slurm
  --slurm-poll 0.3 --db "$TMP/sweep.db")
TAIL=(-- --time-limit 60) # more tune options for every run
"$HONE" "${SW[@]}" "${TAIL[@]}" >/dev/null 2>&1 &
victim=$!
for _ in $(seq 100); do squeue -h -o %i | grep -q . && break; sleep 0.1; done
kill -9 $victim
wait $victim 2>/dev/null
check slurm-sweep 0 "$HONE" "${SW[@]}" --json "${TAIL[@]}"
python3 - "$TMP/out" "$TMP/sweep.db" <<'PY' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL slurm-sweep: runs"; }
import json, sqlite3, sys
j = json.load(open(sys.argv[1]))
tasks = j["tasks"]
assert len(tasks) == 4 and all(len(t["runs"]) == 1 and "error" not in t for t in tasks), tasks
db = sqlite3.connect(sys.argv[2])
runs = db.execute("SELECT app, agent, seed, status FROM runs ORDER BY id").fetchall()
assert sorted(runs) == sorted((a, g, 1, "finished") for a in ("circuit", "stencil") for g in ("guided", "random")), runs
PY
count test "$(find "$TMP"/sweep-sweep-*/jobs -name 'jobid*' | wc -l)" -eq 1
check slurm-sweep-again 0 "$HONE" "${SW[@]}" "${TAIL[@]}"
count test "$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from runs').fetchone()[0])" "$TMP/sweep.db")" -eq 4
count queue_empty
fi

echo "slurm e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
