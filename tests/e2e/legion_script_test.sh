#!/usr/bin/env bash
# scripts/legion.sh on source trees as users bring them, without building Legion: a release tree
# (what GitHub's archive and `git archive` of the tag give, VERSION "legion-25.06.0") is accepted and
# goes on to configure; a tree of another release is refused with what its VERSION says; the cache
# folder follows HONE_CACHE. The scratch tree's CMakeLists stops the configure step at once.
# Usage: legion_script_test.sh SOURCE_DIR
set -uo pipefail
SRC=$1
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
export HONE_CACHE="$TMP/cache" HONE_LEGION_JOBS=1
unset HONE_LEGION_TAG HONE_LEGION_SRC

# A scratch repository tagged like the release, exported as a release archive is.
repo="$TMP/repo"
mkdir -p "$repo"
git -C "$repo" init -q
echo "legion-25.06.0" >"$repo/VERSION"
echo 'message(FATAL_ERROR "a scratch tree, not Legion")' >"$repo/CMakeLists.txt"
git -C "$repo" add -A
git -C "$repo" -c user.name=t -c user.email=t@t commit -qm release
git -C "$repo" tag legion-25.06.0
mkdir -p "$TMP/release"
git -C "$repo" archive --format=tar --prefix=legion-25.06.0/ legion-25.06.0 | tar -x -C "$TMP/release"

check prefix 0 bash "$SRC/scripts/legion.sh" --prefix
expect_out prefix "$TMP/cache/legion-25.06.0"
check release-tree 1 bash "$SRC/scripts/legion.sh" "$TMP/release/legion-25.06.0"
expect_err release-tree "configuring"
if grep -q "VERSION file says" "$TMP/err"; then fail=$((fail + 1)); echo "FAIL release-tree: its VERSION was refused"; else pass=$((pass + 1)); fi
# The git clone itself is read at the tag.
check clone 1 bash "$SRC/scripts/legion.sh" "$repo"
expect_err clone "reading legion-25.06.0 from the git repository"
# Another release is refused, saying what it found.
echo "24.03.0" >"$TMP/release/legion-25.06.0/VERSION"
check other-release 2 bash "$SRC/scripts/legion.sh" "$TMP/release/legion-25.06.0"
expect_err other-release "its VERSION file says '24.03.0', not '25.06.0' or 'legion-25.06.0'"

echo "legion.sh e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
