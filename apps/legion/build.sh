#!/usr/bin/env bash
# Builds one of hone's real Legion apps with a given mapping policy and copies the binary out: the
# build step of `hone tune --evaluator command` on a real app (docs/LEGION.md, "Tuning on real runs").
#
#   apps/legion/build.sh APP POLICY.map OUT [BUILD_DIR]
#
# APP is circuit, stencil or summa; OUT the binary to write. The apps are built once in BUILD_DIR
# (default $HONE_LEGION_APPS_BUILD, else <hone>/build-legion-apps); a new policy only recompiles the
# mapper (about half a minute here) and relinks. Legion comes from $HONE_LEGION_DIR or the cache of
# scripts/legion.sh; hone from $HONE (default: hone on PATH, else <hone>/build/src/cli/hone). Builds
# into one BUILD_DIR are serialized with a lock, so candidates can share it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [[ $# -lt 3 ]]; then
  echo "usage: apps/legion/build.sh APP POLICY.map OUT [BUILD_DIR]" >&2
  exit 2
fi
app=$1 policy=$2 out=$3
build=${4:-${HONE_LEGION_APPS_BUILD:-$root/build-legion-apps}}
case "$app" in circuit | stencil | summa) ;; *) echo "build.sh: unknown app '$app' (circuit, stencil, summa)" >&2; exit 2 ;; esac
[[ -f "$policy" ]] || { echo "build.sh: $policy: no such file" >&2; exit 2; }
legion=${HONE_LEGION_DIR:-$("$root/scripts/legion.sh" --prefix)}
[[ -d "$legion/include" ]] || { echo "build.sh: no Legion in $legion (run scripts/legion.sh LEGION_SRC or set HONE_LEGION_DIR)" >&2; exit 2; }
hone=${HONE:-$(command -v hone || echo "$root/build/src/cli/hone")}
if [[ "$hone" == */* ]]; then hone=$(cd "$(dirname "$hone")" && pwd)/$(basename "$hone"); fi
policy=$(cd "$(dirname "$policy")" && pwd)/$(basename "$policy")
var=$(echo "$app" | tr a-z A-Z)_MAPPER
mkdir -p "$build"
exec 9>"$build/.lock"
flock 9
generator=()
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S "$here" -B "$build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$legion" -DHONE_EXECUTABLE="$hone" \
  "-D$var=$policy" >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" --target "$app" >"$build/build-$app.log" 2>&1 || { tail -40 "$build/build-$app.log" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
cp "$build/$app" "$out.tmp.$$" && mv "$out.tmp.$$" "$out"
