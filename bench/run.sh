#!/usr/bin/env bash
# Builds the benchmarks (Release) and prints a table of front-end speeds.
#   bench/run.sh            print the table
#   bench/run.sh --write    also rewrite the table in docs/RESULTS.md
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh >/dev/null
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DHONE_TESTS=OFF -DHONE_BENCH=ON >/dev/null
ninja -C build-bench hone_bench_dsl >/dev/null
csv=$(./build-bench/bench/hone_bench_dsl --benchmark_format=csv --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true 2>/dev/null)
table=$(printf '%s\n' "$csv" | awk -F, '
  BEGIN { print "| benchmark | median wall time (us) | median CPU time (us) | stddev of wall time (us) |"; print "|---|---:|---:|---:|" }
  /_median"?,/ { gsub(/"/, "", $1); name=$1; sub(/_median$/, "", name); med[name]=$3; cpu[name]=$4; order[++n]=name }
  /_stddev"?,/ { gsub(/"/, "", $1); name=$1; sub(/_stddev$/, "", name); sd[name]=$3 }
  END { for (i = 1; i <= n; i++) printf "| %s | %.1f | %.1f | %.1f |\n", order[i], med[order[i]], cpu[order[i]], sd[order[i]] }')
echo "$table"
echo
echo "machine: $(nproc) cores, $(uname -m); $(date -u +%Y-%m-%d)"
if [ "${1:-}" = "--write" ]; then
  tmp=$(mktemp)
  awk -v table="$table" -v stamp="$(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d)" '
    /<!-- bench:dsl:begin -->/ { print; print table; print ""; print "Measured on " stamp " by `bench/run.sh --write`."; skip=1; next }
    /<!-- bench:dsl:end -->/ { skip=0 }
    !skip { print }' docs/RESULTS.md > "$tmp"
  mv "$tmp" docs/RESULTS.md
  echo "wrote docs/RESULTS.md"
fi
