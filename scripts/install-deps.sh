#!/usr/bin/env bash
# Installs the Debian packages hone needs to build, test, fuzz and benchmark.
# Idempotent: packages already present are not touched and apt is not even
# consulted when everything is installed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3
  python3-jsonschema                  # tests: the corpus export against its schema
  clang libclang-rt-14-dev            # sanitizer + libFuzzer build
  libclang-dev libomp-dev             # source model (libclang); the race check (clang, TSan + Archer)
  libcli11-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev
  libsqlite3-dev libcurl4-openssl-dev libdtl-dev libcpp-httplib-dev libre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  zlib1g-dev                          # Legion Prof logs of real runs (gzip)
  valgrind linux-perf llvm            # kernel profiles: cachegrind, perf stat, llvm-mca
  libopenblas-dev                     # bench/gemm-peak.py: OpenBLAS's dgemm beside hone's best gemm
  librsvg2-bin                        # hone plot -o FILE.png (rsvg-convert)
  chromium                            # browser tests of the report and dashboard (tests/browser)
  slurm-wlm munge                     # --executor slurm; its tests start a single-node cluster (tests/slurm)
)

# Node.js and npm drive the browser tests (Playwright); a machine may have them from elsewhere
# (nodesource), whose nodejs package conflicts with Debian's npm: ask apt only when npm is absent.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The browser tests' npm packages (playwright-core only: it drives Debian's chromium, and downloads
# no browser), at the versions package-lock.json pins.
browser=$(cd "$(dirname "$0")/.." && pwd)/tests/browser
if [ ! -f "$browser/node_modules/playwright-core/package.json" ] ||
   [ "$browser/package-lock.json" -nt "$browser/node_modules/.package-lock.json" ]; then
  echo "install-deps: npm ci in tests/browser"
  (cd "$browser" && npm ci --no-audit --no-fund --loglevel=error)
fi
