#!/usr/bin/env bash
# Builds the benchmarks (Release) and prints three tables: front-end speeds,
# simulator speeds (simulations per second per app, and growth with problem
# size and node count), and the engine's own cost per evaluation.
#   bench/run.sh            print the tables
#   bench/run.sh --write    also rewrite them in docs/RESULTS.md
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh >/dev/null
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DHONE_TESTS=OFF -DHONE_BENCH=ON >/dev/null
ninja -C build-bench hone_bench_dsl hone_bench_sim hone_bench_engine >/dev/null

# bench BINARY WITH_RATE: a Markdown table of medians over 5 repetitions.
bench() {
  "$1" --benchmark_format=csv --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>/dev/null |
    awk -F, -v rate="$2" '
    BEGIN {
      if (rate) { print "| benchmark | median wall time (us) | simulations per second | stddev of wall time (us) | tasks |"; print "|---|---:|---:|---:|---:|" }
      else { print "| benchmark | median wall time (us) | median CPU time (us) | stddev of wall time (us) |"; print "|---|---:|---:|---:|" }
    }
    /_median"?,/ { gsub(/"/, "", $1); name=$1; sub(/_median$/, "", name); med[name]=$3; cpu[name]=$4; label[name]=$8; gsub(/"| tasks/, "", label[name]); order[++n]=name }
    /_stddev"?,/ { gsub(/"/, "", $1); name=$1; sub(/_stddev$/, "", name); sd[name]=$3 }
    END {
      for (i = 1; i <= n; i++) {
        k = order[i]
        if (rate) printf "| %s | %.1f | %.0f | %.1f | %s |\n", k, med[k], 1e6 / med[k], sd[k], label[k]
        else printf "| %s | %.1f | %.1f | %.1f |\n", k, med[k], cpu[k], sd[k]
      }
    }'
}

dsl=$(bench ./build-bench/bench/hone_bench_dsl 0)
sim=$(bench ./build-bench/bench/hone_bench_sim 1)
engine=$("./build-bench/bench/hone_bench_engine" --benchmark_format=csv --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true 2>/dev/null | awk -F, '
  BEGIN { print "| benchmark (1000 evaluations, instant evaluator) | median engine time per evaluation (us) |"; print "|---|---:|" }
  /_median"?,/ { gsub(/"/, "", $1); name=$1; sub(/\/.*$/, "", name); printf "| %s | %.1f |\n", name, $3 / 1000 }')
stamp="$(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d)"
printf '%s\n\n%s\n\n%s\n\nmachine: %s\n' "$dsl" "$sim" "$engine" "$stamp"

# replace MARKER TABLE: rewrites the block between <!-- bench:MARKER:begin/end --> in docs/RESULTS.md.
replace() {
  local tmp
  tmp=$(mktemp)
  awk -v table="$2" -v stamp="$stamp" -v begin="<!-- bench:$1:begin -->" -v end="<!-- bench:$1:end -->" '
    $0 == begin { print; print table; print ""; print "Measured on " stamp " by `bench/run.sh --write`."; skip=1; next }
    $0 == end { skip=0 }
    !skip { print }' docs/RESULTS.md > "$tmp"
  mv "$tmp" docs/RESULTS.md
}
if [ "${1:-}" = "--write" ]; then
  replace dsl "$dsl"
  replace sim "$sim"
  replace engine "$engine"
  echo "wrote docs/RESULTS.md"
fi
