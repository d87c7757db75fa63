#!/usr/bin/env bash
# End-to-end tests of the kernel domain on a program hone has never seen,
# written here: init, check, measure, profile, tune (guided, ensemble,
# random), runs/show/export on kernel runs, kill -9 and resume, located
# manifest errors. The program's UNROLL knob has a remainder bug for values
# that do not divide its length: validation must reject them, always.
# Usage: kernel_test.sh HONE_BINARY SOURCE_DIR [all|tools|tune]
set -uo pipefail
HONE=$1
SRC=$2
PART=${3:-all}
source "$(dirname "$0")/lib.sh"

P="$TMP/scale"
mkdir -p "$P"
cat > "$P/scale.c" <<'C'
/* y = sum over blocks of a[i] * w, for a seeded a; unrolled by UNROLL without a remainder loop. */
#include <stdio.h>
#include <stdlib.h>
#ifndef LEN
#define LEN 2000000
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef STRIDE_FIRST
#define STRIDE_FIRST 0
#endif
int main(int argc, char **argv) {
  unsigned long seed = argc > 1 ? strtoul(argv[1], 0, 10) : 1;
  double *a = malloc(sizeof(double) * LEN);
  for (long i = 0; i < LEN; ++i) a[i] = (double)((i * 31 + seed * 17) % 101) / 7.0;
  double s[4] = {0, 0, 0, 0};
  for (int r = 0; r < 4; ++r)
    for (long i = 0; i + UNROLL <= LEN; i += UNROLL)
      for (int u = 0; u < UNROLL; ++u) s[r] += a[i + u] * (r + 1);
  for (int r = 0; r < 4; ++r) printf("%.12e\n", s[r]);
  free(a);
  return 0;
}
C

# init writes a manifest that loads, with UNROLL as a knob and LEN as a size.
check init 0 "$HONE" kernel init "$P/scale.c"
expect_out init "wrote $P/hone.toml"
expect_out init "UNROLL"
check init-again 2 "$HONE" kernel init "$P/scale.c"
expect_err init-again "exists; --force replaces it"
grep -q '^name = "UNROLL"' "$P/hone.toml" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL init: no UNROLL knob"; }
grep -q 'LEN = 2000000 (line' "$P/hone.toml" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL init: LEN not listed as a size"; }
# Keep this test quick: fewer timing runs.
sed -i 's/^max_repeats = 15/max_repeats = 4/; s/^target_ci = 0.02/target_ci = 0.5/' "$P/hone.toml"
check init-bad-ext 2 "$HONE" kernel init "$TMP/x.py"

if part tools; then
# check: builds, runs each seed twice, times.
check kcheck 0 "$HONE" kernel check "$P"
expect_out kcheck "build: ok"
expect_out kcheck "seed 3: 4 outputs"
expect_out kcheck "ok: the project is ready"
check kcheck-json 0 "$HONE" kernel check "$P" --json
expect_out kcheck-json '"ok": true'

# measure: a correct variant, side by side with the reference; a broken one is refused.
check measure 0 "$HONE" kernel measure "$P" --knob UNROLL=4 --rounds 2
expect_out measure "validated on seeds"
expect_out measure "speedup"
check measure-wrong 1 "$HONE" kernel measure "$P" --knob UNROLL=3 --rounds 1
expect_err measure-wrong "wrong result on input"
check measure-bad-knob 2 "$HONE" kernel measure "$P" --knob UNROLLL=4
expect_err measure-bad-knob "did you mean 'UNROLL'"

