#!/usr/bin/env bash
# Fuzzes hone's parsers for N minutes each (default 5) with libFuzzer under
# ASan+UBSan. Targets: dsl (the mapper DSL front end); the kernel domain's
# manifest, variant, cachegrind, remarks, perf, mca, ptxas, ncu, and the code
# agent's diff and reply; rules (AutoGuide), prompt (templates), llmtext (an
# LLM's reply text) and config (store rows); default: all.
# New interesting inputs go to build-asan/fuzz-new/TARGET (merge the useful
# ones into the target's corpus); a crash leaves fuzz/crash-* to turn into a
# regression test.
#   scripts/fuzz.sh [minutes] [jobs] [target ...]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-5}
jobs=${2:-1}
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(dsl manifest variant cachegrind remarks perf mca ptxas ncu diff reply rules prompt llmtext config)
fi
./scripts/install-deps.sh
cmake -S . -B build-asan -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DHONE_SANITIZE=ON -DHONE_FUZZ=ON -DHONE_BENCH=OFF >/dev/null
for t in "${targets[@]}"; do
  corpus=fuzz/corpus-kernel/$t
  [ "$t" = dsl ] && corpus=fuzz/corpus
  case "$t" in rules | prompt | llmtext | config) corpus=fuzz/corpus-tools/$t ;; esac
  ninja -C build-asan "hone_fuzz_$t"
  mkdir -p "build-asan/fuzz-new/$t"
  echo "== fuzz $t for $minutes min"
  ./build-asan/fuzz/"hone_fuzz_$t" -max_total_time=$((minutes * 60)) -jobs="$jobs" -workers="$jobs" \
    -max_len=8192 -timeout=10 -artifact_prefix=fuzz/ "build-asan/fuzz-new/$t" "$corpus"
  echo "fuzz $t: new inputs in build-asan/fuzz-new/$t; merge useful ones with:"
  echo "  ./build-asan/fuzz/hone_fuzz_$t -merge=1 $corpus build-asan/fuzz-new/$t"
done
