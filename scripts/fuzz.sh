#!/usr/bin/env bash
# Fuzzes the DSL front end for N minutes (default 5) with libFuzzer under
# ASan+UBSan. New interesting inputs go to fuzz/corpus/ (commit the useful
# ones); a crash leaves fuzz/crash-* to turn into a regression test.
#   scripts/fuzz.sh [minutes] [jobs]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-5}
jobs=${2:-1}
./scripts/install-deps.sh
cmake -S . -B build-asan -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DHONE_SANITIZE=ON -DHONE_FUZZ=ON -DHONE_BENCH=OFF >/dev/null
ninja -C build-asan hone_fuzz_dsl
mkdir -p build-asan/fuzz-new
./build-asan/fuzz/hone_fuzz_dsl -max_total_time=$((minutes * 60)) -jobs="$jobs" -workers="$jobs" \
  -max_len=4096 -artifact_prefix=fuzz/ build-asan/fuzz-new fuzz/corpus
echo "fuzz: new inputs in build-asan/fuzz-new; merge useful ones with:"
echo "  ./build-asan/fuzz/hone_fuzz_dsl -merge=1 fuzz/corpus build-asan/fuzz-new"