# profile: the tools this machine has, findings, transformations; an Nsight Compute report read from a file.
check profile 0 "$HONE" kernel profile "$P" --json --ncu "$SRC/tests/kernel/fixtures/ncu-raw.csv"
python3 - "$TMP/out" <<'PY' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL profile: bad JSON"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert "ncu" in d["profile"]["tools"], d["profile"]["tools"]
kinds = {b["kind"] for b in d["diagnosis"]["bottlenecks"]}
assert {"bank-conflicts", "divergence"} <= kinds, kinds
assert all("transformations" in f for f in d["findings"] if f["rule"].startswith("kernel-")), d["findings"]
assert d["transformations"], "no transformation ranked"
PY
check profile-text 0 "$HONE" kernel profile "$P"
expect_out profile-text "profiled with"
expect_out profile-text "transformations, by the time they could save"

fi

if part tune; then
# tune: guided, then ensemble and random; a wrong variant is data, never the best.
check tune-guided 0 "$HONE" tune --kernel "$P" --iterations 8 --db "$TMP/k.db" --json --out "$TMP/best-guided"
python3 - "$TMP/out" <<'PY' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL tune-guided summary"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["domain"] == "kernel" and d["app"] == "scale", d
assert d["evaluations"] == 8, d
assert d["best_score"] > 0, d
assert "time_s" in d["best_metrics"], d
PY
test -x "$TMP/best-guided/build.sh" && grep -q 'UNROLL' "$TMP/best-guided/variant.toml" && pass=$((pass + 1)) || {
  fail=$((fail + 1)); echo "FAIL tune-guided: no best folder"; }
sh "$TMP/best-guided/build.sh" >/dev/null 2>&1 && test -x "$TMP/best-guided/prog" && pass=$((pass + 1)) || {
  fail=$((fail + 1)); echo "FAIL tune-guided: build.sh does not build"; }
for agent in ensemble random; do
  check "tune-$agent" 0 "$HONE" tune --kernel "$P" --agent $agent --iterations 12 --seed 2 --db "$TMP/k.db" --json \
    --out "$TMP/best-$agent" --no-profile
done
python3 - "$TMP/k.db" <<'PY' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: a wrong variant was best or none was rejected"; }
import sqlite3, sys, re
db = sqlite3.connect(sys.argv[1])
runs = db.execute("SELECT id, domain FROM runs").fetchall()
assert len(runs) == 3 and all(d == "kernel" for _, d in runs), runs
invalid = 0
for (run, _) in runs:
    rows = db.execute("SELECT c.artifact, e.status, e.score, e.error FROM evaluations e JOIN candidates c ON c.id = e.candidate_id WHERE e.run_id = ?", (run,)).fetchall()
    best = max((r for r in rows if r[1] == "ok"), key=lambda r: r[2])
    unroll = int(re.search(r'UNROLL = ["\'](\d+)', best[0]).group(1))
    assert 2000000 % unroll == 0, f"run {run}: best has UNROLL {unroll}"
    for artifact, status, score, error in rows:
        u = int(re.search(r'UNROLL = ["\'](\d+)', artifact).group(1))
        if 2000000 % u != 0:
            assert status == "invalid" and "wrong result" in error, (artifact, status, error)
            invalid += 1
assert invalid >= 1, "no run tried a breaking UNROLL value"
PY

# A start variant the manifest does not allow is refused before anything runs, located.
printf '[knobs]\nUNROLL = "5"\n' > "$TMP/start.toml"
check tune-bad-start 1 "$HONE" tune --kernel "$P" --start "$TMP/start.toml" --db "$TMP/s.db"
expect_err tune-bad-start "start.toml: error: knob UNROLL = '5' is not one of its values"
expect_err tune-bad-start "does not check; fix it first"

# The three runs' bests, measured side by side in one interleaved measurement; the same file twice is
# measured once; a variant that breaks the result is reported while the others are measured.
check measure-variants 0 "$HONE" kernel measure "$P" --variant "$TMP/best-guided/variant.toml" \
  --variant "$TMP/best-ensemble/variant.toml" --variant "$TMP/best-guided/variant.toml" --rounds 2 --json
