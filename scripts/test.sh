#!/usr/bin/env bash
# README command 2: installs what is needed, builds hone twice (g++ with
# -Werror; clang++ with ASan+UBSan and the fuzzer), and runs every test in
# both builds, including the fuzz-corpus replay.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs=$(nproc)
echo "== build (g++, RelWithDebInfo)"
./scripts/build.sh default
echo "== tests"
ctest --test-dir build --output-on-failure -j "$jobs"
echo "== build (clang++, ASan+UBSan, libFuzzer)"
./scripts/build.sh asan
echo "== tests under sanitizers, with fuzz-corpus replay"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
