#!/usr/bin/env bash
# Configures and builds one flavour of hone, as a one-shot build: sources compiled in batches (unity)
# over precompiled third-party headers (docs/DEVELOPING.md has the numbers). For edit-compile work,
# configure your own folder without -DHONE_UNITY=ON.
#   scripts/build.sh            build/       g++, RelWithDebInfo, -Werror, tests (no benchmarks: bench/run.sh)
#   scripts/build.sh asan       build-asan/  clang++, Debug (-O0), ASan+UBSan, libFuzzer target
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-default}
case "$flavour" in
  default)
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHONE_BENCH=OFF -DHONE_UNITY=ON >/dev/null
    ninja -C build ;;
  asan)
    # -O0, not -O1: measured here, -O1 ran the tests 90 s faster but took 180 s longer to build
    # (docs/DEVELOPING.md).
    cmake -S . -B build-asan -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
      -DHONE_SANITIZE=ON -DHONE_FUZZ=ON -DHONE_BENCH=OFF -DHONE_UNITY=ON >/dev/null
    ninja -C build-asan ;;
  *) echo "usage: scripts/build.sh [default|asan]" >&2; exit 2 ;;
esac
