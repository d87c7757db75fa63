#!/usr/bin/env bash
# End-to-end test of bench/suite.sh on a tiny suite this test writes in PolyBench/C's layout (its
# own code, not PolyBench's): utilities/polybench.{h,c} (the dump to stderr behind
# POLYBENCH_DUMP_ARRAYS, the kernel timer behind POLYBENCH_TIME, printed as a bare number),
# two kernels, each NAME/NAME.{c,h} with dataset-size macros and a two-decimal dump, main ignoring
# its arguments. Checks `hone kernel init` on them (include folder, companion source, stderr, no
# seed, dataset, split builds, weak validation), `hone kernel check`, and the suite's table.
# Usage: suite_test.sh HONE_BINARY SOURCE_DIR
set -uo pipefail
HONE=$1
SRC=$2
source "$(dirname "$0")/lib.sh"

S="$TMP/tinybench"
mkdir -p "$S/utilities" "$S/linear/scale2" "$S/stencil/smooth"
cat > "$S/utilities/polybench.h" <<'C'
#ifndef TINY_POLYBENCH_H
#define TINY_POLYBENCH_H
#include <stdio.h>
#define POLYBENCH_DUMP_TARGET stderr
#ifdef POLYBENCH_DUMP_ARRAYS
# define TINY_DUMPS 1
#else
# define TINY_DUMPS 0
#endif
#if defined(POLYBENCH_TIME)
# define polybench_start_instruments polybench_timer_start();
# define polybench_print_instruments polybench_timer_print();
#else
# define polybench_start_instruments
# define polybench_print_instruments
#endif
void polybench_timer_start(void);
void polybench_timer_print(void);
#endif
C
cat > "$S/utilities/polybench.c" <<'C'
#include <time.h>
#include "polybench.h"
static double start_s;
static double now_s(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
void polybench_timer_start(void) { start_s = now_s(); }
void polybench_timer_print(void) { printf("%0.6f\n", now_s() - start_s); }
C
for k in scale2 smooth; do
  up=$(echo "$k" | tr a-z A-Z)
  dir=$S/linear/scale2
  [ "$k" = smooth ] && dir=$S/stencil/smooth
  cat > "$dir/$k.h" <<C
#ifndef ${up}_H
#define ${up}_H
# if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(MEDIUM_DATASET)
#  define MEDIUM_DATASET
# endif
# ifdef MINI_DATASET
#  define N 2000
# endif
# ifdef SMALL_DATASET
#  define N 20000
# endif
# ifdef MEDIUM_DATASET
#  define N 200000
# endif
# define DATA_PRINTF_MODIFIER "%0.2lf "
#endif
C
done
cat > "$S/linear/scale2/scale2.c" <<'C'
#include <stdio.h>
#include <polybench.h>
#include "scale2.h"
static double a[N], b[N];
static void kernel_scale2(int n) {
  for (int r = 0; r < 200; ++r)
    for (int i = 0; i < n; ++i) b[i] = 2.0 * a[i] + 0.5 * b[i];
}
int main(int argc, char **argv) {
  for (int i = 0; i < N; ++i) { a[i] = (double)(i % 17) / 7; b[i] = 0; }
  polybench_start_instruments;
  kernel_scale2(N);
  polybench_print_instruments;
  if (TINY_DUMPS)
    for (int i = 0; i < N; ++i) fprintf(POLYBENCH_DUMP_TARGET, DATA_PRINTF_MODIFIER, b[i]);
  return 0;
}
C
cat > "$S/stencil/smooth/smooth.c" <<'C'
#include <stdio.h>
#include <polybench.h>
#include "smooth.h"
static double a[N], b[N];
static void kernel_smooth(int n) {
  for (int t = 0; t < 100; ++t) {
    for (int i = 1; i < n - 1; ++i) b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3;
    for (int i = 1; i < n - 1; ++i) a[i] = b[i];
  }
}
int main(int argc, char **argv) {
  for (int i = 0; i < N; ++i) a[i] = b[i] = (double)(i % 29);
  polybench_start_instruments;
  kernel_smooth(N);
  polybench_print_instruments;
  if (TINY_DUMPS)
    for (int i = 0; i < N; ++i) fprintf(POLYBENCH_DUMP_TARGET, DATA_PRINTF_MODIFIER, a[i]);
  return 0;
}
C

# init on its own, in a copy: what it found and wrote.
cp -r "$S" "$TMP/copy"
check init 0 "$HONE" kernel init "$TMP/copy/linear/scale2/scale2.c" --define SMALL_DATASET
expect_out init "found: polybench.h -> ../../utilities/polybench.h"
expect_out init "source: ../../utilities/polybench.c"
expect_out init "outputs: read from stderr"
expect_out init "weak validation"
expect_out init "fixed inputs"
M="$TMP/copy/linear/scale2/hone.toml"
for line in 'includes = ["../../utilities"]' 'sources = ["scale2.c", "../../utilities/polybench.c"]' \
            'source = "stderr"' 'command = "{exe}"' 'validate_defines = ["POLYBENCH_DUMP_ARRAYS"]' \
            'time_defines = ["POLYBENCH_TIME"]' 'defines = ["SMALL_DATASET"]' 'mode = "region"'; do
  if grep -qF -- "$line" "$M"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL manifest lacks: $line"; fi
done
check check 0 "$HONE" kernel check "$TMP/copy/linear/scale2"
expect_out check "timed build: ok"
expect_out check "timed: the time the program reports (regex"
expect_out check "WARNING: weak validation"
expect_out check "inputs are fixed"
# -O3 -march=native must not be rejected for a last printed digit FMA moves.
check measure-o3 0 "$HONE" kernel measure "$TMP/copy/linear/scale2" --knob "flags=-O3 -march=native" --rounds 1
expect_out measure-o3 "timed: the time the program reports"

# The suite, end to end: two agents, two iterations each.
check suite 0 bash "$SRC/bench/suite.sh" "$S" --agent guided --agent random --iterations 2 --size MINI \
  --rounds 1 --out "$TMP/suite-out" --hone "$HONE" --no-profile
T="$TMP/suite-out/suite-results.md"
for col in "agent" "programs set up without hand edits" "variants evaluated" "accepted variants correct" \
           "programs improved > 5% (re-measured)" "geomean speedup over the original" \
           "geomean speedup over -O3 -march=native" "wall time"; do
  if head -1 "$T" | grep -qF -- "| $col |"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL table lacks column: $col"; cat "$T"; fi
done
# One row per agent; both programs set up; each run evaluated its 2 iterations; improved is out of 2.
python3 - "$TMP/suite-out/suite-results.json" <<'PY' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL suite counts"; cat "$T"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["suite"] == "polybench", d["suite"]
assert [p["status"] for p in d["programs"]] == ["ok", "ok"], d["programs"]
assert sorted(d["agents"]) == ["guided", "random"], d["agents"].keys()
for agent, a in d["agents"].items():
    row = a["row"]
    assert row["agent"] == f"{agent}@2", row
    assert row["set_up"] == "2/2", row
    assert row["evaluated"] == 4, row          # 2 programs x 2 evaluations
    assert row["improved"].endswith("/2"), row
    assert len(a["runs"]) == 2, a["runs"]
    for r in a["runs"]:
        assert r["correct"] == r["accepted"], r  # every accepted variant validates again
        assert r["o3_speedup"] > 0, r            # the compiler-only baseline was measured
# The first agent against the other, paired: every program counted, from the same rounds.
pr = d["paired"]["random"]
assert pr["programs"] == 2 and pr["not_compared"] == 0 and 0 <= pr["at_least"] <= pr["not_slower"] <= 2, pr
# One round: each ratio is the two bests' speedups over the same reference sample, divided the other
# way round (random's time over guided's).
speed = {(a, r["program"]): r["best_speedup"] for a in d["agents"] for r in d["agents"][a]["runs"]}
for row in pr["rows"]:
    expected = speed[("guided", row["program"])] / speed[("random", row["program"])]
    assert abs(row["ratio"] / expected - 1) < 1e-6, (row, expected)
    assert row["verdict"] == "one round: no interval", row
PY
if grep -qE '^\| guided@2 \| 2/2 \| 4 \|' "$T" && grep -qE '^\| random@2 \| 2/2 \| 4 \|' "$T"; then pass=$((pass + 1)); else
  fail=$((fail + 1)); echo "FAIL table rows"; cat "$T"; fi
# The user's suite is never written to.
if [ ! -e "$S/linear/scale2/hone.toml" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL the suite was written to"; fi
expect_out suite "guided@2 against random@2, paired"
expect_out suite "| program | random's time / guided's | 95% CI | verdict |"
# --only picks programs; --bests-only measures only the bests again (and says the correctness column
# was not); an unknown folder is an error.
check only 0 bash "$SRC/bench/suite.sh" "$S" --only smooth --agent guided --agent random --iterations 1 --size MINI \
  --rounds 2 --out "$TMP/only-out" --hone "$HONE" --no-profile --bests-only
expect_out only "| guided@1 | 1/1 | 1 | not re-measured (--bests-only) |"
if grep -qE '^\| smooth \| [0-9.]+x \| \+- [0-9.]+ \| (guided faster|random faster|within noise) \|$' "$TMP/out"; then
  pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL only: no paired row"; cat "$TMP/out"; fi
# --report-only makes the tables again from what the run left, running nothing.
rm -rf "$TMP/suite-out/suite/linear"
check report 0 bash "$SRC/bench/suite.sh" "$S" --report-only --iterations 2 --out "$TMP/suite-out" --hone "$HONE"
expect_out report "| guided@2 | 2/2 | 4 |"
expect_out report "guided@2 against random@2, paired"
check noreport 2 bash "$SRC/bench/suite.sh" "$S" --report-only --out "$TMP/nothing-here" --hone "$HONE"
expect_err noreport "holds no earlier run"
check nosuite 2 bash "$SRC/bench/suite.sh" "$TMP/nowhere" --hone "$HONE"
expect_err nosuite "no such folder"

echo "e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