python3 - "$TMP/out" "$TMP/best-guided/variant.toml" <<'PY' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL measure-variants"; }
import json, sys
d = json.load(open(sys.argv[1]))
v = d["variants"]
assert len(v) == 3 and [x["source"] for x in v][0] == sys.argv[2], d
assert all(x["speedup"]["median"] > 0 and len(x["samples"]) == 2 for x in v), v
assert v[0]["samples"] == v[2]["samples"], "the same variant twice was measured twice"
assert len(d["reference"]["samples"]) == 2 and "speedup" not in d, d
PY
printf '[knobs]\nUNROLL = "3"\n' > "$TMP/wrong.toml"
check measure-variants-wrong 1 "$HONE" kernel measure "$P" --variant "$TMP/wrong.toml" --variant "$TMP/best-guided/variant.toml" --rounds 1
expect_err measure-variants-wrong "wrong.toml is invalid: wrong result on input"
expect_out measure-variants-wrong "best-guided/variant.toml"
expect_out measure-variants-wrong "speedup"
check measure-variants-missing 2 "$HONE" kernel measure "$P" --variant "$TMP/no-such.toml"
expect_err measure-variants-missing "no-such.toml"

# runs / show / export know kernel runs.
check runs 0 "$HONE" runs --db "$TMP/k.db" --json
expect_out runs '"domain": "kernel"'
check show 0 "$HONE" show 1 --db "$TMP/k.db"
expect_out show "--best for the variant"
check show-trajectory 0 "$HONE" show 1 --db "$TMP/k.db" --trajectory
expect_out show-trajectory "UNROLL"
check show-best 0 "$HONE" show 1 --db "$TMP/k.db" --best
expect_out show-best "[knobs]"
check show-step 0 "$HONE" show 1 --db "$TMP/k.db" --step 1
expect_out show-step "--- variant"
check export 0 "$HONE" export 1 --db "$TMP/k.db" --jsonl
expect_out export '"variant":'

