#!/usr/bin/env bash
# Installs the Debian packages hone needs to build, test, fuzz and benchmark.
# Idempotent: packages already present are not touched and apt is not even
# consulted when everything is installed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3
  python3-jsonschema                  # tests: the corpus export against its schema
  clang libclang-rt-14-dev            # sanitizer + libFuzzer build
  libcli11-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev
  libsqlite3-dev libcurl4-openssl-dev libdtl-dev libcpp-httplib-dev libre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  valgrind linux-perf llvm            # kernel profiles: cachegrind, perf stat, llvm-mca
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
