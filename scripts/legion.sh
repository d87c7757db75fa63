#!/usr/bin/env bash
# Builds the pinned Legion release hone's real-Legion apps and tests use, from a Legion source tree the
# user provides (a git clone; this script never downloads), into a cache, and prints the CMake flags
# that use it. docs/LEGION.md says how to get the source.
#
#   scripts/legion.sh [LEGION_SRC]     build (or reuse) the cache; LEGION_SRC defaults to $HONE_LEGION_SRC
#   scripts/legion.sh --print          print the flags of an existing cache, exit 1 when there is none
#   scripts/legion.sh --prefix         print the cache's install prefix (whether or not it is built)
#
# Environment: HONE_CACHE (default ~/.cache/hone), HONE_LEGION_TAG (default legion-25.06.0),
# HONE_LEGION_JOBS (parallel build jobs, default: all cores), HONE_LEGION_CUDA=0|1 (default: 1 when
# nvcc is on PATH and nvidia-smi lists a GPU).
#
# The build: Release, shared libraries, no network layer (one node), CPU only unless CUDA is chosen,
# no examples. A git clone is read at the pinned tag with `git archive`, so the user's checkout is
# neither switched nor modified; a plain source tree (an unpacked release) is used as it is, and its
# VERSION file must name the pinned release.
set -euo pipefail

tag=${HONE_LEGION_TAG:-legion-25.06.0}
cache_root=${HONE_CACHE:-$HOME/.cache/hone}
prefix="$cache_root/$tag"
stamp="$prefix/.hone-legion-complete"

print_flags() {
  echo "# Legion $tag is installed in $prefix; use it with:"
  echo "-DCMAKE_PREFIX_PATH=$prefix"
  echo "# or for hone's tests and apps: export HONE_LEGION_DIR=$prefix"
}

case "${1:-}" in
  --prefix) echo "$prefix"; exit 0 ;;
  --print)
    if [[ -f "$stamp" ]]; then print_flags; exit 0; fi
    echo "legion.sh: no Legion build in $prefix (run scripts/legion.sh LEGION_SRC)" >&2
    exit 1 ;;
  -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac

if [[ -f "$stamp" ]]; then
  echo "legion.sh: reusing the build in $prefix (delete that folder to rebuild)" >&2
  print_flags
  exit 0
fi

src=${1:-${HONE_LEGION_SRC:-}}
if [[ -z "$src" ]]; then
  cat >&2 <<EOF
legion.sh: no Legion source given.
  Clone it once (on a machine with internet access, then copy the folder here if needed):
    git clone https://github.com/StanfordLegion/legion.git ~/src/legion
  then: scripts/legion.sh ~/src/legion      (or set HONE_LEGION_SRC)
EOF
  exit 2
fi
if [[ ! -d "$src" ]]; then
  echo "legion.sh: $src: no such folder" >&2
  exit 2
fi

work="$cache_root/.work-$tag"
rm -rf "$work"
mkdir -p "$work/src"
trap 'echo "legion.sh: failed; the partial build is in $work" >&2' ERR

# The source at the pinned tag: from git when the folder is a clone (bare or not), else as it is.
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  if ! git -C "$src" rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
    echo "legion.sh: $src has no tag $tag (git -C $src fetch --tags, or set HONE_LEGION_TAG)" >&2
    exit 2
  fi
  echo "legion.sh: reading $tag from the git repository $src" >&2
  git -C "$src" archive --format=tar "$tag" | tar -x -C "$work/src"
  echo "${tag#legion-}" > "$work/src/VERSION"
else
  want=${tag#legion-}
  have=$(tr -d ' \t\r\n' <"$src/VERSION" 2>/dev/null || echo unknown)
  # A release archive (GitHub's, or `git archive` of the tag) says "legion-25.06.0"; hone's own
  # copies say "25.06.0".
  if [[ "${have#legion-}" != "$want" ]]; then
    echo "legion.sh: $src is not a git clone and its VERSION file says '$have', not '$want' or 'legion-$want'" >&2
    exit 2
  fi
  cp -a "$src/." "$work/src/"
fi

cuda=${HONE_LEGION_CUDA:-}
if [[ -z "$cuda" ]]; then
  cuda=0
  if command -v nvcc >/dev/null && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    cuda=1
  fi
fi
cuda_flags=(-DLegion_USE_CUDA=OFF)
if [[ "$cuda" == 1 ]]; then
  cuda_flags=(-DLegion_USE_CUDA=ON -DLegion_CUDA_ARCH=native)
fi
jobs=${HONE_LEGION_JOBS:-$(nproc)}
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi

echo "legion.sh: configuring (CUDA: $cuda) in $work/build" >&2
cmake -S "$work/src" -B "$work/build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_SHARED_LIBS=ON \
  -DLegion_NETWORKS= -DLegion_USE_Python=OFF -DLegion_BUILD_EXAMPLES=OFF -DLegion_BUILD_TUTORIAL=OFF \
  -DLegion_BUILD_APPS=OFF -DLegion_BUILD_TESTS=OFF -DLegion_BUILD_BINDINGS=OFF \
  -DLegion_USE_OpenMP=OFF -DLegion_USE_HWLOC=OFF "${cuda_flags[@]}" >"$work/configure.log" 2>&1 \
  || { echo "legion.sh: configure failed; see $work/configure.log" >&2; tail -20 "$work/configure.log" >&2; exit 1; }
echo "legion.sh: building with $jobs jobs (about 30 CPU-minutes); log: $work/build.log" >&2
cmake --build "$work/build" -j "$jobs" >"$work/build.log" 2>&1 \
  || { echo "legion.sh: build failed; see $work/build.log" >&2; tail -30 "$work/build.log" >&2; exit 1; }
rm -rf "$prefix"
cmake --install "$work/build" >"$work/install.log" 2>&1
# Legion's profiler (a Python script in its tools folder) reads the logs of -lg:prof; keep it.
if [[ -d "$work/src/tools" ]]; then
  mkdir -p "$prefix/share/hone-legion-tools"
  cp -a "$work/src/tools/." "$prefix/share/hone-legion-tools/"
fi
printf 'tag=%s\ncuda=%s\nsource=%s\n' "$tag" "$cuda" "$src" > "$stamp"
rm -rf "$work"
trap - ERR
print_flags