wait_evaluations() { # db n: until the store holds n evaluations (at most 40 s)
  local n
  for _ in $(seq 1 200); do
    n=$(python3 -c "import sqlite3,sys
try: print(sqlite3.connect(sys.argv[1]).execute('select count(*) from evaluations').fetchone()[0])
except Exception: print(0)" "$1" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge "$2" ] && return 0
    sleep 0.2
  done
}

# kill -9 in the middle of a kernel run, then resume: the budget is met, nothing is evaluated twice.
"$HONE" tune --kernel "$P" --agent random --iterations 14 --seed 5 --db "$TMP/kill.db" --no-profile >/dev/null 2>&1 &
victim=$!
wait_evaluations "$TMP/kill.db" 3
kill -9 $victim 2>/dev/null; wait $victim 2>/dev/null
check kernel-resume 0 "$HONE" resume 1 --db "$TMP/kill.db" --json --out "$TMP/best-resumed"
expect_out kernel-resume '"evaluations": 14'
python3 - "$TMP/kill.db" <<'PY' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL kernel-resume: lost or repeated evaluations"; }
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n, distinct = db.execute("SELECT count(*), count(DISTINCT candidate_id) FROM evaluations WHERE run_id = 1").fetchone()
seqs = [r[0] for r in db.execute("SELECT sequence FROM evaluations WHERE run_id = 1 ORDER BY sequence")]
assert n == distinct == 14 and seqs == list(range(14)), (n, distinct, seqs)
PY

# A run keeps its project's absolute path and what the project was: resumed from another folder it
# tunes the same project; after the program changed, the resume is refused (two programs' steps
# would be mixed in one run).
cd "$(dirname "$P")" || exit 1
"$HONE" tune --kernel "$(basename "$P")" --agent random --iterations 6 --seed 6 --db "$TMP/moved.db" --no-profile \
  >/dev/null 2>&1 &
victim=$!
cd - >/dev/null || exit 1
wait_evaluations "$TMP/moved.db" 2
kill -9 $victim 2>/dev/null; wait $victim 2>/dev/null
cp "$P/scale.c" "$TMP/scale.c.orig"
echo "/* edited */" >>"$P/scale.c"
check resume-changed 2 "$HONE" resume 1 --db "$TMP/moved.db"
expect_err resume-changed "is not what this run tuned: scale.c changed since the run started"
cp "$TMP/scale.c.orig" "$P/scale.c"
# A source that is a link to a device: hone's own hash of the project does not read it, and the
# compiler reading it stops at the builds' address-space bound, so the run ends saying why.
D="$TMP/devsrc"
cp -r "$P" "$D"
rm -rf "$D/.hone"
ln -s /dev/zero "$D/extra.c"
sed -i 's/^sources = \["scale.c"\]/sources = ["scale.c", "extra.c"]/' "$D/hone.toml"
grep -q "extra.c" "$D/hone.toml" || { fail=$((fail + 1)); echo "FAIL devsrc: the manifest was not edited"; }
check device-source 2 timeout 120 "$HONE" tune --kernel "$D" --iterations 1 --no-profile --db "$TMP/dev.db"
expect_err device-source "the unmodified project does not build"
check resume-elsewhere 0 bash -c "cd / && '$HONE' resume 1 --db '$TMP/moved.db' --json"
expect_out resume-elsewhere '"evaluations": 6'

fi

if part tools; then
# A manifest with mistakes: located, with did-you-mean; tune refuses before it starts.
B="$TMP/broken"
mkdir -p "$B"
cp "$P/scale.c" "$B/"
sed 's/^timeout_s = 120/timout_s = 120/' "$P/hone.toml" > "$B/hone.toml"
check manifest-typo 1 "$HONE" tune --kernel "$B" --db "$TMP/b.db"  # a file's content: input, exit 1
expect_err manifest-typo "hone.toml:"
expect_err manifest-typo "unknown key 'timout_s'; did you mean 'timeout_s'?"
test ! -e "$TMP/b.db" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: a refused run created a store"; }
check tune-no-subject 2 "$HONE" tune --db "$TMP/b.db"
expect_err tune-no-subject "--app APP"
check tune-both 2 "$HONE" tune --app circuit --kernel "$P"
check tune-kernel-llm 2 "$HONE" tune --kernel "$P" --agent llm --db "$TMP/b.db"
expect_err tune-kernel-llm "the LLM endpoint is not set"  # the code agent needs a model (tests/e2e/kernel_llm_test.sh)

# Hostile paths and files: a folder named with spaces and $(...) (substituted once and quoted, never
# run), a device where the manifest should be, TOML nested past the parser's limit, an inf output.
Q="$TMP/my proj \$(touch $TMP/PWNED)"
mkdir -p "$Q"
cp "$P/scale.c" "$P/hone.toml" "$Q/"
check hostile-path 0 "$HONE" kernel check "$Q"
test ! -e "$TMP/PWNED" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL hostile-path: a path was run as a command"; }
check device-manifest 2 "$HONE" kernel check /dev/null
expect_err device-manifest "not a regular file"
python3 -c "print('[project]\nsources=[\"a.c\"]\nx=' + '['*5000 + ']'*5000)" > "$TMP/deep.toml"
check deep-manifest 1 "$HONE" kernel check "$TMP/deep.toml"
expect_err deep-manifest "deep.toml:3:"
I="$TMP/inf"
mkdir -p "$I"
cat > "$I/inf.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#ifndef MODE
#define MODE 0
#endif
int main(int argc, char **argv) { double s = atof(argv[1]); printf("%g\n%g\n", s, MODE ? 1.0 / 0.0 : 2 * s); return 0; }
C
check inf-init 0 "$HONE" kernel init "$I/inf.c"
check inf-output 1 "$HONE" kernel measure "$I" --knob MODE=1 --rounds 1
expect_err inf-output "output 1 is inf, the reference's"

fi

echo "e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
