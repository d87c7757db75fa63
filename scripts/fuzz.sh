#!/usr/bin/env bash
# Fuzzes hone's parsers for N minutes each (default 5) with libFuzzer under
# ASan+UBSan. Targets: dsl (the mapper DSL front end); the kernel domain's
# manifest, variant, cachegrind, remarks, perf, mca, ptxas, ncu, and the code
# agent's diff and reply; rules (AutoGuide), prompt (templates), llmtext (an
# LLM's reply text), config (store rows), model (the TOML performance
# models, simulated), slurm (squeue/scontrol/sacct output, Slurm settings) and template (the filler
# of every command, job header and prompt, with fuzz/template.dict's placeholders and shell
# metacharacters); default: all. A target with a dictionary fuzz/TARGET.dict gets it.
# The targets are built in build-fuzz/ optimized (RelWithDebInfo) with ASan+UBSan
# and every library instrumented for coverage (HONE_FUZZ_COVERAGE), apart from
# the test build (-O0), which replays the corpora.
# New interesting inputs go to build-fuzz/fuzz-new/TARGET (merge the useful
# ones into the target's corpus); a crash, leak, timeout or out-of-memory leaves
# fuzz/TARGET-crash-* (-leak-, -timeout-, -oom-) to turn into a regression test.
# Ends with a table of runs and findings per target; exits 1 on any finding.
#   scripts/fuzz.sh [minutes] [jobs] [target ...]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-5}
jobs=${2:-1}
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(dsl manifest variant cachegrind remarks perf mca ptxas ncu diff reply omp rules prompt llmtext config model slurm template)
fi
./scripts/install-deps.sh
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHONE_SANITIZE=ON -DHONE_FUZZ=ON -DHONE_FUZZ_COVERAGE=ON -DHONE_BENCH=OFF -DHONE_TESTS=OFF -DHONE_UNITY=ON >/dev/null
corpusOf() {
  case "$1" in
    dsl) echo fuzz/corpus ;;
    rules | prompt | llmtext | config | model | slurm | template) echo "fuzz/corpus-tools/$1" ;;
    *) echo "fuzz/corpus-kernel/$1" ;;
  esac
}
ninja -C build-fuzz $(printf 'hone_fuzz_%s ' "${targets[@]}")
mkdir -p build-fuzz/fuzz-logs
summary=()
status=0
for t in "${targets[@]}"; do
  corpus=$(corpusOf "$t")
  mkdir -p "build-fuzz/fuzz-new/$t"
  log=build-fuzz/fuzz-logs/$t.log
  echo "== fuzz $t for $minutes min ($jobs job(s)); log: $log"
  parallel=()
  if [ "$jobs" -gt 1 ]; then parallel=(-jobs="$jobs" -workers="$jobs"); fi
  if [ -f "fuzz/$t.dict" ]; then parallel+=(-dict="fuzz/$t.dict"); fi
  rc=0
  ./build-fuzz/fuzz/"hone_fuzz_$t" -max_total_time=$((minutes * 60)) "${parallel[@]}" \
    -max_len=8192 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="fuzz/$t-" \
    "build-fuzz/fuzz-new/$t" "$corpus" >"$log" 2>&1 || rc=$?
  if [ "$jobs" -gt 1 ]; then cat fuzz-[0-9]*.log >>"$log" 2>/dev/null || true; rm -f fuzz-[0-9]*.log; fi
  runs=$( (grep -o 'Done [0-9]* runs' "$log" || true) | awk '{s += $2} END {print s + 0}')
  found=$(find fuzz -maxdepth 1 \( -name "$t-crash-*" -o -name "$t-leak-*" -o -name "$t-timeout-*" -o -name "$t-oom-*" \) |
    wc -l)
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then status=1; fi
  summary+=("$(printf '| %-10s | %7s | %12s | %8s | %4s |' "$t" "$minutes" "$runs" "$found" "$rc")")
  echo "fuzz $t: exit $rc, $runs runs, $found finding(s); new inputs in build-fuzz/fuzz-new/$t; merge useful ones with:"
  echo "  ./build-fuzz/fuzz/hone_fuzz_$t -merge=1 $corpus build-fuzz/fuzz-new/$t"
done
echo
echo "| target     | minutes |         runs | findings | exit |"
echo "|------------|---------|--------------|----------|------|"
printf '%s\n' "${summary[@]}"
exit $status
