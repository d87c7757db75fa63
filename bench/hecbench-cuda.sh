#!/usr/bin/env bash
# HeCBench's CUDA programs as a new user meets them, without a GPU: each program
# folder is copied unmodified, `hone kernel init` writes its manifest from the
# program and its Makefile, and `hone kernel profile` builds it, reads ptxas and
# prints the static occupancy (for the architectures given). Prints, per
# program, the build and run lines init read and the occupancy lines; the steps
# that need a GPU (running it) are reported as skipped by the profile.
#   bench/hecbench-cuda.sh HECBENCH_DIR [--programs "adam-cuda jacobi-cuda matrix-rotate-cuda"] [--archs "sm_80 sm_90"]
# HECBENCH_DIR: a clone of https://github.com/zjin-lcf/HeCBench (never downloaded here).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bench/hecbench-cuda.sh HECBENCH_DIR [--programs \"a b\"] [--archs \"sm_80 sm_90\"]" >&2; exit 2; }
suite=$(cd "$1" && pwd)
shift
programs="adam-cuda jacobi-cuda matrix-rotate-cuda" archs="sm_80 sm_90"
while [ $# -gt 0 ]; do
  case "$1" in
    --programs) programs=$2; shift ;;
    --archs) archs=$2; shift ;;
    *) echo "bench/hecbench-cuda.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
command -v nvcc >/dev/null || { echo "skipped: nvcc not found"; exit 77; }
HONE=${HONE:-$PWD/build/src/cli/hone}
[ -x "$HONE" ] || ./scripts/build.sh default >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
list=$(printf '"%s", ' $archs); list="[${list%, }]"
status=0
for p in $programs; do
  src=$suite/src/$p
  [ -d "$src" ] || { echo "== $p: not in $suite/src"; status=1; continue; }
  cp -r "$src" "$work/$p"
  main=$(cd "$work/$p" && ls main.cu 2>/dev/null || ls *.cu | head -1)
  echo "== $p ($main)"
  if ! "$HONE" kernel init "$work/$p/$main" > "$work/$p.init" 2>&1; then
    cat "$work/$p.init"; status=1; continue
  fi
  grep -E '^(name|flags|command|seeds|ignore) =|^# NOTE' "$work/$p/hone.toml" | sed 's/^/   /'
  printf '\n[gpu]\narchs = %s\n' "$list" >> "$work/$p/hone.toml"
  if ! "$HONE" kernel profile "$work/$p" > "$work/$p.profile" 2>&1; then
    tail -5 "$work/$p.profile"; status=1; continue
  fi
  grep -E '^  skipped: ' "$work/$p.profile" | cut -c1-160 | sed 's/^/ /'
  sed -n '/^occupancy/,/^$/p' "$work/$p.profile" | sed 's/^/ /'
  grep -q '^occupancy' "$work/$p.profile" || { echo "   no occupancy: $(grep -m1 ptxas "$work/$p.profile")"; status=1; }
done
exit $status
