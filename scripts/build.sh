#!/usr/bin/env bash
# Configures and builds one flavour of hone.
#   scripts/build.sh            build/       g++, RelWithDebInfo, -Werror
#   scripts/build.sh asan       build-asan/  clang++, ASan+UBSan, libFuzzer target
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-default}
case "$flavour" in
  default)
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHONE_BENCH=ON >/dev/null
    ninja -C build ;;
  asan)
    cmake -S . -B build-asan -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
      -DHONE_SANITIZE=ON -DHONE_FUZZ=ON -DHONE_BENCH=OFF >/dev/null
    ninja -C build-asan ;;
  *) echo "usage: scripts/build.sh [default|asan]" >&2; exit 2 ;;
esac
